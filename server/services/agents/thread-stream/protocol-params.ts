/**
 * Reading a protocol command's `params`: typed accessors that refuse a known parameter of the
 * wrong type with `invalid_argument` naming it. Parameters no one knows are left alone, as the
 * Agent Server leaves them (a newer client may send more).
 */
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { invalidParam } from "./protocol-errors.js";

/** A command's params, read by name. */
export interface Params {
  /** The value as sent; undefined when absent (null counts as absent). */
  raw(name: string): JsonValue | undefined;
  string(name: string): string | undefined;
  requiredString(name: string): string;
  object(name: string): JsonObject | undefined;
  boolean(name: string): boolean | undefined;
  /** A whole number of at least `min`. */
  integer(name: string, min: number): number | undefined;
  /** A namespace: a list of strings (`[]`, the root graph, when absent). */
  namespace(name: string): string[];
  stringList(name: string): string[] | undefined;
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The accessors of `params` for command `method` (named in messages). */
export function paramsOf(method: string, params: JsonObject): Params {
  const raw = (name: string): JsonValue | undefined => {
    const value = params[name];
    return value === null ? undefined : value;
  };
  const fail = (name: string, what: string) => invalidParam(`${method}: ${name} must be ${what}`);
  const stringList = (name: string): string[] | undefined => {
    const value = raw(name);
    if (value === undefined) return undefined;
    if (!Array.isArray(value) || !value.every((v) => typeof v === "string"))
      throw fail(name, "a list of strings");
    return value as string[];
  };
  return {
    raw,
    string(name) {
      const value = raw(name);
      if (value === undefined) return undefined;
      if (typeof value !== "string") throw fail(name, "a string");
      return value;
    },
    requiredString(name) {
      const value = raw(name);
      if (typeof value !== "string" || value === "")
        throw invalidParam(`${method} requires ${name}: a non-empty string`);
      return value;
    },
    object(name) {
      const value = raw(name);
      if (value === undefined) return undefined;
      if (!isObject(value)) throw fail(name, "a JSON object");
      return value;
    },
    boolean(name) {
      const value = raw(name);
      if (value === undefined) return undefined;
      if (typeof value !== "boolean") throw fail(name, "true or false");
      return value;
    },
    integer(name, min) {
      const value = raw(name);
      if (value === undefined) return undefined;
      if (typeof value !== "number" || !Number.isInteger(value) || value < min)
        throw fail(name, `a whole number of at least ${min}`);
      return value;
    },
    namespace: (name) => stringList(name) ?? [],
    stringList,
  };
}
