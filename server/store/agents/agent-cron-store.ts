import type postgres from "postgres";
import { encryptionContextText } from "../crypto/encryption-scope.js";
import type { Queryable } from "../db.js";
import { type AuthFilter, authFilterSql } from "../filters/auth-filter-sql.js";
import type { RunCreator } from "./agent-run-store.js";
import type { JsonObject } from "./thread-store.js";

/** A cron row (migration 0013). */
export interface CronRecord {
  workspaceId: string;
  cronId: string;
  assistantId: string;
  /** Null for a stateless cron (each run on a new thread). */
  threadId: string | null;
  schedule: string;
  /** IANA time zone; null means UTC. */
  timezone: string | null;
  endTime: Date | null;
  enabled: boolean;
  /** Stateless crons only: delete or keep each run's thread after the run. */
  onRunCompleted: "delete" | "keep" | null;
  /** The run create body each firing uses. */
  payload: JsonObject;
  metadata: JsonObject;
  userId: string | null;
  /** When it fires next; null once past its end time. */
  nextRunDate: Date | null;
  createdAt: Date;
  updatedAt: Date;
  /** The creator's custom encryption context (JSON text, store/crypto/encryption-scope.ts); null when none. */
  encryptionContext: string | null;
  /** Who created the cron; the traces of its runs count under them. */
  creator: RunCreator;
}

/** What a cron's owner may change; the service computes it whole (a patch applied to the row). */
export type CronChanges = Pick<
  CronRecord,
  "schedule" | "timezone" | "endTime" | "enabled" | "onRunCompleted" | "payload" | "metadata" | "nextRunDate"
>;

/** Filters of search and count. */
export interface CronFilter {
  assistantId?: string;
  threadId?: string;
  enabled?: boolean;
  metadata?: JsonObject;
  /** Custom auth's filter on the cron's metadata (store/filters/auth-filter-sql.ts). */
  auth?: AuthFilter;
}

/** Columns search may sort by. The allowlist identifiers come from: never a client string. */
export const CRON_SORT_COLUMNS = [
  "cron_id",
  "assistant_id",
  "thread_id",
  "next_run_date",
  "end_time",
  "created_at",
  "updated_at",
] as const;

/** One of {@link CRON_SORT_COLUMNS}. */
export type CronSortColumn = (typeof CRON_SORT_COLUMNS)[number];

interface CronRow {
  workspace_id: string;
  cron_id: string;
  assistant_id: string;
  thread_id: string | null;
  schedule: string;
  timezone: string | null;
  end_time: Date | null;
  enabled: boolean;
  on_run_completed: "delete" | "keep" | null;
  payload: JsonObject;
  metadata: JsonObject;
  user_id: string | null;
  next_run_date: Date | null;
  created_at: Date;
  updated_at: Date;
  encryption_context: string | null;
  created_by_api_key_id: string | null;
  created_by_user_id: string | null;
}

function toRecord(row: CronRow): CronRecord {
  return {
    workspaceId: row.workspace_id,
    cronId: row.cron_id,
    assistantId: row.assistant_id,
    threadId: row.thread_id,
    schedule: row.schedule,
    timezone: row.timezone,
    endTime: row.end_time,
    enabled: row.enabled,
    onRunCompleted: row.on_run_completed,
    payload: row.payload,
    metadata: row.metadata,
    userId: row.user_id,
    nextRunDate: row.next_run_date,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    encryptionContext: row.encryption_context,
    creator: { apiKeyId: row.created_by_api_key_id, userId: row.created_by_user_id },
  };
}

const j = (q: Queryable, value: JsonObject) => q.json(value as postgres.JSONValue);

/** Stores a new cron. */
export async function insertCron(
  q: Queryable,
  cron: Omit<CronRecord, "createdAt" | "updatedAt" | "encryptionContext">,
): Promise<CronRecord> {
  const [row] = await q<CronRow[]>`
    insert into agent_crons (workspace_id, cron_id, assistant_id, thread_id, schedule, timezone, end_time,
                             enabled, on_run_completed, payload, metadata, user_id, next_run_date,
                             encryption_context, created_by_api_key_id, created_by_user_id)
    values (${cron.workspaceId}, ${cron.cronId}, ${cron.assistantId}, ${cron.threadId}, ${cron.schedule},
            ${cron.timezone}, ${cron.endTime}, ${cron.enabled}, ${cron.onRunCompleted}, ${j(q, cron.payload)},
            ${j(q, cron.metadata)}, ${cron.userId}, ${cron.nextRunDate}, ${encryptionContextText()},
            ${cron.creator.apiKeyId}::uuid, ${cron.creator.userId}::uuid)
    returning *`;
  if (!row) throw new Error("insert into agent_crons returned no row");
  return toRecord(row);
}

/**
 * The workspace's cron `cronId` (when its metadata passes `auth`, custom auth's filter); with
 * `forUpdate`, locked until the transaction ends.
 */
