import type { Queryable } from "../db.js";
import type { RunCondition } from "../filters/run-condition.js";
import { runFilterSql, type SqlFragment } from "../filters/run-filter-sql.js";
import { inWorkspace } from "../filters/sql-conditions.js";
import type { WorkspaceBound } from "./workspace-scope.js";

/** The run fields that are large JSON columns, read from the table only when a query selects them. */
export const RUN_JSON_COLUMNS = [
  "inputs",
  "outputs",
  "extra",
  "events",
  "serialized",
  "feedback_stats",
] as const;

/** One of {@link RUN_JSON_COLUMNS}. */
export type RunJsonColumn = (typeof RUN_JSON_COLUMNS)[number];

/** A stored run as the query side reads it. Times are ISO 8601 UTC text with microseconds. */
export interface RunRow {
  workspace_id: string;
  id: string;
  session_id: string;
  trace_id: string;
  parent_run_id: string | null;
  parent_run_ids: string[];
  reference_example_id: string | null;
  name: string;
  run_type: string;
  start_time: string;
  end_time: string | null;
  status: string;
  is_root: boolean;
  dotted_order: string;
  trace_tier: string | null;
  error: string | null;
  tags: string[];
  /** bigint columns arrive as decimal strings. */
  total_tokens: string | null;
  prompt_tokens: string | null;
  completion_tokens: string | null;
  /** numeric columns arrive as decimal strings. */
  total_cost: string | null;
  prompt_cost: string | null;
  completion_cost: string | null;
  first_token_time: string | null;
  received_at: string;
  /** Metadata `thread_id`, else `session_id`, else `conversation_id`. */
  thread_id: string | null;
  /** null when not selected. */
  inputs: unknown;
  outputs: unknown;
  extra: unknown;
  events: unknown;
  serialized: unknown;
  feedback_stats: unknown;
}

/** Where a page starts: after the run with this start time (ISO text with microseconds) and id. */
export interface RunKey {
  startTime: string;
  id: string;
}

/** A run query; every set field narrows the result. */
export interface RunQuery {
  workspaceId: string;
  /** Empty: every project of the workspace. */
  sessionIds: readonly string[];
  runType?: string;
  isRoot?: boolean;
  /** true: failed runs only; false: runs without an error only. */
  error?: boolean;
  traceId?: string;
  parentRunId?: string;
  /** Empty: any. */
  ids: readonly string[];
  /** Empty: any. */
  referenceExampleIds: readonly string[];
  /** Runs that started at or after. */
  startTime?: Date;
  /** Runs that started at or before. */
  endTime?: Date;
  /** Runs that started before (the v2 API's exclusive upper bound). */
  startedBefore?: Date;
  /** Conditions each run must meet (`filter`, `query`). */
  conditions: readonly RunCondition[];
  /** Condition the root run of the run's trace must meet. */
  traceCondition?: RunCondition;
  /** Condition some run of the run's trace must meet. */
  treeCondition?: RunCondition;
  order: "asc" | "desc";
  limit: number;
  after?: RunKey;
  /** The large JSON columns to read; the others come back null. */
  json: ReadonlySet<RunJsonColumn>;
  /**
   * When set, the only columns read (besides `id` and `start_time`, which the cursor needs); the
   * rows leave the others out, so a caller must read no other. Absent: every column.
   */
  columns?: ReadonlySet<RunColumn>;
}

/** ISO 8601 UTC with exactly six fractional digits: `2026-11-21T04:37:55.244001Z`. */
const ISO_MICROS = `YYYY-MM-DD"T"HH24:MI:SS.US"Z"`;

/** A column of {@link RunRow}. */
export type RunColumn = keyof RunRow;

/**
 * The columns every row of a query with `columns` still carries: the page's keyset cursor needs
 * `start_time` and `id`.
 */
const KEY_COLUMNS: readonly RunColumn[] = ["id", "start_time"];

/**
 * The columns of a run row under the alias `run`: JSON columns only when in `json` (null
 * otherwise); with `only`, just those columns and {@link KEY_COLUMNS}, the rest left out of the row.
 */
function columns(q: Queryable, json: ReadonlySet<RunJsonColumn>, only?: ReadonlySet<RunColumn>): SqlFragment {
  const iso = (column: string) => q`to_char(${q("run")}.${q(column)} at time zone 'UTC', ${ISO_MICROS})`;
  const maybe = (column: RunJsonColumn) => (json.has(column) ? q`${q("run")}.${q(column)}` : q`null::jsonb`);
  if (only === undefined) {
    return q`
    run.workspace_id, run.id, run.session_id, run.trace_id, run.parent_run_id, run.parent_run_ids,
    run.reference_example_id, run.name, run.run_type, ${iso("start_time")} as start_time,
    ${iso("end_time")} as end_time, run.status, run.is_root, run.dotted_order, run.trace_tier,
    run.error, run.tags, run.total_tokens, run.prompt_tokens, run.completion_tokens, run.total_cost,
    run.prompt_cost, run.completion_cost, ${iso("first_token_time")} as first_token_time,
    ${iso("received_at")} as received_at, ${threadId(q)} as thread_id,
    ${maybe("inputs")} as inputs, ${maybe("outputs")} as outputs, ${maybe("extra")} as extra,
    ${maybe("events")} as events, ${maybe("serialized")} as serialized,
    ${maybe("feedback_stats")} as feedback_stats`;
  }
  const wanted = new Set<RunColumn>([...KEY_COLUMNS, ...only]);
  const column = (name: RunColumn): SqlFragment => {
    switch (name) {
      case "start_time":
      case "end_time":
      case "first_token_time":
      case "received_at":
        return q`${iso(name)} as ${q(name)}`;
      case "thread_id":
        return q`${threadId(q)} as thread_id`;
      case "inputs":
      case "outputs":
      case "extra":
      case "events":
      case "serialized":
      case "feedback_stats":
        return q`${maybe(name)} as ${q(name)}`;
      default:
        return q`${q("run")}.${q(name)}`;
    }
  };
  return [...wanted].map(column).reduce((list, c) => q`${list}, ${c}`);
}

