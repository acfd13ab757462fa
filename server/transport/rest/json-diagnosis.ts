import {
  type DescField,
  type DescMessage,
  fromJson,
  type JsonObject,
  type JsonReadOptions,
  type JsonValue,
} from "@bufbuild/protobuf";
import { MAX_JSON_DEPTH } from "../input/input-limits.js";
import { describeElement, describeField, describeMessage } from "./field-value.js";

/*
 * Explains why `fromJson` rejected a JSON value, in words a REST client can act on: the dotted
 * proto (snake_case) path of the offending field, what it expects and what it got. protobuf-es's
 * own messages name internal type names and camelCase paths, so they are not shown.
 *
 * Only runs after `fromJson` failed, so it may be slow: it finds the culprit by decoding one
 * member at a time, which keeps the verdict identical to protobuf-es's own rules. It recurses one
 * level per message and gives up past MAX_JSON_DEPTH levels (the input screen refuses deeper
 * documents before), and it never throws: when it cannot say, it says nothing and the caller's
 * generic message stands.
 */

/** One problem found in a JSON value. */
export interface JsonProblem {
  /** Dotted proto path of the field, e.g. `owner.email` or `tags[2]`; empty for the root. */
  readonly path: string;
  /** The complete sentence, without the path prefix the caller adds. */
  readonly message: string;
}

/** Longest value echoed back in a message; longer ones are cut so errors stay one short line. */
const maxEchoedChars = 60;

/**
 * Finds the first problem in `json` as a value of `schema`, or `undefined` when none can be
 * pinned to a member (the caller then reports the error generically).
 */
export function diagnoseMessage(
  schema: DescMessage,
  json: JsonValue,
  options: Partial<JsonReadOptions>,
): JsonProblem | undefined {
  try {
    return diagnose(schema, json, options, "", 1);
  } catch {
    // Too deep to look into, or a failure while looking: the caller's generic message is the answer.
    return undefined;
  }
}

/** Thrown past MAX_JSON_DEPTH levels: the culprit cannot be named, so nothing is. */
class TooDeepToDiagnose extends Error {}

function diagnose(
  schema: DescMessage,
  json: JsonValue,
  options: Partial<JsonReadOptions>,
  path: string,
  depth: number,
): JsonProblem | undefined {
  if (depth > MAX_JSON_DEPTH) throw new TooDeepToDiagnose();
  if (schema.typeName.startsWith("google.protobuf.")) {
    return decodes(schema, json, options) ? undefined : mismatch(path, describeMessage(schema), json);
  }
  if (!isJsonObject(json)) return mismatch(path, "a JSON object", json);
  for (const [key, value] of Object.entries(json)) {
    const field = findField(schema, key);
    const fieldPath = join(path, field?.name ?? key);
    if (!field) {
      const known = schema.fields.map((f) => f.name).join(", ");
      return { path: fieldPath, message: `is not a known field; the known fields here are: ${known}` };
    }
    if (decodes(schema, { [key]: value }, options)) continue;
    return diagnoseField(schema, field, key, value, options, fieldPath, depth);
  }
  return undefined;
}

function diagnoseField(
  parent: DescMessage,
  field: DescField,
  key: string,
  value: JsonValue,
  options: Partial<JsonReadOptions>,
  path: string,
  depth: number,
): JsonProblem {
  switch (field.fieldKind) {
    case "message":
      return (
        diagnose(field.message, value, options, path, depth + 1) ??
        mismatch(path, describeField(field), value)
      );
    case "list": {
      if (!Array.isArray(value)) return mismatch(path, describeField(field), value);
      for (let i = 0; i < value.length; i++) {
        const item = value[i]!;
        if (decodes(parent, { [key]: [item] }, options)) continue;
        return diagnoseElement(field, item, options, `${path}[${i}]`, depth + 2);
      }
      break;
    }
    case "map": {
      if (!isJsonObject(value)) return mismatch(path, describeField(field), value);
      for (const [mapKey, item] of Object.entries(value)) {
        if (decodes(parent, { [key]: { [mapKey]: item } }, options)) continue;
        return diagnoseElement(field, item, options, `${path}.${mapKey}`, depth + 2);
      }
      break;
    }
  }
  return mismatch(path, describeField(field), value);
}

function diagnoseElement(
  field: DescField,
  item: JsonValue,
  options: Partial<JsonReadOptions>,
  path: string,
  depth: number,
): JsonProblem {
  const nested = field.message ? diagnose(field.message, item, options, path, depth) : undefined;
  return nested ?? mismatch(path, describeElement(field), item);
}

function decodes(schema: DescMessage, json: JsonValue, options: Partial<JsonReadOptions>): boolean {
  try {
    fromJson(schema, json, options);
    return true;
  } catch {
    return false;
  }
}

function mismatch(path: string, expected: string, got: JsonValue): JsonProblem {
  return { path, message: `must be ${expected}, got ${echo(got)}` };
}

/**
 * Renders a received value for an error message, shortened when long. Never throws: a value that
 * cannot be rendered (nested beyond JSON.stringify's stack) is named by its kind.
 */
export function echo(value: JsonValue): string {
  let text: string;
  try {
    text = JSON.stringify(value);
  } catch {
    return Array.isArray(value) ? "an array" : "an object";
  }
  return text.length > maxEchoedChars ? `${text.slice(0, maxEchoedChars)}…` : text;
}

function findField(schema: DescMessage, key: string): DescField | undefined {
  return schema.fields.find((f) => f.name === key || f.jsonName === key);
}

function join(path: string, name: string): string {
  return path === "" ? name : `${path}.${name}`;
}

/** True for a JSON object (not an array, not null). */
export function isJsonObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
