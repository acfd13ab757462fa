import type { Queryable } from "../db.js";
import type { RunCondition } from "../filters/run-condition.js";
import { runFilterSql, type SqlFragment } from "../filters/run-filter-sql.js";
import { inWorkspace } from "../filters/sql-conditions.js";
import type { WorkspaceBound } from "../tracing/workspace-scope.js";

/**
 * Conversation threads of traced runs: the root runs of a project grouped by the thread their
 * metadata names (`thread_id`, else `session_id`, else `conversation_id`, as the `thread_id` filter
 * field and the run's `thread_id`).
 */

/** ISO 8601 UTC with exactly six fractional digits, as the run queries return times. */
const ISO_MICROS = `YYYY-MM-DD"T"HH24:MI:SS.US"Z"`;

/**
 * Where a page of threads starts: after the thread last active at this time (ISO text) whose latest
 * trace has this id.
 */
export interface ThreadKey {
  maxStartTime: string;
  lastTraceId: string;
}

/** A thread query; every set field narrows the result. */
export interface ThreadQuery {
  workspaceId: string;
  projectId: string;
  /** Traces that started at or after. */
  minStartTime: Date;
  /** Traces that started before. */
  startedBefore: Date;
  /** Condition a root run must meet to count. */
  condition?: RunCondition;
  /** Only threads with a counted root that meets it. */
  traceCondition?: RunCondition;
  /** Only threads with a counted trace in which some run meets it. */
  treeCondition?: RunCondition;
  limit: number;
  after?: ThreadKey;
}

/** A thread's summary over its counted traces. Times are ISO text with microseconds. */
export interface ThreadRow {
  thread_id: string;
  count: number;
  min_start_time: string;
  max_start_time: string;
  first_trace_id: string;
  last_trace_id: string;
  /** Seconds, over finished traces; null when none has finished. */
  latency_p50: number | null;
  latency_p99: number | null;
  num_errored_turns: number;
  last_error: string | null;
  trace_ids: string[];
}

/** The thread of the run aliased `alias`. */
function threadOf(q: Queryable, alias: string): SqlFragment {
  const extra = q`${q(alias)}.extra`;
  return q`coalesce(${extra} -> 'metadata' ->> 'thread_id', ${extra} -> 'metadata' ->> 'session_id',
    ${extra} -> 'metadata' ->> 'conversation_id')`;
}

/**
 * One page of threads, most recently active first, after `query.after`: by their latest trace's
 * start, then by that trace's id, both descending. That is the order the deprecated
 * `listThreads` of the SDK gives too, as it groups the roots that the runs query answers by
 * (start_time, id) descending, in order of first appearance, and sorts the threads stably by
 * their latest start: threads whose latest traces started in the same millisecond come in the
 * order of those traces' ids. Reads `limit + 1` rows so the caller knows whether another page
 * follows.
 */
export async function queryThreads(q: WorkspaceBound, query: ThreadQuery): Promise<ThreadRow[]> {
  const where: SqlFragment[] = [
    q`run.session_id = ${query.projectId}::uuid`,
    q`run.is_root`,
    q`run.start_time >= ${query.minStartTime}`,
    q`run.start_time < ${query.startedBefore}`,
    q`${threadOf(q, "run")} is not null`,
  ];
  if (query.condition) where.push(runFilterSql(q, query.condition, "run"));
  const traceMatch = query.traceCondition ? runFilterSql(q, query.traceCondition, "run") : q`true`;
  const treeMatch = query.treeCondition
    ? q`exists (select 1 from runs as tree_run where ${inWorkspace(q, "tree_run", query.workspaceId, [
        q`tree_run.trace_id = run.trace_id`,
        runFilterSql(q, query.treeCondition, "tree_run"),
      ])})`
    : q`true`;
  // The latest trace: its id breaks ties of the latest start (Postgres computes the aggregate once).
  const lastTrace = q`(array_agg(roots.trace_id order by roots.start_time desc, roots.trace_id desc))[1]`;
  const after = query.after
    ? q`(max(roots.start_time), ${lastTrace}) < (${query.after.maxStartTime}::text::timestamptz, ${query.after.lastTraceId}::uuid)`
    : q`true`;
  const iso = (value: SqlFragment) => q`to_char(${value} at time zone 'UTC', ${ISO_MICROS})`;
  const latency = q`extract(epoch from (roots.end_time - roots.start_time))::float8`;
  return q<ThreadRow[]>`
    with roots as (
      select run.trace_id, run.start_time, run.end_time, run.error, ${threadOf(q, "run")} as thread_id,
        ${traceMatch} as trace_match, ${treeMatch} as tree_match
      from runs as run
      where ${inWorkspace(q, "run", query.workspaceId, where)}
    )
    select roots.thread_id, count(*)::int as count,
      ${iso(q`min(roots.start_time)`)} as min_start_time, ${iso(q`max(roots.start_time)`)} as max_start_time,
      (array_agg(roots.trace_id order by roots.start_time, roots.trace_id))[1] as first_trace_id,
      ${lastTrace} as last_trace_id,
      percentile_cont(0.5) within group (order by ${latency}) as latency_p50,
      percentile_cont(0.99) within group (order by ${latency}) as latency_p99,
      (count(*) filter (where roots.error is not null))::int as num_errored_turns,
      (array_agg(roots.error order by roots.start_time desc, roots.trace_id desc)
        filter (where roots.error is not null))[1] as last_error,
      array_agg(roots.trace_id) as trace_ids
    from roots
    group by roots.thread_id
    having bool_or(roots.trace_match) and bool_or(roots.tree_match) and ${after}
    order by max(roots.start_time) desc, ${lastTrace} desc
    limit ${query.limit + 1}`;
}

/** Totals over every trace of one thread. Times are ISO text with microseconds. */
export interface ThreadStatsRow {
  turns: number;
  first_start_time: string | null;
  last_start_time: string | null;
  last_end_time: string | null;
  latency_p50: number | null;
  latency_p99: number | null;
  trace_ids: string[];
}

/** The totals over the traces of thread `threadId` of a project (those meeting `condition`). */
export async function findThreadStats(
  q: WorkspaceBound,
  workspaceId: string,
  projectId: string,
  threadId: string,
  condition: RunCondition | undefined,
): Promise<ThreadStatsRow> {
  const where: SqlFragment[] = [
    q`run.session_id = ${projectId}::uuid`,
    q`run.is_root`,
    q`${threadOf(q, "run")} = ${threadId}::text`,
  ];
  if (condition) where.push(runFilterSql(q, condition, "run"));
  const iso = (value: SqlFragment) => q`to_char(${value} at time zone 'UTC', ${ISO_MICROS})`;
  const latency = q`extract(epoch from (run.end_time - run.start_time))::float8`;
  const [row] = await q<ThreadStatsRow[]>`
    select count(*)::int as turns,
      ${iso(q`min(run.start_time)`)} as first_start_time, ${iso(q`max(run.start_time)`)} as last_start_time,
      ${iso(q`max(run.end_time)`)} as last_end_time,
      percentile_cont(0.5) within group (order by ${latency}) as latency_p50,
      percentile_cont(0.99) within group (order by ${latency}) as latency_p99,
      coalesce(array_agg(run.trace_id), '{}') as trace_ids
    from runs as run
    where ${inWorkspace(q, "run", workspaceId, where)}`;
  return row!;
}
