import type { DescField, DescMessage, JsonObject, JsonValue } from "@bufbuild/protobuf";
import { createContextKey, type HandlerContext } from "@connectrpc/connect";

/*
 * Forward compatibility with the official clients (design.md, decision 14): on the LangGraph- and
 * LangSmith-compatible APIs a request member that no field of its message knows is taken out before
 * the message is decoded, and its name is reported so that the transport logs and counts it. Which
 * services are lenient is declared once, in server/transport/field-leniency.ts.
 */

/**
 * Removes from `json`, a value of `schema` as proto JSON, every member that names no field of its
 * message (by proto or JSON name), at every depth, and returns their dotted names (`config_v2`,
 * `checkpoint.extra`; list items and map values add no segment, so a name says where in the schema
 * the member was). Well-known types (Struct, Value, Any, Timestamp...) are left whole: a Struct takes
 * any member by design. Values that are not what the field expects are left for protobuf-es to
 * refuse, with its usual 422.
 */
export function takeUnknownFields(schema: DescMessage, json: JsonValue, prefix = ""): string[] {
  const names: string[] = [];
  collect(schema, json, prefix, names);
  return names;
}

function collect(schema: DescMessage, json: JsonValue, prefix: string, names: string[]): void {
  if (!isObject(json) || schema.typeName.startsWith("google.protobuf.")) return;
  for (const key of Object.keys(json)) {
    const field = fieldNamed(schema, key);
    if (!field) {
      names.push(prefix + key);
      delete json[key];
      continue;
    }
    const value = json[key]!;
    const inner = `${prefix}${field.name}.`;
    if (field.fieldKind === "message") collect(field.message, value, inner, names);
    else if (field.fieldKind === "list" && field.listKind === "message" && Array.isArray(value))
      for (const item of value) collect(field.message, item, inner, names);
    else if (field.fieldKind === "map" && field.mapKind === "message" && isObject(value))
      for (const item of Object.values(value)) collect(field.message, item, inner, names);
  }
}

function fieldNamed(schema: DescMessage, key: string): DescField | undefined {
  return schema.fields.find((f) => f.name === key || f.jsonName === key);
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Names of request members a handler ignored while reading a JSON value of its own (the entries of
 * `POST /runs/batch`, which arrive as `google.protobuf.Value`s); the REST layer reports them with
 * those the decoder took out.
 */
export const ignoredFieldsKey = createContextKey<string[] | undefined>(undefined);

/** Adds `names` to the call's ignored request members (see {@link ignoredFieldsKey}). */
export function noteIgnoredFields(ctx: HandlerContext, names: readonly string[]): void {
  if (names.length === 0) return;
  const noted = ctx.values.get(ignoredFieldsKey);
  if (noted) noted.push(...names);
  else ctx.values.set(ignoredFieldsKey, [...names]);
}
