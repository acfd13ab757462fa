import type postgres from "postgres";
import type { Queryable } from "./db.js";

/** The column types a {@link rowSource} carries (each maps to a fixed cast below). */
export type RowSourceType = "uuid" | "text" | "text[]" | "jsonb" | "float8";

/** A query fragment that can be nested in another query. */
type Fragment = postgres.PendingQuery<postgres.Row[]>;

/**
 * `rows` as a FROM item named `alias` with `columns` (in order), for statements that act on a
 * batch: one row is a plain `VALUES` row, several are one JSON parameter unpacked by
 * `jsonb_to_recordset`, so a statement's size never grows with its batch. One row is the case of
 * every call at low load, and unpacking a JSON batch of one cost Postgres a third more CPU.
 * Column names and types are code, never input; values are always bound parameters.
 */
export function rowSource(
  q: Queryable,
  alias: string,
  columns: readonly (readonly [name: string, type: RowSourceType])[],
  rows: readonly Record<string, unknown>[],
): Fragment {
  const names = columns.map(([name]) => name);
  const [only] = rows;
  if (rows.length === 1 && only) {
    const values = columns.map(([name, type]) => castParameter(q, type, only[name] ?? null));
    return q`(values (${list(q, values)})) as ${q(alias)} (${q(names)})`;
  }
  const definitions = columns.map(([name, type]) => q`${q(name)} ${typeName(q, type)}`);
  return q`jsonb_to_recordset(${q.json(rows as postgres.JSONValue)}) as ${q(alias)} (${list(q, definitions)})`;
}

/** `fragments` joined by commas. */
function list(q: Queryable, fragments: readonly Fragment[]): Fragment {
  return fragments.reduce((joined, next) => q`${joined}, ${next}`);
}

function castParameter(q: Queryable, type: RowSourceType, value: unknown): Fragment {
  const parameter = value as postgres.SerializableParameter;
  switch (type) {
    case "uuid":
      return q`${parameter}::uuid`;
    case "text":
      return q`${parameter}::text`;
    case "text[]":
      return q`${parameter}::text[]`;
    case "jsonb":
      return q`${q.json(value as postgres.JSONValue)}::jsonb`;
    case "float8":
      return q`${parameter}::float8`;
  }
}

function typeName(q: Queryable, type: RowSourceType): Fragment {
  switch (type) {
    case "uuid":
      return q`uuid`;
    case "text":
      return q`text`;
    case "text[]":
      return q`text[]`;
    case "jsonb":
      return q`jsonb`;
    case "float8":
      return q`float8`;
  }
}
