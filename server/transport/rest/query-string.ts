import { Code, ConnectError } from "@connectrpc/connect";
import { textProblem } from "../input/input-problem.js";
import { malformedRequestError } from "./http-status.js";

/**
 * Parses a query string (without `?`) strictly, as the REST routes and adapters read it: `+` is a
 * space, and every `%` must start an escape of valid UTF-8 (400 otherwise; `URLSearchParams` would
 * keep `%ZZ` as text and turn invalid UTF-8 into U+FFFD, silently changing the value). A name or
 * value holding NUL answers 422, since no text column can store it; `%ED%A0%80`-style lone
 * surrogates are invalid UTF-8, hence 400.
 */
export function parseQuery(query: string): [string, string][] {
  const pairs: [string, string][] = [];
  if (query === "") return pairs;
  for (const part of query.split("&")) {
    if (part === "") continue;
    const eq = part.indexOf("=");
    const rawName = eq < 0 ? part : part.slice(0, eq);
    const rawValue = eq < 0 ? "" : part.slice(eq + 1);
    const name = decodeComponent(rawName, rawName);
    const value = decodeComponent(rawValue, rawName);
    const problem = textProblem(name) ?? textProblem(value);
    if (problem)
      throw new ConnectError(`query parameter ${JSON.stringify(name)} ${problem}`, Code.InvalidArgument);
    pairs.push([name, value]);
  }
  return pairs;
}

/** Longest raw parameter name quoted in an error. */
const maxQuotedChars = 40;

function decodeComponent(raw: string, rawName: string): string {
  const spaced = raw.includes("+") ? raw.replaceAll("+", " ") : raw;
  if (!spaced.includes("%")) return spaced;
  try {
    return decodeURIComponent(spaced);
  } catch {
    const shown = rawName.length > maxQuotedChars ? `${rawName.slice(0, maxQuotedChars)}…` : rawName;
    throw malformedRequestError(
      `query parameter ${JSON.stringify(shown)} is not validly percent-encoded: every % must start an escape of UTF-8 such as %20`,
    );
  }
}
