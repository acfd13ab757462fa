import type { Queryable } from "../db.js";
import type { JsonValue } from "../json-value.js";
import type { SqlCondition } from "./sql-conditions.js";
import { allOf } from "./sql-conditions.js";

/**
 * A custom auth handler's filter on a resource's `metadata`, validated (see {@link parseAuthFilter}).
 * `eq`: the key holds exactly this JSON value; `contains`: the key holds an array with every one of
 * `values`; `and` / `or`: combinations.
 */
export type AuthFilter =
  | { readonly kind: "eq"; readonly key: string; readonly value: JsonValue }
  | { readonly kind: "contains"; readonly key: string; readonly values: readonly JsonValue[] }
  | { readonly kind: "and"; readonly filters: readonly AuthFilter[] }
  | { readonly kind: "or"; readonly filters: readonly AuthFilter[] };

/**
 * Branches of one `$and` / `$or` at most: a handler's filter is a few ownership rules, and each
 * branch is one more condition on every row a search reads.
 */
export const MAX_FILTER_BRANCHES = 10;
/** Nesting of `$and` / `$or` at most, for the same reason. */
export const MAX_FILTER_DEPTH = 4;

/**
 * Validates a handler's filter object: `{key: value}`, `{key: {$eq: value}}`,
 * `{key: {$contains: value | value[]}}`, `{$and: [filters]}`, `{$or: [filters]}` (1 to
 * {@link MAX_FILTER_BRANCHES} each). Several keys of one object must all match. Returns the filter,
 * or a sentence saying what is wrong.
 */
export function parseAuthFilter(raw: unknown): AuthFilter | { problem: string } {
  try {
    return parseObject(raw, "filter", 0);
  } catch (error) {
    if (error instanceof FilterProblem) return { problem: error.message };
    throw error;
  }
}

class FilterProblem extends Error {}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function parseObject(raw: unknown, at: string, depth: number): AuthFilter {
  if (!isPlainObject(raw)) throw new FilterProblem(`${at} must be an object, got ${describe(raw)}`);
  if (depth > MAX_FILTER_DEPTH)
    throw new FilterProblem(`${at}: $and/$or nest ${MAX_FILTER_DEPTH} levels deep at most`);
  const parts: AuthFilter[] = [];
  for (const [key, value] of Object.entries(raw)) {
    if (key === "$and" || key === "$or") {
      if (!Array.isArray(value) || value.length === 0 || value.length > MAX_FILTER_BRANCHES)
        throw new FilterProblem(
          `${at}.${key} must be an array of 1 to ${MAX_FILTER_BRANCHES} filter objects, got ${Array.isArray(value) ? `${value.length} entries` : describe(value)}`,
        );
      const filters = value.map((entry, i) => parseObject(entry, `${at}.${key}[${i}]`, depth + 1));
      parts.push({ kind: key === "$and" ? "and" : "or", filters });
    } else if (key.startsWith("$")) {
      throw new FilterProblem(`${at}: unknown operator ${key}; use $and, $or, or a metadata key`);
    } else {
      parts.push(parseCondition(key, value, `${at}.${key}`));
    }
  }
  return parts.length === 1 && parts[0] ? parts[0] : { kind: "and", filters: parts };
}

function parseCondition(key: string, value: unknown, at: string): AuthFilter {
  if (!isPlainObject(value)) return { kind: "eq", key, value: jsonValue(value, at) };
  const operators = Object.keys(value);
  if (operators.length !== 1)
    throw new FilterProblem(
      `${at} must hold exactly one operator ($eq or $contains), got ${operators.length}`,
    );
  const [operator] = operators as [string];
  const operand = value[operator];
  if (operator === "$eq") return { kind: "eq", key, value: jsonValue(operand, `${at}.$eq`) };
  if (operator === "$contains") {
    const values = Array.isArray(operand) ? operand : [operand];
    if (values.length === 0) throw new FilterProblem(`${at}.$contains must name at least one value`);
    return { kind: "contains", key, values: values.map((v, i) => jsonValue(v, `${at}.$contains[${i}]`)) };
  }
  throw new FilterProblem(`${at}: unknown operator ${operator}; use $eq or $contains`);
}

function jsonValue(value: unknown, at: string): JsonValue {
  if (value === null || typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number" && Number.isFinite(value)) return value;
  throw new FilterProblem(`${at} must be a string, number, boolean or null, got ${describe(value)}`);
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `${typeof value} ${String(value)}`;
}

/**
 * The SQL condition of `filter` on the jsonb column named `metadata` (`metadata`, or `t.metadata`
 * with a table alias), every key and value a parameter. Each condition is a containment
 * (`metadata @> {"key": value}`; values are scalars, so this is equality, and for `$contains` an
 * array holding them), which the metadata GIN indexes (jsonb_path_ops) answer. A key holding a
 * different JSON type never matches. The column is a name, not a fragment: a fragment cannot
 * appear twice in one query.
 */
export function authFilterSql(q: Queryable, metadata: string, filter: AuthFilter): SqlCondition {
  switch (filter.kind) {
    case "eq":
      return q`${q(metadata)} @> ${q.json({ [filter.key]: filter.value })}`;
    case "contains":
      return q`${q(metadata)} @> ${q.json({ [filter.key]: filter.values as JsonValue[] })}`;
    case "and":
      return allOf(
        q,
        filter.filters.map((f) => authFilterSql(q, metadata, f)),
      );
    case "or":
      return filter.filters
        .map((f) => q`(${authFilterSql(q, metadata, f)})`)
        .reduce((acc, c) => q`${acc} or ${c}`);
  }
}

/** `authFilterSql` when there is a filter, else `true`. */
export function optionalAuthFilterSql(
  q: Queryable,
  metadata: string,
  filter: AuthFilter | undefined,
): SqlCondition {
  return filter ? authFilterSql(q, metadata, filter) : q`true`;
}
