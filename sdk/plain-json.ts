/**
 * Plain JSON where the protos hold `google.protobuf.Value` or `ListValue` (fields kept as JSON for
 * REST compatibility): the SDK's callers pass and receive plain objects, strings, numbers and
 * arrays there, never `Value` messages. Which messages carry such fields is generated from the
 * descriptors (gen/sdk/services.ts); which field to convert is read from each message's
 * descriptor, so a new field or message needs no change here.
 *
 * Values pass as `JSON.stringify` would pass them: `toJSON()` is honoured (a `Date` becomes its ISO
 * string), object members that are `undefined`, functions or symbols are left out, and such array
 * elements become null. What JSON cannot hold (a bigint, NaN, Infinity, a cycle) is refused with an
 * `INVALID_ARGUMENT` ConnectError naming the field, before anything is sent.
 */
import {
  type DescField,
  type DescMessage,
  fromJson,
  type JsonObject,
  type JsonValue,
  type Message,
  type MessageInitShape,
  toJson,
} from "@bufbuild/protobuf";
import type { GenMessage } from "@bufbuild/protobuf/codegenv2";
import { type ListValue, ListValueSchema, type Value, ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  type JsonMessageTypeName,
  jsonMessageTypeNames,
  type StructMessageTypeName,
  structMessageTypeNames,
} from "../gen/sdk/services.js";
import type { LangGraphFieldTypes } from "./langgraph-fields.js";

/** Keys of a generated message that are not fields. */
type MessageMeta = "$typeName" | "$unknown";

/** The type of field `K` of message `T` as the LangGraph API fixes it, or `Default`. */
type FieldType<T extends Message, K, Default> = T["$typeName"] extends `agentplane.agents.${string}`
  ? K extends keyof LangGraphFieldTypes
    ? NonNullable<T[K & keyof T]> extends Value
      ? LangGraphFieldTypes[K] | Extract<T[K & keyof T], undefined>
      : Default
    : Default
  : Default;

/**
 * A message as the SDK returns it: the generated type, except for messages that hold JSON, whose
 * Value fields are {@link JsonValue}, ListValue fields `JsonValue[]`, and nested messages likewise
 * (such a message is a plain object: it has no `$typeName`).
 */
export type Plain<T> = T extends Message
  ? T["$typeName"] extends JsonMessageTypeName
    ? { [K in keyof T as K extends MessageMeta ? never : K]: FieldType<T, K, Converted<T[K], "answer">> }
    : T
  : T;

/**
 * A request as the SDK takes it: what protobuf-es's `create` takes, except that where the message
 * holds JSON (a Value, ListValue or Struct field, or a message that does) every field is optional
 * and those fields take {@link JsonInput}.
 */
export type PlainInit<T> = T extends Message
  ? T["$typeName"] extends JsonMessageTypeName | StructMessageTypeName
    ? { [K in keyof T as K extends MessageMeta ? never : K]?: FieldType<T, K, Converted<T[K], "request">> }
    : MessageInitShape<GenMessage<T>>
  : T;

/** What the JSON of a field is in each direction: answers hold JSON, requests take JSON input. */
interface JsonOf {
  answer: { value: JsonValue; list: JsonValue[]; object: JsonObject };
  request: { value: JsonInput; list: readonly JsonInput[]; object: JsonInputObject };
}

/** The type of a field of generated type `V` in direction `D`, nested messages and lists included. */
type Converted<V, D extends keyof JsonOf> = V extends Value
  ? JsonOf[D]["value"]
  : V extends ListValue
    ? JsonOf[D]["list"]
    : V extends Message
      ? D extends "answer"
        ? Plain<V>
        : PlainInit<V>
      : V extends readonly (infer E)[]
        ? E extends Message
          ? Converted<E, D>[]
          : V
        : V extends { case: infer C extends string; value: infer X }
          ? { case: C; value: Converted<X, D> }
          : V extends JsonObject
            ? JsonOf[D]["object"]
            : V extends { [key: string]: infer E }
              ? E extends Message
                ? { [key: string]: Converted<E, D> }
                : V
              : V;

/**
 * What the SDK takes where the API takes JSON: what `JSON.stringify` writes as JSON. Objects with a
 * `toJSON` method (a `Date`) pass as what it returns; `undefined` members are left out.
 */
export type JsonInput =
  | string
  | number
  | boolean
  | null
  | { toJSON(key?: string): unknown }
  | readonly JsonInput[]
  | JsonInputObject;

