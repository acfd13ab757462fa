import type { Queryable } from "../db.js";

/** What an export run (one partition of an export) is doing, as the API shows it. */
export type ExportRunStatus = "Created" | "Running" | "Completed" | "Failed" | "Cancelled" | "TimedOut";

/** A Parquet file an export run wrote, as its checkpoint records it. */
export interface ExportedFile {
  /** The object key in the bucket (it starts with the bucket name when the destination says so). */
  key: string;
  rows: number;
  bytes: number;
  /** Hex SHA-256 of the object's bytes. */
  sha256: string;
}

/** The keyset position of the last row written: runs are read in (start_time, id) order. */
export interface RunCursor {
  /** ISO 8601 UTC with six fractional digits. */
  startTime: string;
  id: string;
}

/** An export run row. */
export interface ExportRunRecord {
  id: string;
  workspaceId: string;
  bulkExportId: string;
  startTime: Date;
  endTime: Date;
  status: ExportRunStatus;
  retryNumber: number;
  /** `{retry_0: "...", retry_1: "..."}`. */
  errors: Record<string, string>;
  rowsWritten: number;
  files: ExportedFile[];
  cursor: RunCursor | null;
  manifestKey: string | null;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
}

interface RunRow {
  id: string;
  workspace_id: string;
  bulk_export_id: string;
  start_time: Date;
  end_time: Date;
  status: ExportRunStatus;
  retry_number: number;
  errors: Record<string, string>;
  rows_written: string;
  files: ExportedFile[];
  cursor_start_time: string | null;
  cursor_id: string | null;
  manifest_key: string | null;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
}

/** ISO 8601 UTC with exactly six fractional digits, so a cursor keeps Postgres's microseconds. */
const ISO_MICROS = `YYYY-MM-DD"T"HH24:MI:SS.US"Z"`;

function toRecord(row: RunRow): ExportRunRecord {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    bulkExportId: row.bulk_export_id,
    startTime: row.start_time,
    endTime: row.end_time,
    status: row.status,
    retryNumber: row.retry_number,
    errors: row.errors,
    rowsWritten: Number(row.rows_written),
    files: row.files,
    cursor:
      row.cursor_start_time !== null && row.cursor_id !== null
        ? { startTime: row.cursor_start_time, id: row.cursor_id }
        : null,
    manifestKey: row.manifest_key,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    finishedAt: row.finished_at,
  };
}

/** The columns of a run row, the cursor time as ISO text with microseconds. */
function columns(q: Queryable) {
  return q`
    r.id, r.workspace_id, r.bulk_export_id, r.start_time, r.end_time, r.status, r.retry_number,
    r.errors, r.rows_written, r.files,
    to_char(r.cursor_start_time at time zone 'UTC', ${ISO_MICROS}) as cursor_start_time, r.cursor_id,
    r.manifest_key, r.created_at, r.updated_at, r.finished_at`;
}

/** Inserts the runs (partitions) of a new export. */
export async function insertExportRuns(
  q: Queryable,
  runs: readonly { id: string; workspaceId: string; bulkExportId: string; startTime: Date; endTime: Date }[],
): Promise<void> {
  if (runs.length === 0) return;
  await q`
    insert into bulk_export_runs (id, workspace_id, bulk_export_id, start_time, end_time, status)
    select id, workspace_id, bulk_export_id, start_time, end_time, 'Created'
    from unnest(
      ${runs.map((r) => r.id)}::uuid[], ${runs.map((r) => r.workspaceId)}::uuid[],
      ${runs.map((r) => r.bulkExportId)}::uuid[], ${runs.map((r) => r.startTime.toISOString())}::timestamptz[],
      ${runs.map((r) => r.endTime.toISOString())}::timestamptz[]
    ) as t (id, workspace_id, bulk_export_id, start_time, end_time)`;
}

/** The runs of an export of the workspace, in partition order. */
export async function listExportRuns(
  q: Queryable,
  workspaceId: string,
  bulkExportId: string,
): Promise<ExportRunRecord[]> {
  const rows = await q<RunRow[]>`
    select ${columns(q)} from bulk_export_runs as r
    where r.workspace_id = ${workspaceId} and r.bulk_export_id = ${bulkExportId}
    order by r.start_time, r.id`;
  return rows.map(toRecord);
}

/**
 * The runs of every export of the workspace that schedule `sourceId` spawned, by export window
 * then partition.
 */
export async function listScheduledExportRuns(
  q: Queryable,
  workspaceId: string,
  sourceId: string,
): Promise<ExportRunRecord[]> {
  const rows = await q<RunRow[]>`
    select ${columns(q)} from bulk_export_runs as r
    join bulk_exports as e on e.workspace_id = r.workspace_id and e.id = r.bulk_export_id
    where r.workspace_id = ${workspaceId} and e.source_bulk_export_id = ${sourceId}
    order by e.start_time, r.start_time, r.id`;
  return rows.map(toRecord);
}

