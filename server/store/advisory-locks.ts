import type { WorkspaceBound } from "./tracing/workspace-scope.js";

/**
 * The kinds of transaction-scoped advisory locks, each hashed with its own seed so that their keys
 * do not meet: a root run's id is also its trace's.
 */
export const LOCK_SEED = {
  /** A trace's rollup (trace-rollup-store.ts). */
  trace: 0,
  /** A run's feedback stats (feedback-store.ts). */
  runFeedback: 1,
  /** An OTel trace's spans waiting for their parents (otel-pending-store.ts). */
  otelTrace: 2,
} as const;

/**
 * Takes a transaction-scoped advisory lock on each of `ids` in the workspace, in key order, so that
 * two transactions locking overlapping sets never wait on each other in a cycle. One statement
 * whatever the number of ids; none for an empty list.
 */
export async function lockIds(
  q: WorkspaceBound,
  workspaceId: string,
  ids: readonly string[],
  seed: (typeof LOCK_SEED)[keyof typeof LOCK_SEED],
): Promise<void> {
  if (ids.length === 0) return;
  await q`
    select pg_advisory_xact_lock(key)
    from (
      select distinct hashtextextended(${workspaceId}::text || id, ${seed}) as key
      from unnest(${[...ids]}::text[]) as id
    ) as keys
    order by key`;
}
