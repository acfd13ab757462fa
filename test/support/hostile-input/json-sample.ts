import {
  type DescField,
  type DescMessage,
  type JsonObject,
  type JsonValue,
  ScalarType,
} from "@bufbuild/protobuf";

/**
 * Plausible JSON for a proto message (proto field names, as REST takes them), and the positions in
 * a JSON document where a fuzzer puts hostile values. Test code: recursion is bounded by
 * {@link MAX_SAMPLE_DEPTH}.
 */

/** A member name or an array index from the root down to a value. */
export type JsonPath = readonly (string | number)[];

/** Where the values and member names of a document are. */
export interface JsonPositions {
  /** String values. */
  readonly strings: JsonPath[];
  /** Number values. */
  readonly numbers: JsonPath[];
  /** String values that hold an RFC 3339 timestamp. */
  readonly timestamps: JsonPath[];
  /** Object members (the path ends in the member's name). */
  readonly keys: JsonPath[];
}

/** Messages nest this deep at most in a sample; deeper message fields are sent as `{}`. */
const MAX_SAMPLE_DEPTH = 4;

/** A fixed UUID, so samples are the same in every run. */
export const SAMPLE_UUID = "0190f3a2-7c1e-7a55-9f1e-3c7e2a1b4d5e";

/** A timestamp every API accepts. */
export const SAMPLE_TIMESTAMP = "2024-05-06T07:08:09Z";

const timestampPattern = /^[-+]?\d{4,6}-\d\d-\d\dT/;

/** A JSON object for `message` with one plausible value in every field (one field per oneof). */
export function sampleMessage(message: DescMessage, depth = 0): JsonObject {
  const json: JsonObject = {};
  const oneofsSeen = new Set<string>();
  for (const field of message.fields) {
    if (field.oneof) {
      if (oneofsSeen.has(field.oneof.name)) continue;
      oneofsSeen.add(field.oneof.name);
    }
    json[field.name] = sampleField(field, depth);
  }
  return json;
}

/** A plausible JSON value of a whole field (an array for a repeated field, an object for a map). */
export function sampleField(field: DescField, depth = 0): JsonValue {
  switch (field.fieldKind) {
    case "list":
      return [sampleElement(field, depth)];
    case "map":
      return { [sampleMapKey(field.mapKey)]: sampleElement(field, depth) };
    default:
      return sampleElement(field, depth);
  }
}

function sampleElement(field: DescField, depth: number): JsonValue {
  if (field.enum) return field.enum.values[1]?.name ?? field.enum.values[0]!.name;
  if (field.message) return sampleMessageValue(field.message, depth + 1);
  return sampleScalar(field.scalar!, field.name);
}

function sampleMessageValue(message: DescMessage, depth: number): JsonValue {
  switch (message.typeName) {
    case "google.protobuf.Timestamp":
      return SAMPLE_TIMESTAMP;
    case "google.protobuf.Duration":
      return "1.5s";
    case "google.protobuf.FieldMask":
      return "name";
    case "google.protobuf.Struct":
      return { note: "x", nested: { list: [1, "y", true, null] } };
    case "google.protobuf.Value":
      return { note: "x" };
    case "google.protobuf.ListValue":
      return ["x", 1];
    case "google.protobuf.Any":
    case "google.protobuf.Empty":
      return {};
  }
  if (message.typeName.startsWith("google.protobuf.") && message.fields.length === 1) {
    return sampleScalar(message.fields[0]!.scalar!, "value");
  }
  return depth > MAX_SAMPLE_DEPTH ? {} : sampleMessage(message, depth);
}

function sampleScalar(scalar: ScalarType, name: string): JsonValue {
  switch (scalar) {
    case ScalarType.STRING:
      return sampleString(name);
    case ScalarType.BYTES:
      return "eHl6";
    case ScalarType.BOOL:
      return true;
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return "3";
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return 1.5;
    default:
      return 2;
  }
}

/** A string that passes the obvious validation of a field with this name. */
function sampleString(name: string): string {
  if (name === "id" || name.endsWith("_id")) return SAMPLE_UUID;
  if (name.endsWith("email")) return "fuzz@example.com";
  if (name.endsWith("filter")) return 'eq(name, "x")';
  if (name.endsWith("time") || name.endsWith("_at")) return SAMPLE_TIMESTAMP;
  return "x";
}

function sampleMapKey(scalar: ScalarType): string {
  if (scalar === ScalarType.BOOL) return "true";
  if (scalar === ScalarType.STRING) return "key";
  return "1";
}

/** Every position of `value` a fuzzer can change. */
export function positionsOf(value: JsonValue): JsonPositions {
  const positions: JsonPositions = { strings: [], numbers: [], timestamps: [], keys: [] };
  const visit = (v: JsonValue, path: JsonPath): void => {
    if (typeof v === "string") {
      positions.strings.push(path);
      if (timestampPattern.test(v)) positions.timestamps.push(path);
    } else if (typeof v === "number") {
      positions.numbers.push(path);
    } else if (Array.isArray(v)) {
      for (const [i, item] of v.entries()) visit(item, [...path, i]);
    } else if (v !== null && typeof v === "object") {
      for (const [key, item] of Object.entries(v)) {
        positions.keys.push([...path, key]);
        visit(item, [...path, key]);
      }
    }
  };
  visit(value, []);
  return positions;
}

/** A copy of `value` with the value at `path` replaced. */
export function withValue(value: JsonValue, path: JsonPath, replacement: JsonValue): JsonValue {
  if (path.length === 0) return replacement;
  const copy = structuredClone(value) as JsonObject | JsonValue[];
  let parent: JsonValue = copy;
  for (const step of path.slice(0, -1)) parent = (parent as Record<string | number, JsonValue>)[step]!;
  (parent as Record<string | number, JsonValue>)[path[path.length - 1]!] = replacement;
  return copy;
}

/** A copy of `value` with the member at `path` renamed to `name`, keeping its value. */
export function withKey(value: JsonValue, path: JsonPath, name: string): JsonValue {
  const copy = structuredClone(value) as JsonObject;
  let parent: JsonValue = copy;
  for (const step of path.slice(0, -1)) parent = (parent as Record<string | number, JsonValue>)[step]!;
  const object = parent as JsonObject;
  const old = String(path[path.length - 1]);
  const member = object[old]!;
  delete object[old];
  object[name] = member;
  return copy;
}
