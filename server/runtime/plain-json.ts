import type { JsonObject, JsonValue } from "@bufbuild/protobuf";

interface DictConvertible {
  toDict(): { type: string; data: unknown };
}

function isDictConvertible(value: object): value is DictConvertible {
  return typeof (value as Partial<DictConvertible>).toDict === "function";
}

/**
 * Graph state as the Agent Server's JSON: LangChain messages flattened to their fields plus `type`
 * (`{"content": "hi", "type": "human", ...}`, what `toDict()` holds), dates as ISO strings,
 * `undefined` members dropped (and `null` in arrays), other objects by their `toJSON()` or own
 * enumerable fields. Cycles are not expected in graph state; a too-deep value fails like JSON.stringify.
 */
export function toPlainJson(value: unknown): JsonValue {
  if (value === null || value === undefined) return null;
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      return Number.isFinite(value) ? value : null;
    case "bigint":
      return value.toString();
    case "object":
      break;
    default:
      return null;
  }
  if (Array.isArray(value)) return value.map(toPlainJson);
  if (value instanceof Date) return value.toISOString();
  if (isDictConvertible(value)) {
    const dict = value.toDict();
    const data = toPlainJson(dict.data);
    return { ...(isObject(data) ? data : {}), type: dict.type };
  }
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === "function") return toPlainJson(toJSON.call(value));
  const out: JsonObject = {};
  for (const [key, member] of Object.entries(value)) {
    if (member !== undefined) out[key] = toPlainJson(member);
  }
  return out;
}

/** True for a JSON object (not an array, not null). */
export function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
