import type { Queryable } from "./db.js";

/**
 * Counts for operators' metrics. These span every workspace on purpose: they are aggregates that
 * name no workspace, served to the monitoring of the installation, never to a tenant's request.
 */

/** Runs waiting and executing now, across every process. */
export interface LiveRunCounts {
  readonly pending: number;
  readonly running: number;
}

/**
 * Runs pending and running. Each count matches the predicate of a partial index
 * (agent_runs_pending_idx, agent_runs_lease_idx), so it reads those small indexes, never the table
 * of finished runs.
 */
export async function countLiveRuns(q: Queryable): Promise<LiveRunCounts> {
  const [row] = await q<{ pending: number; running: number }[]>`
    select
      (select count(*) from agent_runs where status = 'pending')::int as pending,
      (select count(*) from agent_runs where status = 'running')::int as running`;
  return row ?? { pending: 0, running: 0 };
}

/**
 * Bulk export partitions (bulk_export_runs) by status. A partition is one day of one export, so the
 * table stays small (thousands of rows for years of daily exports) and a grouped scan is cheap.
 */
export async function countExportPartitions(q: Queryable): Promise<Map<string, number>> {
  const rows = await q<{ status: string; partitions: number }[]>`
    select status, count(*)::int as partitions from bulk_export_runs group by status`;
  return new Map(rows.map((row) => [row.status, row.partitions]));
}

/**
 * The server connections of one pool, by backend state (`active`, `idle`, `idle in transaction`,
 * ...), found by the pool's unique application_name. Includes the connection asking.
 */
export async function countPoolConnections(
  q: Queryable,
  applicationName: string,
): Promise<Map<string, number>> {
  const rows = await q<{ state: string; connections: number }[]>`
    select coalesce(state, 'unknown') as state, count(*)::int as connections
    from pg_stat_activity
    where application_name = ${applicationName}
    group by 1`;
  return new Map(rows.map((row) => [row.state, row.connections]));
}

/** How many spans wait for a parent, in every workspace, and how long the oldest has waited. */
export interface WaitingSpanCounts {
  readonly spans: number;
  readonly oldestWaitSeconds: number;
}

/**
 * {@link WaitingSpanCounts}, across workspaces (as every count here). The table
 * holds only spans in flight, so the count stays small; the age reads otel_pending_spans_received_idx.
 */
export async function countWaitingSpans(q: Queryable): Promise<WaitingSpanCounts> {
  const [row] = await q<{ spans: number; oldest: number }[]>`
    select count(*)::int as spans,
      coalesce(extract(epoch from now() - min(received_at)), 0)::float8 as oldest
    from otel_pending_spans`;
  return { spans: row?.spans ?? 0, oldestWaitSeconds: row?.oldest ?? 0 };
}
