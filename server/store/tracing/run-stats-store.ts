import type { Queryable } from "../db.js";
import { inWorkspace } from "../filters/sql-conditions.js";
import { type RunSelection, runSelectionConditions } from "./run-query-store.js";
import type { WorkspaceBound } from "./workspace-scope.js";

/** Aggregates over a selection of runs, as Postgres returns them (numerics as decimal strings). */
export interface RunStatsRow {
  run_count: number;
  latency_p50: number | null;
  latency_p99: number | null;
  first_token_p50: number | null;
  first_token_p99: number | null;
  total_tokens: string | null;
  prompt_tokens: string | null;
  completion_tokens: string | null;
  median_tokens: number | null;
  total_cost: string | null;
  prompt_cost: string | null;
  completion_cost: string | null;
  /** ISO 8601 UTC with microseconds. */
  last_run_start_time: string | null;
  error_count: number;
  streamed_count: number;
}

/** ISO 8601 UTC with exactly six fractional digits. */
const ISO_MICROS = `YYYY-MM-DD"T"HH24:MI:SS.US"Z"`;

/**
 * Count, latency and first-token percentiles (seconds), token and cost sums, error and streamed
 * counts of the runs of `selection`, in one pass over them.
 */
export async function runStats(q: WorkspaceBound, selection: RunSelection): Promise<RunStatsRow> {
  const seconds = (from: string, to: string) =>
    q`extract(epoch from (${col(q, to)} - ${col(q, from)}))::float8`;
  const [row] = await q<RunStatsRow[]>`
    select
      count(*)::int as run_count,
      percentile_cont(0.5) within group (order by ${seconds("start_time", "end_time")}) as latency_p50,
      percentile_cont(0.99) within group (order by ${seconds("start_time", "end_time")}) as latency_p99,
      percentile_cont(0.5) within group (order by ${seconds("start_time", "first_token_time")}) as first_token_p50,
      percentile_cont(0.99) within group (order by ${seconds("start_time", "first_token_time")}) as first_token_p99,
      sum(run.total_tokens) as total_tokens,
      sum(run.prompt_tokens) as prompt_tokens,
      sum(run.completion_tokens) as completion_tokens,
      percentile_cont(0.5) within group (order by run.total_tokens) as median_tokens,
      sum(run.total_cost) as total_cost,
      sum(run.prompt_cost) as prompt_cost,
      sum(run.completion_cost) as completion_cost,
      to_char(max(run.start_time) at time zone 'UTC', ${ISO_MICROS}) as last_run_start_time,
      (count(*) filter (where run.error is not null))::int as error_count,
      (count(*) filter (where run.first_token_time is not null))::int as streamed_count
    from runs as run
    where ${inWorkspace(q, "run", selection.workspaceId, runSelectionConditions(q, selection))}`;
  if (!row) throw new Error("an aggregate query returned no row");
  return row;
}

function col(q: Queryable, column: string) {
  return q`${q("run")}.${q(column)}`;
}
