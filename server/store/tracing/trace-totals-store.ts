import type { Queryable } from "../db.js";
import type { SqlFragment } from "../filters/run-filter-sql.js";
import { inWorkspace } from "../filters/sql-conditions.js";
import type { WorkspaceBound } from "./workspace-scope.js";

/**
 * Token, cost and first-token totals of one trace. Decimal text (bigint and numeric sums), null
 * when no run of the trace has the measure; times ISO 8601 UTC with microseconds.
 */
export interface TraceTotals {
  total_tokens: string | null;
  prompt_tokens: string | null;
  completion_tokens: string | null;
  total_cost: string | null;
  prompt_cost: string | null;
  completion_cost: string | null;
  first_token_time: string | null;
}

/** ISO 8601 UTC with exactly six fractional digits, as the run queries return times. */
const ISO_MICROS = `YYYY-MM-DD"T"HH24:MI:SS.US"Z"`;

/** Whether the run aliased `alias` carries any token count or cost of its own. */
function hasUsage(q: Queryable, alias: string): SqlFragment {
  const c = (column: string) => q`${q(alias)}.${q(column)}`;
  return q`(${c("total_tokens")} is not null or ${c("prompt_tokens")} is not null
    or ${c("completion_tokens")} is not null or ${c("total_cost")} is not null
    or ${c("prompt_cost")} is not null or ${c("completion_cost")} is not null)`;
}

/**
 * The totals of each of `traceIds` (those of the workspace that have runs). Usage is counted where
 * it arose: a run counts only when no run below it in its trace carries usage, so a parent that
 * already holds its descendants' totals (a rolled-up root) is not counted twice, and a trace sent
 * before any rollup adds up its LLM runs.
 */
export async function findTraceTotals(
  q: WorkspaceBound,
  workspaceId: string,
  traceIds: readonly string[],
): Promise<Map<string, TraceTotals>> {
  if (traceIds.length === 0) return new Map();
  const below = q`exists (
    select 1 from runs as below
    where ${inWorkspace(q, "below", workspaceId, [
      q`below.trace_id = run.trace_id`,
      q`below.parent_run_ids @> array[run.id]`,
      hasUsage(q, "below"),
    ])})`;
  const rows = await q<(TraceTotals & { trace_id: string })[]>`
    select counted.trace_id,
      sum(counted.total_tokens) filter (where counted.leaf) as total_tokens,
      sum(counted.prompt_tokens) filter (where counted.leaf) as prompt_tokens,
      sum(counted.completion_tokens) filter (where counted.leaf) as completion_tokens,
      sum(counted.total_cost) filter (where counted.leaf) as total_cost,
      sum(counted.prompt_cost) filter (where counted.leaf) as prompt_cost,
      sum(counted.completion_cost) filter (where counted.leaf) as completion_cost,
      to_char(min(counted.first_token_time) at time zone 'UTC', ${ISO_MICROS}) as first_token_time
    from (
      select run.trace_id, run.total_tokens, run.prompt_tokens, run.completion_tokens, run.total_cost,
        run.prompt_cost, run.completion_cost, run.first_token_time,
        ${hasUsage(q, "run")} and not ${below} as leaf
      from runs as run
      where ${inWorkspace(q, "run", workspaceId, [q`run.trace_id = any(${[...traceIds]}::uuid[])`])}
    ) as counted
    group by counted.trace_id`;
  return new Map(rows.map(({ trace_id, ...totals }) => [trace_id, totals]));
}