/** A JSON object as the SDK takes it (see {@link JsonInput}). */
export type JsonInputObject = { readonly [key: string]: JsonInput | undefined };

const VALUE = ValueSchema.typeName;
const LIST_VALUE = ListValueSchema.typeName;
const STRUCT = "google.protobuf.Struct";

/**
 * The request `plain` as protobuf-es takes it: Value and ListValue fields as messages, Struct
 * fields with their JSON normalised. `path` names the message in error messages.
 */
export function toRequestInit(desc: DescMessage, plain: unknown, path = ""): unknown {
  if (!jsonMessageTypeNames.has(desc.typeName) && !structMessageTypeNames.has(desc.typeName)) return plain;
  if (plain === undefined || plain === null) return plain;
  if (typeof plain !== "object" || Array.isArray(plain))
    throw invalid(`${path === "" ? "the request" : `field "${path}"`} must be an object`);
  // A message built with protobuf-es's `create` is sent as it is.
  if ((plain as { $typeName?: unknown }).$typeName === desc.typeName) return plain;
  const out: Record<string, unknown> = { ...(plain as Record<string, unknown>) };
  for (const member of convertedMembers(desc, "request")) {
    const value = out[member.localName];
    if (value === undefined) continue;
    const at = join(path, member.localName);
    if (member.kind === "field") {
      out[member.localName] = fieldInit(member, value, at);
      continue;
    }
    const selected = value as { case?: unknown; value?: unknown };
    const field = member.fields.find((f) => f.localName === selected.case);
    if (field && selected.value !== undefined)
      out[member.localName] = { case: field.localName, value: fieldInit(field, selected.value, at) };
  }
  return out;
}

function fieldInit(field: DescField, value: unknown, path: string): unknown {
  switch (field.fieldKind) {
    case "message":
      return messageInit(field.message, value, path);
    case "list":
      if (field.listKind !== "message") return value;
      if (!Array.isArray(value)) throw invalid(`field "${path}" must be an array`);
      return value.map((v, i) => messageInit(field.message, v, `${path}[${i}]`));
    case "map":
      if (field.mapKind !== "message" || typeof value !== "object" || value === null) return value;
      return Object.fromEntries(
        Object.entries(value).map(([k, v]) => [k, messageInit(field.message, v, `${path}.${k}`)]),
      );
    default:
      return value;
  }
}

function messageInit(desc: DescMessage, value: unknown, path: string): unknown {
  if (value === undefined) return undefined;
  switch (desc.typeName) {
    case VALUE:
      return fromJson(ValueSchema, normalizeJson(value, path));
    case LIST_VALUE: {
      const list = normalizeJson(value, path);
      if (!Array.isArray(list)) throw invalid(`field "${path}" must be an array`);
      return fromJson(ListValueSchema, list);
    }
    case STRUCT: {
      if (value === null) return value;
      const object = normalizeJson(value, path);
      if (object === null || typeof object !== "object" || Array.isArray(object))
        throw invalid(`field "${path}" must be a JSON object`);
      return object;
    }
    default:
      return toRequestInit(desc, value, path);
  }
}

/** A response message as {@link Plain} describes it. */
export function toPlain(desc: DescMessage, message: Message): unknown {
  if (!jsonMessageTypeNames.has(desc.typeName)) return message;
  const { $typeName, $unknown, ...out } = message as Message & Record<string, unknown>;
  for (const member of convertedMembers(desc, "answer")) {
    const value = out[member.localName];
    if (value === undefined) continue;
    if (member.kind === "field") {
      out[member.localName] = plainField(member, value);
      continue;
    }
    const selected = value as { case?: string; value?: unknown };
    const field = member.fields.find((f) => f.localName === selected.case);
    if (field) out[member.localName] = { case: selected.case, value: plainField(field, selected.value) };
  }
  return out;
}

/** The members of each message that need converting, by direction, worked out once per message. */
const converted = {
  request: new WeakMap<DescMessage, Member[]>(),
  answer: new WeakMap<DescMessage, Member[]>(),
};

type Member = DescMessage["members"][number];

/**
 * The fields (and oneofs) of `desc` whose values the SDK converts: those holding a Value or
 * ListValue, or a message that does; in requests also a Struct, or a message holding one.
 */
