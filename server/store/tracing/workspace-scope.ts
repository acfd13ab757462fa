/**
 * Workspace scopes: how a request reaches the tracing tables (tracing_projects, runs, run_feedback,
 * run_attachments, usage_rollups). Every query names its workspace (`inWorkspace`), and beneath that
 * row-level security (migration 0020) confines a scoped transaction to its workspaces whatever its SQL
 * says: a condition that is forgotten or bound wrongly yields nothing of another workspace.
 *
 * The tracing stores take a {@link WorkspaceBound} connection, which only this module makes: a
 * request gets one from {@link inWorkspaceScope}; what runs without the scope says so with
 * {@link unconfined}. So a new path to those tables cannot skip the scope
 * without saying so.
 *
 * A scope costs about 0.45 ms of CPU per request (begin, the scope and commit: three statements
 * more), measured with bench:ingest. That is noise beside a page of runs, an ingest batch or a
 * usage query, and is paid there; it would be a third of a read of one run by id, whose only
 * condition is the workspace and the key, so that read runs {@link unconfined} (README, "Tenant
 * isolation").
 */

import { pipelinedTransaction } from "../batching/pipelined-transaction.js";
import type { Queryable, Sql } from "../db.js";

declare const workspaceBound: unique symbol;

/**
 * A connection whose access to the tracing tables is settled: confined by row-level security to the
 * workspaces of a scope, or declared to span every workspace.
 */
export type WorkspaceBound = Queryable & { readonly [workspaceBound]: true };

/** The role the tracing tables' row-level security policies apply to (migration 0020). */
const TENANT_ROLE = "agentplane_tenant";

/** How a scoped transaction is planned, beyond its confinement. */
interface ScopeOptions {
  /**
   * Plan every statement of the transaction (the commit-time triggers' included) once per
   * connection and reuse that plan (`plan_cache_mode = force_generic_plan`, until the transaction
   * ends), rather than letting Postgres plan each execution anew for its parameters. For a write
   * path of fixed statements whose best plan does not depend on the values (each reads by its keys):
   * an ingest batch spent about 0.6 ms of its Postgres CPU planning its dozen statements, a tenth
   * of the batch's (bench:ingest, pg_stat_statements with track_planning). Not for the reads, whose
   * filters and page sizes do change the best plan.
   */
  genericPlans?: boolean;
}

/** Switches the current transaction to {@link TENANT_ROLE}, seeing `workspaceIds` only. */
function scopeStatement(q: Queryable, workspaceIds: readonly string[], { genericPlans }: ScopeOptions) {
  const ids = [...workspaceIds];
  // Two texts rather than a parameter: each is one prepared statement, planned once.
  return genericPlans
    ? q`
    select set_config('role', ${TENANT_ROLE}, true),
           set_config('agentplane.workspace_ids', ${ids}::uuid[]::text, true),
           set_config('plan_cache_mode', 'force_generic_plan', true)`
    : q`
    select set_config('role', ${TENANT_ROLE}, true),
           set_config('agentplane.workspace_ids', ${ids}::uuid[]::text, true)`;
}

/**
 * Runs `work` in a transaction confined to `workspaceIds`: under row-level security it reads and
 * writes rows of the tracing tables of those workspaces only (none for an empty list). `begin`, the
 * scope and the first statement of `work` go to Postgres together ({@link pipelinedTransaction}), so
 * a one-statement read costs one round trip. Commits when `work` resolves, rolls back when it throws.
 */
export function inWorkspaceScope<T>(
  sql: Sql,
  workspaceIds: readonly string[],
  work: (q: WorkspaceBound) => Promise<T>,
): Promise<T> {
  return scoped(sql, workspaceIds, work, {});
}

/**
 * {@link inWorkspaceScope} with {@link ScopeOptions.genericPlans}: for a write path of fixed
 * statements, such as trace ingest. `work` may send COMMIT behind its last statements rather than
 * wait for their answers first (`commit` of {@link pipelinedTransaction}).
 */
export function inWorkspaceScopeWithGenericPlans<T>(
  sql: Sql,
  workspaceIds: readonly string[],
  work: (q: WorkspaceBound, commit: () => Promise<void>) => Promise<T>,
): Promise<T> {
  return scoped(sql, workspaceIds, work, { genericPlans: true });
}

async function scoped<T>(
  sql: Sql,
  workspaceIds: readonly string[],
  work: (q: WorkspaceBound, commit: () => Promise<void>) => Promise<T>,
  options: ScopeOptions,
): Promise<T> {
  return pipelinedTransaction(sql, async ({ tx, commit }) => {
    const scope = scopeStatement(tx, workspaceIds, options);
    // Awaited below, after `work`; this handler only keeps an early failure from being unhandled
    // while `work` runs (its own statements then fail on the aborted transaction).
    scope.catch(() => undefined);
    let result: T;
    try {
      result = await work(tx as unknown as WorkspaceBound, commit);
    } catch (error) {
      await scope; // a failed scope is the cause to report
      throw error;
    }
    await scope;
    return result;
  });
}

/**
 * `q` declared to work without a workspace scope, as the tables' owner, whom row-level security
 * does not confine: each of its queries must name the workspaces it means. For a background job
 * over every workspace, a test seeding data, and the one request path where a scope costs more than
 * it is worth (a read of one run by workspace and id).
 */
export function unconfined(q: Queryable): WorkspaceBound {
  return q as unknown as WorkspaceBound;
}