/** One run of an export of the workspace, or undefined. */
export async function findExportRun(
  q: Queryable,
  workspaceId: string,
  bulkExportId: string,
  runId: string,
): Promise<ExportRunRecord | undefined> {
  const [row] = await q<RunRow[]>`
    select ${columns(q)} from bulk_export_runs as r
    where r.workspace_id = ${workspaceId} and r.bulk_export_id = ${bulkExportId} and r.id = ${runId}`;
  return row && toRecord(row);
}

/** An export's count of runs handed to the queue and not finished, for the dispatcher. */
export interface DispatchCandidate {
  bulkExportId: string;
  inFlight: number;
  waiting: number;
}

/**
 * Serialises the dispatchers of one workspace until the transaction ends, and returns the
 * workspace's unfinished exports, oldest first, with their runs in flight and waiting.
 */
export async function lockDispatch(q: Queryable, workspaceId: string): Promise<DispatchCandidate[]> {
  await q`select pg_advisory_xact_lock(hashtextextended(${`bulk-export-dispatch:${workspaceId}`}, 0))`;
  return q<DispatchCandidate[]>`
    select e.id as "bulkExportId",
      count(*) filter (where r.queued_at is not null and r.status in ('Created', 'Running'))::int as "inFlight",
      count(*) filter (where r.queued_at is null and r.status = 'Created')::int as waiting
    from bulk_exports as e
    join bulk_export_runs as r on r.workspace_id = e.workspace_id and r.bulk_export_id = e.id
    where e.workspace_id = ${workspaceId} and e.status in ('Created', 'Running')
    group by e.id, e.created_at
    order by e.created_at, e.id`;
}

/** Marks up to `limit` waiting runs of an export queued, earliest partition first; returns their ids. */
export async function markRunsQueued(
  q: Queryable,
  workspaceId: string,
  bulkExportId: string,
  limit: number,
): Promise<string[]> {
  const rows = await q<{ id: string }[]>`
    update bulk_export_runs set queued_at = now(), updated_at = now()
    where id in (
      select id from bulk_export_runs
      where workspace_id = ${workspaceId} and bulk_export_id = ${bulkExportId}
        and status = 'Created' and queued_at is null
      order by start_time, id
      limit ${limit})
    returning id`;
  return rows.map((r) => r.id);
}

/** A run an attempt holds, with what the attempt needs of its export. */
export interface ClaimedRun {
  run: ExportRunRecord;
  /** The lease token every later write of this attempt is conditional on. */
  leaseToken: string;
}

/**
 * Takes the lease of a run for one attempt: only when the run and its export are unfinished and no
 * live lease holds it. Marks the run Running. Undefined when the attempt must not run.
 */
export async function claimExportRun(
  q: Queryable,
  opts: { workspaceId: string; runId: string; owner: string; leaseSeconds: number },
): Promise<ClaimedRun | undefined> {
  const [row] = await q<(RunRow & { lease_token: string })[]>`
    update bulk_export_runs as r set
      status = 'Running', lease_token = gen_random_uuid(), lease_owner = ${opts.owner},
      lease_expires_at = now() + make_interval(secs => ${opts.leaseSeconds}),
      started_at = coalesce(r.started_at, now()), updated_at = now()
    from bulk_exports as e
    where r.workspace_id = ${opts.workspaceId} and r.id = ${opts.runId}
      and e.workspace_id = r.workspace_id and e.id = r.bulk_export_id
      and e.status in ('Created', 'Running') and r.status in ('Created', 'Running')
      and (r.lease_expires_at is null or r.lease_expires_at < now())
    returning ${columns(q)}, r.lease_token`;
  return row && { run: toRecord(row), leaseToken: row.lease_token };
}

/** What a heartbeat learns about the run it renewed. */
export interface LeaseState {
  runStatus: ExportRunStatus;
  exportStatus: string;
  /** The export's destination was deleted meanwhile. */
  destinationDeleted: boolean;
}

/**
 * Renews an attempt's lease and reports the run's, its export's and its destination's state;
 * undefined when the attempt no longer holds the lease (another worker took the run over, or the
 * run was deleted).
 */
