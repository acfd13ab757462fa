import type { Queryable } from "../db.js";

/** What an export is doing, as the API shows it; `IntervalScheduled` is a live schedule. */
export type ExportStatus =
  | "Created"
  | "Running"
  | "Completed"
  | "Failed"
  | "Cancelled"
  | "TimedOut"
  | "IntervalScheduled";

/** Statuses an export never leaves. */
export const FINISHED_EXPORT_STATUSES: readonly ExportStatus[] = [
  "Completed",
  "Failed",
  "Cancelled",
  "TimedOut",
];

/** A bulk export row. */
export interface ExportRecord {
  id: string;
  workspaceId: string;
  destinationId: string;
  sessionId: string;
  startTime: Date;
  /** Exclusive; null for a schedule. */
  endTime: Date | null;
  filter: string | null;
  /** null: every exportable field. */
  exportFields: string[] | null;
  intervalHours: number | null;
  formatVersion: string;
  compression: string;
  status: ExportStatus;
  sourceBulkExportId: string | null;
  nextWindowStart: Date | null;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
}

/** The fields of a new export: a record without its timestamps, in one of the two first statuses. */
export type NewExport = Omit<ExportRecord, "status" | "createdAt" | "updatedAt" | "finishedAt"> & {
  status: "Created" | "IntervalScheduled";
};

interface ExportRow {
  id: string;
  workspace_id: string;
  destination_id: string;
  session_id: string;
  start_time: Date;
  end_time: Date | null;
  filter: string | null;
  export_fields: string[] | null;
  interval_hours: number | null;
  format_version: string;
  compression: string;
  status: ExportStatus;
  source_bulk_export_id: string | null;
  next_window_start: Date | null;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
}

function toRecord(row: ExportRow): ExportRecord {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    destinationId: row.destination_id,
    sessionId: row.session_id,
    startTime: row.start_time,
    endTime: row.end_time,
    filter: row.filter,
    exportFields: row.export_fields,
    intervalHours: row.interval_hours,
    formatVersion: row.format_version,
    compression: row.compression,
    status: row.status,
    sourceBulkExportId: row.source_bulk_export_id,
    nextWindowStart: row.next_window_start,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    finishedAt: row.finished_at,
  };
}

/**
 * Inserts an export. A spawned window that exists already (the unique spawn key) inserts nothing
 * and returns undefined, so two processes spawning the same window create it once.
 */
export async function insertExport(q: Queryable, e: NewExport): Promise<ExportRecord | undefined> {
  const [row] = await q<ExportRow[]>`
    insert into bulk_exports (
      id, workspace_id, destination_id, session_id, start_time, end_time, filter, export_fields,
      interval_hours, format_version, compression, status, source_bulk_export_id, next_window_start)
    values (
      ${e.id}, ${e.workspaceId}, ${e.destinationId}, ${e.sessionId}, ${e.startTime}, ${e.endTime},
      ${e.filter}, ${e.exportFields}::text[], ${e.intervalHours}, ${e.formatVersion}, ${e.compression},
      ${e.status}, ${e.sourceBulkExportId}, ${e.nextWindowStart})
    on conflict (source_bulk_export_id, start_time) where source_bulk_export_id is not null do nothing
    returning *`;
  return row && toRecord(row);
}

/** An export of the workspace, or undefined. */
export async function findExport(
  q: Queryable,
  workspaceId: string,
  id: string,
): Promise<ExportRecord | undefined> {
  const [row] = await q<ExportRow[]>`
    select * from bulk_exports where workspace_id = ${workspaceId} and id = ${id}`;
  return row && toRecord(row);
}

/** The workspace's exports, newest first. */
export async function listExports(
  q: Queryable,
  workspaceId: string,
  page: { limit: number; offset: number },
): Promise<ExportRecord[]> {
  const rows = await q<ExportRow[]>`
    select * from bulk_exports where workspace_id = ${workspaceId}
    order by created_at desc, id desc
    limit ${page.limit} offset ${page.offset}`;
  return rows.map(toRecord);
}

