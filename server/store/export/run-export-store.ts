import type { Queryable } from "../db.js";
import type { RunCondition } from "../filters/run-condition.js";
import { runFilterSql, type SqlFragment } from "../filters/run-filter-sql.js";
import { inWorkspace } from "../filters/sql-conditions.js";
import type { RunCursor } from "./bulk-export-run-store.js";

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
 * null. Position `i` holds the query's `fields[i]`, and {@link exportRowLayout} says where the keyset
 * position is (the start time in epoch microseconds and the run's id):
 * UUIDs and text as text, lists in Postgres's array form (`{a,"b c"}`), timestamps as epoch microseconds and token counts
 * as decimal text (so no precision is lost), JSON fields as JSON text, costs as numeric's decimal
 * text (a cast to float8 in Postgres goes through the same text and costs its backend CPU on every
 * row; the encoder's `Number` rounds the decimal to the nearest double as float8's input does) and
 * booleans as `t` or `f`.
 */
export type ExportRow = readonly (Buffer | null)[];

/** Where an {@link ExportRow} holds its keyset position. */
export interface ExportRowLayout {
  /** The start time in epoch microseconds, as decimal text. */
  cursorStartUs: number;
  /** The run's id. */
  cursorId: number;
}

/**
 * Where the keyset position is in the rows read for `fields`: in the `start_time` and `id` fields
 * when they are exported (the usual case, so Postgres neither computes nor sends them twice), else
 * in columns after the fields.
 */
export function exportRowLayout(fields: readonly ExportableRunField[]): ExportRowLayout {
  const start = fields.indexOf("start_time");
  const id = fields.indexOf("id");
  const cursorStartUs = start === -1 ? fields.length : start;
  return { cursorStartUs, cursorId: id === -1 ? fields.length + (start === -1 ? 1 : 0) : id };
}

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
  limit: number;
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
    default:
      return col(field);
  }
}

/**
 * One page of a partition's runs in keyset order (start_time, id), after `query.after`, each
 * handed to `onRow` as raw column bytes (see {@link ExportRow}) the moment it arrives, so nothing
 * holds a page of rows and the caller works while Postgres sends the rest; returns how many came.
 * The workspace, the project, the time window, the position and the export's filter are combined with
 * `inWorkspace`, so nothing in the filter can reach another workspace's or project's runs.
 */
export async function readExportRows(
  q: Queryable,
  query: ExportRowQuery,
  onRow: (row: ExportRow) => void,
): Promise<number> {
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
  const selected = query.fields.map((field) => q`${fieldSql(q, field)} as ${q(field)}`);
  // The keyset position's columns, when the fields do not hold them (see exportRowLayout).
  if (!query.fields.includes("start_time"))
    selected.push(q`${micros(q, "start_time")}::text as cursor_start_us`);
  if (!query.fields.includes("id")) selected.push(q`run.id as cursor_id`);
  const list = selected.reduce((acc, column) => q`${acc}, ${column}`);
  let count = 0;
  await q`
    select ${list}
    from runs as run
    where ${inWorkspace(q, "run", query.workspaceId, where)}
    order by run.start_time, run.id
    limit ${query.limit}`
    .raw()
    .forEach((row) => {
      count++;
      onRow(row as unknown as ExportRow);
    });
  return count;
}
