import type { RunCondition, SqlFragment } from "../tracing/filter/index.js";
import { runFilterSql } from "../tracing/filter/index.js";
import type { RunCursor } from "./bulk-export-run-store.js";
import type { Queryable } from "./db.js";
import { inWorkspace } from "./sql-conditions.js";

/**
 * The run fields a bulk export can write, in column order: the seed's exportable fields (tenant_id
 * and is_root included, which only exports name).
 */
export const EXPORTABLE_RUN_FIELDS = [
  "id",
  "tenant_id",
  "session_id",
  "trace_id",
  "parent_run_id",
  "parent_run_ids",
  "reference_example_id",
  "name",
  "run_type",
  "start_time",
  "end_time",
  "status",
  "is_root",
  "dotted_order",
  "trace_tier",
  "inputs",
  "outputs",
  "error",
  "extra",
  "events",
  "tags",
  "feedback_stats",
  "total_tokens",
  "prompt_tokens",
  "completion_tokens",
  "total_cost",
  "prompt_cost",
  "completion_cost",
  "first_token_time",
] as const;

/** One of {@link EXPORTABLE_RUN_FIELDS}. */
export type ExportableRunField = (typeof EXPORTABLE_RUN_FIELDS)[number];

/**
 * A run as an export reads it: Postgres's text output of each column, as the bytes the wire
 * carried (no decoding into strings, so the Parquet encoder copies text and JSON as they came), or
 * null. Position {@link CURSOR_START_US} holds the keyset start time in epoch microseconds,
 * {@link CURSOR_ID} the run's id, and position `FIRST_FIELD + i` the query's `fields[i]`:
 * UUIDs and text as text, lists in Postgres's array form (`{a,"b c"}`), timestamps as epoch microseconds and token counts
 * as decimal text (so no precision is lost), JSON fields as JSON text, costs as float8 text and
 * booleans as `t` or `f`.
 */
export type ExportRow = readonly (Buffer | null)[];

/** Where an {@link ExportRow} holds the start time of its keyset position (epoch microseconds). */
export const CURSOR_START_US = 0;
/** Where an {@link ExportRow} holds the id of its keyset position. */
export const CURSOR_ID = 1;
/** Where an {@link ExportRow}'s first selected field is. */
export const FIRST_FIELD = 2;

/** What an export partition reads. */
export interface ExportRowQuery {
  workspaceId: string;
  sessionId: string;
  /** Runs that started at or after. */
  from: Date;
  /** Runs that started before. */
  to: Date;
  /** The export's filter. */
  condition: RunCondition | undefined;
  /** Continue after this position. */
  after: RunCursor | null;
  /** Stop at this position (included); none: read to the window's end. */
  through?: RunCursor | null;
  /** Rows at most; null: every row up to `through`. */
  limit: number | null;
  fields: readonly ExportableRunField[];
}

/** Microseconds since the epoch of a timestamptz column, as bigint. */
function micros(q: Queryable, column: string): SqlFragment {
  return q`(extract(epoch from ${q("run")}.${q(column)}) * 1000000)::bigint`;
}

/** The SQL of one exportable field over the runs row aliased `run`. */
function fieldSql(q: Queryable, field: ExportableRunField): SqlFragment {
  const col = (name: string) => q`${q("run")}.${q(name)}`;
  switch (field) {
    case "tenant_id":
      return col("workspace_id");
    case "start_time":
    case "end_time":
    case "first_token_time":
      return q`${micros(q, field)}::text`;
    case "inputs":
    case "outputs":
    case "extra":
    case "events":
    case "feedback_stats":
      return q`${col(field)}::text`;
    case "total_tokens":
    case "prompt_tokens":
    case "completion_tokens":
      return q`${col(field)}::text`;
    case "total_cost":
    case "prompt_cost":
    case "completion_cost":
      return q`${col(field)}::float8`;
    default:
      return col(field);
  }
}

/** The conditions every export read applies: window, project, position range and filter. */
function exportWhere(q: Queryable, query: ExportRowQuery): SqlFragment {
  const where: SqlFragment[] = [
    q`run.session_id = ${query.sessionId}`,
    q`run.start_time >= ${query.from}`,
    q`run.start_time < ${query.to}`,
  ];
  if (query.condition) where.push(runFilterSql(q, query.condition, "run"));
  if (query.after) {
    where.push(
      q`(run.start_time, run.id) > (${query.after.startTime}::text::timestamptz, ${query.after.id}::uuid)`,
    );
  }
  if (query.through) {
    where.push(
      q`(run.start_time, run.id) <= (${query.through.startTime}::text::timestamptz, ${query.through.id}::uuid)`,
    );
  }
  return inWorkspace(q, "run", query.workspaceId, where);
}

/**
 * One page of a partition's runs in keyset order (start_time, id), after `query.after` (and up to
 * `query.through`), each handed to `onRow` as raw column bytes (see {@link ExportRow}) the moment it
 * arrives, so nothing holds a page of rows and the caller works while Postgres sends the rest;
 * returns how many came. The workspace, the project, the time window, the position and the
 * export's filter are combined with `inWorkspace`, so nothing in the filter can reach another
 * workspace's or project's runs.
 */
export async function readExportRows(
  q: Queryable,
  query: ExportRowQuery,
  onRow: (row: ExportRow) => void,
): Promise<number> {
  const selected = query.fields.map((field) => q`${fieldSql(q, field)} as ${q(field)}`);
  const list = selected.reduce((acc, column) => q`${acc}, ${column}`);
  let count = 0;
  await q`
    select ${micros(q, "start_time")}::text as cursor_start_us, run.id as cursor_id, ${list}
    from runs as run
    where ${exportWhere(q, query)}
    order by run.start_time, run.id
    limit ${query.limit}`
    .raw()
    .forEach((row) => {
      count++;
      onRow(row as unknown as ExportRow);
    });
  return count;
}

/** A position that closes a chunk of an export's rows, and how many rows lie up to it. */
export interface ExportBoundary {
  /** The position as an {@link ExportRow} holding only {@link CURSOR_START_US} and {@link CURSOR_ID}. */
  row: ExportRow;
  /** Rows after `query.after` up to and including this one. */
  rows: number;
}

/**
 * Splits the next `query.limit` rows of an export (same order and conditions as
 * {@link readExportRows}) into chunks of `every` rows: the position of every `every`-th row and of the
 * last one, from one pass over the (start_time) index that reads only keys. Reading the chunks
 * `(previous boundary, boundary]` over several connections at once gives the same rows as one read,
 * each once; an empty list means no rows are left.
 */
export async function readExportBoundaries(
  q: Queryable,
  query: Omit<ExportRowQuery, "fields" | "through" | "limit"> & { limit: number },
  every: number,
): Promise<ExportBoundary[]> {
  // Only keys are read (an index-only scan of runs_session_start_id_idx), and only the boundary
  // rows' start times are converted; lead() marks the last row without counting them all first.
  const rows = await q`
    select ${micros(q, "start_time")}::text as cursor_start_us, run.id as cursor_id, n::int as n
    from (
      select start_time, id, row_number() over keyset as n, lead(id) over keyset is null as last
      from (
        select run.start_time, run.id
        from runs as run
        where ${exportWhere(q, { ...query, fields: [] })}
        order by run.start_time, run.id
        limit ${query.limit}
      ) as page
      window keyset as (order by start_time, id)
    ) as run
    where n % ${every} = 0 or last
    order by n`.raw();
  return rows.map((row) => {
    const [start, id, n] = row as unknown as [Buffer, Buffer, Buffer];
    return { row: [start, id], rows: Number(String(n)) };
  });
}
