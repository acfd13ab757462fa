import { invalid } from "./request-validation.js";

/**
 * A list-valued query parameter as the LangGraph SDKs send lists: the parameter repeated
 * (`?select=a&select=b`), one JSON array of strings (`?select=["a","b"]`, the JS SDK's form), or
 * both; with `commas`, an entry may also hold several names separated by commas. Every entry a
 * string; a JSON array that does not parse, or holds anything but strings, is refused with a 422
 * naming the parameter.
 */
export function queryList(
  values: readonly string[],
  field: string,
  options: { commas?: boolean } = {},
): string[] {
  const out: string[] = [];
  for (const raw of values) {
    if (!raw.trim().startsWith("[")) {
      out.push(...(options.commas ? raw.split(",").map((name) => name.trim()) : [raw]));
      continue;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      throw invalid(`${field} ${JSON.stringify(raw)} is not a JSON array of strings`);
    }
    if (!Array.isArray(parsed) || !parsed.every((entry) => typeof entry === "string"))
      throw invalid(`${field} must be a list of strings`);
    out.push(...parsed);
  }
  return out;
}
