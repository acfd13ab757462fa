import type { WorkspaceBound } from "../store/tracing/workspace-scope.js";

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
  const pending = [...pendingCounts(traces)]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([workspace_id, counts]) => ({ workspace_id, counts }));
  await tx`
    insert into usage_pending (workspace_id, counts)
    select workspace_id, counts
    from jsonb_to_recordset(${tx.json(pending as never)}::jsonb) as p (workspace_id uuid, counts jsonb)`;
}

/** Milliseconds of a UTC hour and day (JavaScript time has no leap seconds). */
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** The granularities of the rollups, in the order counts are added, with their UTC bucket's start. */
const GRANULARITIES = [
  { name: "day", start: (ms: number) => Math.floor(ms / DAY_MS) * DAY_MS },
  { name: "hour", start: (ms: number) => Math.floor(ms / HOUR_MS) * HOUR_MS },
] as const;

/** One row of a `usage_pending.counts` array (migration 0023). */
interface PendingCount {
  ord: number;
  dimension: string;
  granularity: string;
  bucket_start: string;
  dimension_id: string;
  traces: number;
}

/**
 * The `usage_pending.counts` of each workspace: one row per rollup row the traces add to, each with
 * its number of traces, numbered in the one fixed order the trigger adds them in (granularity, then
 * dimension, bucket start and id). Counted here rather than by Postgres, where the grouping, the
 * window numbering and the time-zone truncation of a batch's few traces cost more than all of this:
 * in perf of bench:ingest's shape, the window alone was 3 % of Postgres's CPU per batch.
 *
 * The traces of a batch nearly all share their dimensions and hour: they are counted by those
 * first, and each distinct combination then adds its count to its eight rows.
 */
function pendingCounts(traces: readonly TraceUsage[]): Map<string, PendingCount[]> {
  const combinations = new Map<
    string,
    { workspaceId: string; dimensions: (readonly [string, string])[]; hour: number; n: number }
  >();
  for (const trace of traces) {
    const workspaceId = trace.workspaceId.toLowerCase();
    const projectId = trace.projectId.toLowerCase();
    const userId = (trace.userId ?? NO_DIMENSION_ID).toLowerCase();
    const apiKeyId = (trace.apiKeyId ?? NO_DIMENSION_ID).toLowerCase();
    const hour = Math.floor(trace.receivedAt.getTime() / HOUR_MS) * HOUR_MS;
    const key = `${workspaceId}${projectId}${userId}${apiKeyId}${hour}`;
    const combination = combinations.get(key);
    if (combination !== undefined) combination.n += 1;
    else
      combinations.set(key, {
        workspaceId,
        dimensions: [
          ["workspace", workspaceId],
          ["project", projectId],
          ["user", userId],
          ["api_key", apiKeyId],
        ],
        hour,
        n: 1,
      });
  }
  const byWorkspace = new Map<string, Map<string, PendingCount & { sortKey: string }>>();
  for (const { workspaceId, dimensions, hour, n } of combinations.values()) {
    const rows = byWorkspace.get(workspaceId) ?? new Map();
    byWorkspace.set(workspaceId, rows);
    GRANULARITIES.forEach((granularity, g) => {
      const bucket = new Date(granularity.start(hour)).toISOString();
      dimensions.forEach(([dimension, id], d) => {
        // Same-length parts (one digit each, a fixed-format time, a lower-case uuid): compared as text,
        // they order as the trigger must add them, and the key names the rollup row.
        const sortKey = `${g}${d}${bucket}${id}`;
        const row = rows.get(sortKey);
        if (row !== undefined) row.traces += n;
        else
          rows.set(sortKey, {
            sortKey,
            ord: 0,
            dimension,
            granularity: granularity.name,
            bucket_start: bucket,
            dimension_id: id,
            traces: n,
          });
      });
    });
  }
  const counts = new Map<string, PendingCount[]>();
  for (const [workspaceId, rows] of byWorkspace) {
    const ordered = [...rows.values()].sort((a, b) => (a.sortKey < b.sortKey ? -1 : 1));
    counts.set(
      workspaceId,
      ordered.map(({ sortKey: _, ...row }, i) => ({ ...row, ord: i + 1 })),
    );
  }
  return counts;
}