/**
 * Moves an unfinished export (or a live schedule) to a finished status and every unfinished run of
 * it to `runStatus`; running attempts see it at their next heartbeat and stop. Returns the export
 * as it is afterwards, or undefined when the workspace has no such export. An export already
 * finished is returned unchanged.
 */
export async function finishExport(
  q: Queryable,
  workspaceId: string,
  id: string,
  status: Exclude<ExportStatus, "Created" | "Running" | "IntervalScheduled" | "Completed">,
  runStatus: "Cancelled" | "TimedOut",
): Promise<ExportRecord | undefined> {
  const [row] = await q<ExportRow[]>`
    update bulk_exports set status = ${status}, finished_at = now(), updated_at = now()
    where workspace_id = ${workspaceId} and id = ${id}
      and status in ('Created', 'Running', 'IntervalScheduled')
    returning *`;
  if (!row) return findExport(q, workspaceId, id);
  await q`
    update bulk_export_runs set status = ${runStatus}, finished_at = now(), updated_at = now()
    where workspace_id = ${workspaceId} and bulk_export_id = ${id} and status in ('Created', 'Running')`;
  return toRecord(row);
}

/** Marks an export Running when its first run starts. */
export async function markExportRunning(q: Queryable, workspaceId: string, id: string): Promise<void> {
  await q`
    update bulk_exports set status = 'Running', updated_at = now()
    where workspace_id = ${workspaceId} and id = ${id} and status = 'Created'`;
}

/** Marks a running export Completed when every one of its runs is; true when it did. */
export async function completeExportIfDone(q: Queryable, workspaceId: string, id: string): Promise<boolean> {
  const rows = await q`
    update bulk_exports as e set status = 'Completed', finished_at = now(), updated_at = now()
    where e.workspace_id = ${workspaceId} and e.id = ${id} and e.status in ('Created', 'Running')
      and not exists (
        select 1 from bulk_export_runs as r
        where r.workspace_id = e.workspace_id and r.bulk_export_id = e.id and r.status <> 'Completed')
    returning e.id`;
  return rows.length > 0;
}

/** Unfinished exports created more than `timeoutSeconds` ago, as (workspace, id) pairs. */
export async function findOverdueExports(
  q: Queryable,
  timeoutSeconds: number,
): Promise<{ workspaceId: string; id: string }[]> {
  return q<{ workspaceId: string; id: string }[]>`
    select workspace_id as "workspaceId", id from bulk_exports
    where status in ('Created', 'Running') and created_at < now() - make_interval(secs => ${timeoutSeconds})`;
}

/** Workspaces with runs waiting for capacity: the dispatcher's safety net looks at these. */
export async function findWorkspacesWithWaitingRuns(q: Queryable): Promise<string[]> {
  const rows = await q<{ workspace_id: string }[]>`
    select distinct workspace_id from bulk_export_runs where status = 'Created' and queued_at is null`;
  return rows.map((r) => r.workspace_id);
}

/** Live schedules whose next window is due at `now`: it ended `delaySeconds` before `now` or earlier. */
export async function findDueSchedules(
  q: Queryable,
  now: Date,
  delaySeconds: number,
): Promise<{ workspaceId: string; id: string }[]> {
  return q<{ workspaceId: string; id: string }[]>`
    select workspace_id as "workspaceId", id from bulk_exports
    where status = 'IntervalScheduled'
      and next_window_start + make_interval(hours => interval_hours, secs => ${delaySeconds}) <= ${now}`;
}

/**
 * Locks a live schedule until the transaction ends and returns it; undefined when it is no longer
 * live or another transaction holds it (that one spawns its windows).
 */
export async function lockSchedule(
  q: Queryable,
  workspaceId: string,
  id: string,
): Promise<ExportRecord | undefined> {
  const [row] = await q<ExportRow[]>`
    select * from bulk_exports
    where workspace_id = ${workspaceId} and id = ${id} and status = 'IntervalScheduled'
    for update skip locked`;
  return row && toRecord(row);
}

/** Moves a schedule's next window on. */
export async function advanceSchedule(q: Queryable, id: string, nextWindowStart: Date): Promise<void> {
  await q`
    update bulk_exports set next_window_start = ${nextWindowStart}, updated_at = now() where id = ${id}`;
}
