import type { WorkspaceBound } from "../store/workspace-scope.js";

/** The nil UUID: the dimension value of a trace sent without a user (service key) or without a key. */
export const NO_DIMENSION_ID = "00000000-0000-0000-0000-000000000000";

/** One newly received trace (its root run), as the ingest knows it. */
export interface TraceUsage {
  /** The workspace (tenant) the trace belongs to. */
  workspaceId: string;
  /** The tracing project (session) of the root run. */
  projectId: string;
  /** The user of the personal key that sent it; null for a service key. */
  userId: string | null;
  /** The API key that sent it; null when no key was involved. */
  apiKeyId: string | null;
  /** When the root run was first received; the trace counts in the UTC hour and day of this instant. */
  receivedAt: Date;
}

/**
 * Counts one trace in the usage rollups: +1 in the hourly and daily row of each of its four
 * dimensions (workspace, project, user, API key). Call it inside the transaction that first inserts
 * the root run, so the count commits or rolls back with the trace and a trace is counted exactly once.
 *
 * One statement upserts all eight rows in a fixed order — daily before hourly, the workspace row
 * first — so concurrent ingests of one workspace queue on the same first row instead of deadlocking.
 * The rows are per hour/day and per dimension value, so that wait is the only contention, and it lasts
 * only until the ingest transaction commits.
 */
export async function recordTraceUsage(tx: WorkspaceBound, trace: TraceUsage): Promise<void> {
  const userId = trace.userId ?? NO_DIMENSION_ID;
  const apiKeyId = trace.apiKeyId ?? NO_DIMENSION_ID;
  await tx`
    insert into usage_rollups as u (workspace_id, dimension, granularity, bucket_start, dimension_id, traces)
    select ${trace.workspaceId}::uuid, d.dimension, g.granularity,
           date_trunc(g.granularity, ${trace.receivedAt}::timestamptz, 'UTC'), d.id, 1
    from (values (1, 'day'), (2, 'hour')) as g (ord, granularity)
    cross join (values (1, 'workspace', ${trace.workspaceId}::uuid), (2, 'project', ${trace.projectId}::uuid),
                       (3, 'user', ${userId}::uuid), (4, 'api_key', ${apiKeyId}::uuid)) as d (ord, dimension, id)
    order by g.ord, d.ord
    on conflict (workspace_id, dimension, granularity, bucket_start, dimension_id)
    do update set traces = u.traces + 1`;
}
