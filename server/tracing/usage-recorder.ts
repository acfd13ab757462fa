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
 * dimensions (workspace, project, user, API key). See {@link recordTracesUsage}.
 */
export async function recordTraceUsage(tx: WorkspaceBound, trace: TraceUsage): Promise<void> {
  await recordTracesUsage(tx, [trace]);
}

/**
 * Counts new traces in the usage rollups: each adds 1 to the hourly and daily row of each of its
 * four dimensions (workspace, project, user, API key). Call it inside the transaction that first
 * inserts the root runs, so the counts commit or roll back with the traces and a trace is counted
 * exactly once.
 *
 * One statement for all the traces of a batch: the rows they share (the workspace's, the project's,
 * the key's, of this hour and day) get the batch's count once, not once per trace. The counts go to
 * `usage_pending` as one row per workspace, and Postgres adds them to `usage_rollups` as the
 * transaction commits (migration 0023): every batch of a workspace adds to those same rows, and
 * holding them from here to the commit queued concurrent batches behind a round trip to this
 * process. They are added in the order listed here, one fixed order (daily before hourly, the
 * workspace row first, then by bucket and id), so concurrent commits queue on the same first row
 * instead of deadlocking.
 */
export async function recordTracesUsage(tx: WorkspaceBound, traces: readonly TraceUsage[]): Promise<void> {
  if (traces.length === 0) return;
  const records = traces.map((trace) => ({
    workspace_id: trace.workspaceId,
    project_id: trace.projectId,
    user_id: trace.userId ?? NO_DIMENSION_ID,
    api_key_id: trace.apiKeyId ?? NO_DIMENSION_ID,
    received_at: trace.receivedAt.toISOString(),
  }));
  await tx`
    insert into usage_pending (workspace_id, counts)
    select workspace_id, jsonb_agg(jsonb_build_object(
      'ord', ord, 'dimension', dimension, 'granularity', granularity, 'bucket_start', bucket_start,
      'dimension_id', dimension_id, 'traces', traces) order by ord)
    from (
      select t.workspace_id, d.dimension, g.granularity,
             date_trunc(g.granularity, t.received_at, 'UTC') as bucket_start, d.id as dimension_id,
             count(*) as traces,
             row_number() over (order by g.ord, d.ord, date_trunc(g.granularity, t.received_at, 'UTC'), d.id) as ord
      from jsonb_to_recordset(${tx.json(records as never)}::jsonb) as t (
        workspace_id uuid, project_id uuid, user_id uuid, api_key_id uuid, received_at timestamptz)
      cross join (values (1, 'day'), (2, 'hour')) as g (ord, granularity)
      cross join lateral (values (1, 'workspace', t.workspace_id), (2, 'project', t.project_id),
                                 (3, 'user', t.user_id), (4, 'api_key', t.api_key_id)) as d (ord, dimension, id)
      group by g.ord, g.granularity, d.ord, d.dimension, t.workspace_id, bucket_start, d.id
    ) as counts
    group by workspace_id
    order by workspace_id`;
}