export async function findCron(
  q: Queryable,
  workspaceId: string,
  cronId: string,
  options: { forUpdate?: boolean; auth?: AuthFilter | undefined } = {},
): Promise<CronRecord | undefined> {
  const [row] = await q<CronRow[]>`
    select * from agent_crons where workspace_id = ${workspaceId} and cron_id = ${cronId}
    ${options.auth ? q`and (${authFilterSql(q, "metadata", options.auth)})` : q``}
    ${options.forUpdate ? q`for update` : q``}`;
  return row && toRecord(row);
}

/** Writes a cron's changeable columns; undefined when it is gone. */
export async function updateCron(
  q: Queryable,
  workspaceId: string,
  cronId: string,
  changes: CronChanges,
): Promise<CronRecord | undefined> {
  const [row] = await q<CronRow[]>`
    update agent_crons set
      schedule = ${changes.schedule}, timezone = ${changes.timezone}, end_time = ${changes.endTime},
      enabled = ${changes.enabled}, on_run_completed = ${changes.onRunCompleted},
      payload = ${j(q, changes.payload)}, metadata = ${j(q, changes.metadata)},
      next_run_date = ${changes.nextRunDate}, updated_at = now()
    where workspace_id = ${workspaceId} and cron_id = ${cronId}
    returning *`;
  return row && toRecord(row);
}

/** Deletes a cron (when its metadata passes `auth`); false when the workspace has no such cron. */
export async function deleteCron(
  q: Queryable,
  workspaceId: string,
  cronId: string,
  auth?: AuthFilter,
): Promise<boolean> {
  const rows = await q`delete from agent_crons where workspace_id = ${workspaceId} and cron_id = ${cronId}
    ${auth ? q`and (${authFilterSql(q, "metadata", auth)})` : q``}`;
  return rows.count > 0;
}

function where(q: Queryable, workspaceId: string, f: CronFilter) {
  return q`
    workspace_id = ${workspaceId}
    ${f.assistantId !== undefined ? q`and assistant_id = ${f.assistantId}` : q``}
    ${f.threadId !== undefined ? q`and thread_id = ${f.threadId}` : q``}
    ${f.enabled !== undefined ? q`and enabled = ${f.enabled}` : q``}
    ${f.metadata ? q`and metadata @> ${j(q, f.metadata)}` : q``}
    ${f.auth ? q`and (${authFilterSql(q, "metadata", f.auth)})` : q``}`;
}

/** A page of the workspace's crons matching `filter`, sorted, with the total match count. */
export async function searchCrons(
  q: Queryable,
  workspaceId: string,
  filter: CronFilter,
  page: { sortBy: CronSortColumn; descending: boolean; limit: number; offset: number },
): Promise<{ crons: CronRecord[]; total: number }> {
  const direction = page.descending ? q`desc` : q`asc`;
  // Nulls (stateless crons' thread, open end times) sort last either way, as "no value".
  const rows = await q<CronRow[]>`
    select * from agent_crons where ${where(q, workspaceId, filter)}
    order by ${q(page.sortBy)} ${direction} nulls last, cron_id ${direction}
    limit ${page.limit} offset ${page.offset}`;
  const total =
    rows.length > 0 && rows.length < page.limit
      ? page.offset + rows.length
      : await countCrons(q, workspaceId, filter);
  return { crons: rows.map(toRecord), total };
}

/** Number of the workspace's crons matching `filter`. */
export async function countCrons(q: Queryable, workspaceId: string, filter: CronFilter): Promise<number> {
  const [row] = await q<{ count: number }[]>`
    select count(*)::int as count from agent_crons where ${where(q, workspaceId, filter)}`;
  return row?.count ?? 0;
}

/**
 * Up to `limit` enabled crons of any workspace due at `now`, earliest first, locked until the
 * transaction ends; rows another transaction holds are skipped, so concurrent ticks share the work
 * and never take the same cron.
 */
export async function lockDueCrons(q: Queryable, now: Date, limit: number): Promise<CronRecord[]> {
  const rows = await q<CronRow[]>`
    select * from agent_crons
    where enabled and next_run_date <= ${now}
    order by next_run_date
    limit ${limit}
    for update skip locked`;
  return rows.map(toRecord);
}

/** Moves a fired cron's next firing (null: it will not fire again); a firing is not an update. */
export async function advanceCron(
  q: Queryable,
  workspaceId: string,
  cronId: string,
  nextRunDate: Date | null,
): Promise<void> {
  await q`
    update agent_crons set next_run_date = ${nextRunDate}
    where workspace_id = ${workspaceId} and cron_id = ${cronId}`;
}

/** How many enabled crons are due at `now`, across workspaces (the tick's fan-out). */
export async function countDueCrons(q: Queryable, now: Date): Promise<number> {
  const [row] = await q<{ count: number }[]>`
    select count(*)::int as count from agent_crons where enabled and next_run_date <= ${now}`;
  return row?.count ?? 0;
}

/** The earliest time after `now` an enabled cron is due, if any (when the next tick is needed). */
export async function nextDueAfter(q: Queryable, now: Date): Promise<Date | undefined> {
  const [row] = await q<{ next: Date | null }[]>`
    select min(next_run_date) as next from agent_crons where enabled and next_run_date > ${now}`;
  return row?.next ?? undefined;
}
