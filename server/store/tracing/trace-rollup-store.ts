/**
 * Rollups onto the root (migration 0017): a trace's root run shows the totals of its trace (token
 * counts and costs summed over the root's own values and every descendant's, and the earliest
 * first_token_time). The ingest recomputes them from the stored rows of every trace a batch
 * touches, so the order in which posts and patches arrive, and re-sends, do not matter.
 *
 * Two batches of one trace in concurrent transactions would each sum what their snapshot shows and
 * the later write would drop the other's runs; {@link lockTraces} serialises them per trace.
 */
import { LOCK_SEED, lockIds } from "../advisory-locks.js";
import type { WorkspaceBound } from "./workspace-scope.js";

/**
 * Takes a transaction-scoped advisory lock on each trace (ordered, so two batches never wait on each
 * other in a cycle). Taken before a batch writes its runs, the recompute after the writes sees every
 * committed run of the trace, and a concurrent batch of the same trace waits for this one.
 */
export function lockTraces(
  q: WorkspaceBound,
  workspaceId: string,
  traceIds: readonly string[],
): Promise<void> {
  return lockIds(q, workspaceId, traceIds, LOCK_SEED.trace);
}

/**
 * The traces of stored runs by id (runs not stored are left out), so that a batch can lock the
 * traces of runs it updates without their trace id before it writes anything.
 */
export async function storedTraceIds(
  q: WorkspaceBound,
  workspaceId: string,
  runIds: readonly string[],
): Promise<string[]> {
  if (runIds.length === 0) return [];
  const rows = await q<{ trace_id: string }[]>`
    select distinct trace_id::text from runs
    where workspace_id = ${workspaceId} and id = any(${[...runIds]}::uuid[])`;
  return rows.map((row) => row.trace_id);
}

/**
 * Recomputes the totals of each trace onto its root run; rows whose totals did not change are not
 * written. A trace whose root is not stored yet gets its totals when the root arrives.
 *
 * The totals are materialized, so the statement sums each trace once, and the roots are looked up
 * by their trace as well as their id (a root's trace_id is its id): whichever index on `runs` the
 * planner picks, it then reads only the batch's traces. Right after a bulk load, before autovacuum
 * analyzes `runs`, its statistics show a near-empty table; with row-level security's workspace
 * condition on every index it otherwise chose the trace index with the workspace alone and filtered
 * every run of the workspace for the roots (measured with auto_explain, bench:ingest's shape: 12–18 ms
 * per batch of ten traces at 5,000 runs and growing with the table, against 0.6 ms).
 */
export async function rollUpTraces(
  q: WorkspaceBound,
  workspaceId: string,
  traceIds: readonly string[],
): Promise<void> {
  if (traceIds.length === 0) return;
  const traces = [...traceIds];
  await q`
    with totals as materialized (
      select trace_id,
        sum(case when is_root then own_total_tokens else total_tokens end) as total_tokens,
        sum(case when is_root then own_prompt_tokens else prompt_tokens end) as prompt_tokens,
        sum(case when is_root then own_completion_tokens else completion_tokens end) as completion_tokens,
        sum(case when is_root then own_total_cost else total_cost end) as total_cost,
        sum(case when is_root then own_prompt_cost else prompt_cost end) as prompt_cost,
        sum(case when is_root then own_completion_cost else completion_cost end) as completion_cost,
        min(case when is_root then own_first_token_time else first_token_time end) as first_token_time
      from runs
      where workspace_id = ${workspaceId} and trace_id = any(${traces}::uuid[])
      group by trace_id
    )
    update runs set
      total_tokens = totals.total_tokens,
      prompt_tokens = totals.prompt_tokens,
      completion_tokens = totals.completion_tokens,
      total_cost = totals.total_cost,
      prompt_cost = totals.prompt_cost,
      completion_cost = totals.completion_cost,
      first_token_time = totals.first_token_time
    from totals
    where runs.workspace_id = ${workspaceId} and runs.trace_id = any(${traces}::uuid[])
      and runs.id = any(${traces}::uuid[]) and runs.id = totals.trace_id and runs.is_root
      and (runs.total_tokens, runs.prompt_tokens, runs.completion_tokens, runs.total_cost,
           runs.prompt_cost, runs.completion_cost, runs.first_token_time)
        is distinct from
          (totals.total_tokens, totals.prompt_tokens, totals.completion_tokens, totals.total_cost,
           totals.prompt_cost, totals.completion_cost, totals.first_token_time)`;
}