/** The run's conversation: metadata `thread_id`, else `session_id`, else `conversation_id`. */
function threadId(q: Queryable): SqlFragment {
  return q`coalesce(run.extra -> 'metadata' ->> 'thread_id', run.extra -> 'metadata' ->> 'session_id',
             run.extra -> 'metadata' ->> 'conversation_id')`;
}

const ALL_JSON: ReadonlySet<RunJsonColumn> = new Set(RUN_JSON_COLUMNS);

/** One run of a workspace with every column, or undefined. */
export async function findRun(
  q: WorkspaceBound,
  workspaceId: string,
  runId: string,
): Promise<RunRow | undefined> {
  const [row] = await q<RunRow[]>`
    select ${columns(q, ALL_JSON)} from runs as run
    where run.workspace_id = ${workspaceId} and run.id = ${runId}`;
  return row;
}

/** What selects runs in a {@link RunQuery}, without its paging: what run stats aggregate over. */
export type RunSelection = Omit<RunQuery, "order" | "limit" | "after" | "json" | "columns">;

/**
 * The conditions on `run` (the alias of `runs`) of a selection, besides its workspace: pass them to
 * inWorkspace (sql-conditions.ts).
 */
export function runSelectionConditions(q: WorkspaceBound, query: RunSelection): SqlFragment[] {
  const where: SqlFragment[] = [];
  // One project as `=`, not `= any(array)`: only then can Postgres read the project's runs in index
  // order and stop at the page's end (an `any` makes it read the whole window and sort it).
  if (query.sessionIds.length === 1) where.push(q`run.session_id = ${query.sessionIds[0]!}::uuid`);
  else if (query.sessionIds.length > 1) where.push(q`run.session_id = any(${[...query.sessionIds]}::uuid[])`);
  if (query.runType !== undefined) where.push(q`run.run_type = ${query.runType}`);
  if (query.isRoot !== undefined) where.push(q`run.is_root = ${query.isRoot}`);
  if (query.error === true) where.push(q`run.error is not null`);
  if (query.error === false) where.push(q`run.error is null`);
  if (query.traceId !== undefined) where.push(q`run.trace_id = ${query.traceId}::uuid`);
  if (query.parentRunId !== undefined) where.push(q`run.parent_run_id = ${query.parentRunId}::uuid`);
  if (query.ids.length > 0) where.push(q`run.id = any(${[...query.ids]}::uuid[])`);
  if (query.referenceExampleIds.length > 0)
    where.push(q`run.reference_example_id = any(${[...query.referenceExampleIds]}::uuid[])`);
  if (query.startTime) where.push(q`run.start_time >= ${query.startTime}`);
  if (query.endTime) where.push(q`run.start_time <= ${query.endTime}`);
  if (query.startedBefore) where.push(q`run.start_time < ${query.startedBefore}`);
  for (const condition of query.conditions) where.push(runFilterSql(q, condition, "run"));
  if (query.traceCondition) {
    where.push(q`exists (
      select 1 from runs as root_run
      where ${inWorkspace(q, "root_run", query.workspaceId, [
        q`root_run.id = run.trace_id`,
        runFilterSql(q, query.traceCondition, "root_run"),
      ])})`);
  }
  if (query.treeCondition) {
    where.push(q`exists (
      select 1 from runs as tree_run
      where ${inWorkspace(q, "tree_run", query.workspaceId, [
        q`tree_run.trace_id = run.trace_id`,
        runFilterSql(q, query.treeCondition, "tree_run"),
      ])})`);
  }
  return where;
}

/**
 * One page of runs matching `query`, ordered by (start_time, id) in `query.order`, starting after
 * `query.after`. Reads `limit + 1` rows so the caller knows whether another page follows.
 */
export async function queryRuns(q: WorkspaceBound, query: RunQuery): Promise<RunRow[]> {
  const where = runSelectionConditions(q, query);
  const desc = query.order === "desc";
  if (query.after) {
    const key = q`(${query.after.startTime}::text::timestamptz, ${query.after.id}::uuid)`;
    where.push(desc ? q`(run.start_time, run.id) < ${key}` : q`(run.start_time, run.id) > ${key}`);
  }
  const orderBy = desc ? q`run.start_time desc, run.id desc` : q`run.start_time asc, run.id asc`;
  return q<RunRow[]>`
    select ${columns(q, query.json, query.columns)} from runs as run
    where ${inWorkspace(q, "run", query.workspaceId, where)}
    order by ${orderBy}
    limit ${query.limit + 1}`;
}

/** The ids among `ids` of tracing projects of the workspace. */
export async function findProjectIds(
  q: WorkspaceBound,
  workspaceId: string,
  ids: readonly string[],
): Promise<string[]> {
  const rows = await q<{ id: string }[]>`
    select id from tracing_projects where workspace_id = ${workspaceId} and id = any(${[...ids]}::uuid[])`;
  return rows.map((r) => r.id);
}