export async function renewExportRunLease(
  q: Queryable,
  runId: string,
  leaseToken: string,
  leaseSeconds: number,
): Promise<LeaseState | undefined> {
  const [row] = await q<LeaseState[]>`
    update bulk_export_runs as r set lease_expires_at = now() + make_interval(secs => ${leaseSeconds})
    from bulk_exports as e, bulk_export_destinations as d
    where r.id = ${runId} and r.lease_token = ${leaseToken}
      and e.workspace_id = r.workspace_id and e.id = r.bulk_export_id
      and d.workspace_id = e.workspace_id and d.id = e.destination_id
    returning r.status as "runStatus", e.status as "exportStatus", d.deleted_at is not null as "destinationDeleted"`;
  return row;
}

/**
 * Records a file that is in the bucket and the position after its last row, for the attempt that
 * holds the lease; false when it no longer does (nothing is recorded then).
 */
export async function saveExportRunCheckpoint(
  q: Queryable,
  runId: string,
  leaseToken: string,
  checkpoint: { cursor: RunCursor; file: ExportedFile },
): Promise<boolean> {
  const rows = await q`
    update bulk_export_runs set
      rows_written = rows_written + ${checkpoint.file.rows},
      files = files || ${JSON.stringify([checkpoint.file])}::text::jsonb,
      cursor_start_time = ${checkpoint.cursor.startTime}::text::timestamptz,
      cursor_id = ${checkpoint.cursor.id}, updated_at = now()
    where id = ${runId} and lease_token = ${leaseToken} and status = 'Running'
    returning id`;
  return rows.length > 0;
}

/** Marks a run Completed with its manifest, for the attempt that holds the lease; false otherwise. */
export async function completeExportRun(
  q: Queryable,
  runId: string,
  leaseToken: string,
  manifestKey: string,
): Promise<boolean> {
  const rows = await q`
    update bulk_export_runs set
      status = 'Completed', manifest_key = ${manifestKey}, finished_at = now(), updated_at = now(),
      lease_token = null, lease_owner = null, lease_expires_at = null
    where id = ${runId} and lease_token = ${leaseToken} and status = 'Running'
    returning id`;
  return rows.length > 0;
}

/** What a failed attempt led to. */
export interface AttemptOutcome {
  /** `Running`: the run waits for its retry; `Failed`: no attempt is left (or none may be made). */
  status: "Running" | "Failed";
  /** The failed attempt's number, as in its `retry_<n>` error key. */
  attempt: number;
}

/**
 * Records a failed attempt's error as `retry_<n>` and gives up the lease. The run fails when
 * `retryable` is false or when the attempt was the last of `maxRetries` retries. Undefined when the
 * attempt no longer holds the lease (nothing is recorded then).
 */
export async function recordExportRunFailure(
  q: Queryable,
  runId: string,
  leaseToken: string,
  failure: { message: string; retryable: boolean; maxRetries: number },
): Promise<AttemptOutcome | undefined> {
  const [row] = await q<AttemptOutcome[]>`
    update bulk_export_runs set
      errors = errors || jsonb_build_object('retry_' || retry_number, ${failure.message}::text),
      retry_number = retry_number + 1,
      status = case when ${failure.retryable} and retry_number < ${failure.maxRetries} then 'Running' else 'Failed' end,
      finished_at = case when ${failure.retryable} and retry_number < ${failure.maxRetries} then null else now() end,
      lease_token = null, lease_owner = null, lease_expires_at = null, updated_at = now()
    where id = ${runId} and lease_token = ${leaseToken} and status = 'Running'
    returning status, retry_number - 1 as attempt`;
  return row;
}

/** A run whose worker stopped renewing its lease, now released for another attempt (or failed). */
export interface RecoveredRun {
  id: string;
  workspaceId: string;
  bulkExportId: string;
  status: "Running" | "Failed";
}

/**
 * Releases every Running run whose lease lapsed (its worker died or hung), recording it as a
 * failed attempt (`retry_<n>`, "worker lost"); a run past its retries fails. The caller requeues
 * the released ones. Each lapsed run is returned by exactly one caller.
 */
export async function releaseLapsedExportRuns(q: Queryable, maxRetries: number): Promise<RecoveredRun[]> {
  return q<RecoveredRun[]>`
    update bulk_export_runs set
      errors = errors || jsonb_build_object(
        'retry_' || retry_number,
        'the worker ' || coalesce(lease_owner, '') || ' stopped renewing its lease (it crashed or was cut off); the run resumes from its last checkpoint'),
      retry_number = retry_number + 1,
      status = case when retry_number < ${maxRetries} then 'Running' else 'Failed' end,
      finished_at = case when retry_number < ${maxRetries} then null else now() end,
      lease_token = null, lease_owner = null, lease_expires_at = null, updated_at = now()
    where id in (
      select id from bulk_export_runs
      where status = 'Running' and lease_expires_at < now()
      for update skip locked)
    returning id, workspace_id as "workspaceId", bulk_export_id as "bulkExportId", status`;
}