function convertedMembers(desc: DescMessage, direction: "request" | "answer"): Member[] {
  const cache = converted[direction];
  let members = cache.get(desc);
  if (!members) {
    const converts = (field: DescField) => {
      const name = field.message?.typeName;
      if (name === undefined) return false;
      if (name === VALUE || name === LIST_VALUE || jsonMessageTypeNames.has(name)) return true;
      return direction === "request" && (name === STRUCT || structMessageTypeNames.has(name));
    };
    members = desc.members.filter((m) => (m.kind === "field" ? converts(m) : m.fields.some(converts)));
    cache.set(desc, members);
  }
  return members;
}

function plainField(field: DescField, value: unknown): unknown {
  switch (field.fieldKind) {
    case "message":
      return plainMessage(field.message, value);
    case "list":
      return field.listKind === "message"
        ? (value as unknown[]).map((v) => plainMessage(field.message, v))
        : value;
    case "map":
      return field.mapKind === "message"
        ? Object.fromEntries(
            Object.entries(value as Record<string, unknown>).map(([k, v]) => [
              k,
              plainMessage(field.message, v),
            ]),
          )
        : value;
    default:
      return value;
  }
}

function plainMessage(desc: DescMessage, value: unknown): unknown {
  if (value === undefined) return undefined;
  if (desc.typeName === VALUE) return valueJson(value as Value);
  if (desc.typeName === LIST_VALUE) return (value as ListValue).values.map(valueJson);
  return toPlain(desc, value as Message);
}

/**
 * A Value as JSON: what protobuf-es's `toJson` answers, read straight from the message (several
 * times faster than the reflective walk, which matters on pages of a thousand runs).
 */
export function valueJson(value: Value): JsonValue {
  const { kind } = value;
  switch (kind.case) {
    case "nullValue":
      return null;
    case "numberValue":
    case "stringValue":
    case "boolValue":
      return kind.value;
    case "listValue":
      return kind.value.values.map(valueJson);
    case "structValue": {
      const out: JsonObject = {};
      for (const [key, item] of Object.entries(kind.value.fields)) out[key] = valueJson(item);
      return out;
    }
    default:
      // What protobuf-es says of a Value that sets no kind (the server never answers one).
      return toJson(ValueSchema, value);
  }
}

/**
 * `value` as the JSON `JSON.stringify` would write for it, refusing what JSON cannot hold. Objects
 * on the way down are tracked, so a cycle is refused rather than overflowing the stack.
 */
export function normalizeJson(value: unknown, path: string): JsonValue {
  const onPath = new Set<object>();
  const walk = (v: unknown, at: string): JsonValue => {
    if (v === null || typeof v === "string" || typeof v === "boolean") return v;
    if (typeof v === "number") {
      if (!Number.isFinite(v)) throw invalid(`field "${at}" is ${v}, which JSON cannot hold`);
      return v;
    }
    if (typeof v === "bigint")
      throw invalid(`field "${at}" is a bigint, which JSON cannot hold: send a number or a string`);
    if (typeof v !== "object") throw invalid(`field "${at}" is a ${typeof v}, which JSON cannot hold`);
    const withToJson = v as { toJSON?: (key: string) => unknown };
    if (typeof withToJson.toJSON === "function") return walk(withToJson.toJSON(lastKey(at)), at);
    if (onPath.has(v)) throw invalid(`field "${at}" refers to itself (a cycle), which JSON cannot hold`);
    onPath.add(v);
    try {
      if (Array.isArray(v)) return v.map((item, i) => (isOmitted(item) ? null : walk(item, `${at}[${i}]`)));
      const out: JsonObject = {};
      for (const [key, item] of Object.entries(v)) if (!isOmitted(item)) out[key] = walk(item, join(at, key));
      return out;
    } finally {
      onPath.delete(v);
    }
  };
  return walk(value, path);
}

/** Values `JSON.stringify` leaves out of objects (and writes as null in arrays). */
function isOmitted(value: unknown): boolean {
  return value === undefined || typeof value === "function" || typeof value === "symbol";
}

function join(path: string, key: string): string {
  return path === "" ? key : `${path}.${key}`;
}

/** The key `toJSON` is called with: the member name, or the array index. */
function lastKey(path: string): string {
  return (
    /(?:^|\.)([^.[\]]*)$|\[(\d+)\]$/
      .exec(path)
      ?.slice(1)
      .find((k) => k !== undefined) ?? ""
  );
}

function invalid(message: string): ConnectError {
  return new ConnectError(message, Code.InvalidArgument);
}
