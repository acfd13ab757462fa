import type { Queryable } from "../db.js";
import { type FilterAlternatives, foldedContainment } from "../filters/auth-filter-alternatives.js";
import { type AuthFilter, authFilterSql } from "../filters/auth-filter-sql.js";

import type { JsonObject, JsonValue } from "../json-value.js";

export type { JsonObject, JsonValue } from "../json-value.js";

/** Thread status values, as the checks of migration 0005 allow. */
export type ThreadStatus = "idle" | "busy" | "interrupted" | "error";

/** What the TTL sweeper does to an expired thread. */
export type ThreadTtlStrategy = "delete" | "keep_latest";

/** A thread's TTL: the strategy and its period; the expiry is `expiresAt`. */
export interface ThreadTtl {
  strategy: ThreadTtlStrategy;
  minutes: number;
}

/** A thread row. */
export interface ThreadRecord {
  threadId: string;
  metadata: JsonObject;
  config: JsonObject;
  status: ThreadStatus;
  /** Latest state values; null before the first state. */
  values: JsonValue | null;
  /** Pending interrupts: task id → Interrupt[]. */
  interrupts: JsonObject;
  error: JsonValue | null;
  createdAt: Date;
  updatedAt: Date;
  stateUpdatedAt: Date;
  ttl: (ThreadTtl & { expiresAt: Date }) | null;
}

interface ThreadRow {
  workspace_id: string;
  thread_id: string;
  metadata: JsonObject;
  config: JsonObject;
  status: ThreadStatus;
  values: JsonValue | null;
  interrupts: JsonObject;
  error: JsonValue | null;
  created_at: Date;
  updated_at: Date;
  state_updated_at: Date;
  ttl_strategy: ThreadTtlStrategy | null;
  ttl_minutes: number | null;
  expires_at: Date | null;
}

function toRecord(row: ThreadRow): ThreadRecord {
  return {
    threadId: row.thread_id,
    metadata: row.metadata,
    config: row.config,
    status: row.status,
    values: row.values,
    interrupts: row.interrupts,
    error: row.error,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    stateUpdatedAt: row.state_updated_at,
    ttl:
      row.ttl_strategy && row.ttl_minutes !== null && row.expires_at
        ? { strategy: row.ttl_strategy, minutes: row.ttl_minutes, expiresAt: row.expires_at }
        : null,
  };
}

/** Columns search can sort by (an allowlist: they reach SQL as identifiers). */
export const THREAD_SORT_COLUMNS = [
  "thread_id",
  "status",
  "created_at",
  "updated_at",
  "state_updated_at",
] as const;

/** A column of {@link THREAD_SORT_COLUMNS}. */
export type ThreadSortColumn = (typeof THREAD_SORT_COLUMNS)[number];

/** Filters of search and count; every present filter must match. */
export interface ThreadFilter {
  /** Only these ids. */
  ids?: string[];
  /** Metadata contains this object. */
  metadata?: JsonObject;
  /** Latest values contain this object. */
  values?: JsonObject;
  status?: ThreadStatus;
  /** A custom auth handler's filter on metadata (store/filters/auth-filter-sql.ts). */
  auth?: AuthFilter;
}

/** A thread to insert into a workspace. */
export interface NewThread {
  workspaceId: string;
  threadId: string;
  metadata: JsonObject;
  ttl: ThreadTtl | null;
}

/**
 * Inserts threads, of any workspaces, in one statement: result `i` is the new thread of
 * `threads[i]`, or undefined when its workspace already has a thread with that id (also when an
 * earlier entry of `threads` took it). A TTL's expiry starts now.
 */
export async function insertThreads(
  q: Queryable,
  threads: readonly NewThread[],
): Promise<(ThreadRecord | undefined)[]> {
  const [only] = threads;
  // One thread (every call at low load) is a plain row: less work for Postgres than unpacking a
  // JSON batch of one.
  const source =
    threads.length === 1 && only
      ? q`(values (${only.workspaceId}::uuid, ${only.threadId}::uuid, ${q.json(only.metadata)}::jsonb,
                   ${only.ttl?.strategy ?? null}::text, ${only.ttl?.minutes ?? null}::float8))
            as n(workspace_id, thread_id, metadata, ttl_strategy, ttl_minutes)`
      : q`jsonb_to_recordset(${q.json(
          threads.map((t) => ({
            workspace_id: t.workspaceId,
            thread_id: t.threadId,
            metadata: t.metadata,
            ttl_strategy: t.ttl?.strategy ?? null,
            ttl_minutes: t.ttl?.minutes ?? null,
          })),
        )}) as n(workspace_id uuid, thread_id uuid, metadata jsonb, ttl_strategy text, ttl_minutes float8)`;
  const inserted = await q<ThreadRow[]>`
    insert into threads (workspace_id, thread_id, metadata, ttl_strategy, ttl_minutes, expires_at)
    select n.workspace_id, n.thread_id, n.metadata, n.ttl_strategy, n.ttl_minutes,
           now() + make_interval(secs => n.ttl_minutes * 60)
    from ${source}
    -- Keys are claimed in order, so two concurrent batches with shared ids cannot deadlock.
    order by n.workspace_id, n.thread_id
    on conflict (workspace_id, thread_id) do nothing
    returning *`;
  const byKey = new Map(inserted.map((row) => [`${row.workspace_id}/${row.thread_id}`, row]));
  return threads.map((t) => {
    const key = `${t.workspaceId}/${t.threadId.toLowerCase()}`;
    const row = byKey.get(key);
    // A row answers the first entry with its key; a later duplicate found it already taken.
    byKey.delete(key);
    return row && toRecord(row);
  });
}

/** A thread of a workspace, as {@link findThreads} looks it up. */
export interface ThreadKey {
  workspaceId: string;
  threadId: string;
}

/** Threads of any workspaces, in one query: result `i` is the thread at `keys[i]`, if it exists. */
export async function findThreads(
  q: Queryable,
  keys: readonly ThreadKey[],
): Promise<(ThreadRecord | undefined)[]> {
  const [only] = keys;
  if (keys.length === 1 && only) {
    // One key (every call at low load): a plain primary-key lookup, the least work for Postgres
    // and for the driver (each nested fragment is a query object of its own).
    const [row] = await q<ThreadRow[]>`
      select * from threads where workspace_id = ${only.workspaceId} and thread_id = ${only.threadId}`;
    return [row && toRecord(row)];
  }
  const wanted = keys.map((k) => ({ workspace_id: k.workspaceId, thread_id: k.threadId }));
  const rows = await q<ThreadRow[]>`
    select t.* from jsonb_to_recordset(${q.json(wanted)}) as k(workspace_id uuid, thread_id uuid)
    -- One primary-key probe per key. As a plain join (or a lateral subquery the planner flattens
    -- into one) the planner, expecting 100 keys from the function, scans and hashes the whole table;
    -- the limit keeps the subquery apart.
    cross join lateral (
      select * from threads t where t.workspace_id = k.workspace_id and t.thread_id = k.thread_id limit 1
    ) t`;
  const byKey = new Map(rows.map((row) => [`${row.workspace_id}/${row.thread_id}`, row]));
  return keys.map((k) => {
    const row = byKey.get(`${k.workspaceId}/${k.threadId.toLowerCase()}`);
    return row && toRecord(row);
  });
}

/**
 * Merges `metadata` into a thread's metadata and, when `ttl` is not undefined, replaces its TTL
 * (null removes it). A thread with a TTL gets a fresh expiry: the period counts from the last change.
 */
export async function updateThread(
  q: Queryable,
  workspaceId: string,
  threadId: string,
  change: { metadata: JsonObject; ttl?: ThreadTtl | null },
): Promise<ThreadRecord | undefined> {
  const setTtl = change.ttl !== undefined;
  const strategy = change.ttl?.strategy ?? null;
  const minutes = change.ttl?.minutes ?? null;
  const [row] = await q<ThreadRow[]>`
    update threads set
      metadata = metadata || ${q.json(change.metadata)},
      ttl_strategy = case when ${setTtl} then ${strategy} else ttl_strategy end,
      ttl_minutes = case when ${setTtl} then ${minutes}::float8 else ttl_minutes end,
      expires_at = case when (case when ${setTtl} then ${minutes}::float8 else ttl_minutes end) is null then null
        else now() + make_interval(secs => (case when ${setTtl} then ${minutes}::float8 else ttl_minutes end) * 60) end,
      updated_at = now()
    where workspace_id = ${workspaceId} and thread_id = ${threadId}
    returning *`;
  return row && toRecord(row);
}

/**
 * Records a thread's new state: the cached values, the pending interrupts and the status derived
 * from them; refreshes the TTL's expiry.
 */
export async function saveThreadState(
  q: Queryable,
  workspaceId: string,
  threadId: string,
  state: { values: JsonValue; interrupts: JsonObject; status: ThreadStatus },
): Promise<void> {
  await q`
    update threads set
      "values" = ${q.json(state.values)}, interrupts = ${q.json(state.interrupts)}, status = ${state.status},
      error = case when ${state.status} = 'error' then error end,
      state_updated_at = now(), updated_at = now(),
      expires_at = case when ttl_minutes is null then null
        else now() + make_interval(secs => ttl_minutes * 60) end
    where workspace_id = ${workspaceId} and thread_id = ${threadId}`;
}

/** Deletes threads of the workspace; returns the ids that existed. */
export async function deleteThreads(
  q: Queryable,
  workspaceId: string,
  threadIds: string[],
): Promise<string[]> {
  const rows = await q<{ thread_id: string }[]>`
    delete from threads where workspace_id = ${workspaceId} and thread_id = any(${threadIds}::uuid[])
    returning thread_id`;
  return rows.map((r) => r.thread_id);
}

/** The ids among `threadIds` that exist in the workspace (and pass `auth`, when given). */
export async function existingThreadIds(
  q: Queryable,
  workspaceId: string,
  threadIds: string[],
  auth?: AuthFilter,
): Promise<string[]> {
  const rows = await q<{ thread_id: string }[]>`
    select thread_id from threads where workspace_id = ${workspaceId} and thread_id = any(${threadIds}::uuid[])
      ${auth ? q`and (${authFilterSql(q, "metadata", auth)})` : q``}`;
  return rows.map((r) => r.thread_id);
}

function whereFilter(q: Queryable, workspaceId: string, filter: ThreadFilter) {
  const { containment, rest } = foldedContainment(filter.metadata, filter.auth);
  return q`
    workspace_id = ${workspaceId}
    ${filter.ids ? q`and thread_id = any(${filter.ids}::uuid[])` : q``}
    ${containment ? q`and metadata @> ${q.json(containment)}` : q``}
    ${filter.values ? q`and "values" @> ${q.json(filter.values)}` : q``}
    ${filter.status ? q`and status = ${filter.status}` : q``}
    ${rest ? q`and (${authFilterSql(q, "metadata", rest)})` : q``}`;
}

/**
 * The thread at `key` when its metadata passes a custom auth handler's `auth` filter; undefined
 * when it does not exist or does not pass (the caller answers both alike: not found).
 */
export async function findVisibleThread(
  q: Queryable,
  key: ThreadKey,
  auth: AuthFilter,
): Promise<ThreadRecord | undefined> {
  const [row] = await q<ThreadRow[]>`
    select * from threads
    where workspace_id = ${key.workspaceId} and thread_id = ${key.threadId}
      and (${authFilterSql(q, "metadata", auth)})`;
  return row && toRecord(row);
}

/** A thread lookup through a custom auth filter, as {@link findVisibleThreads} takes it. */
export interface VisibleThreadKey extends ThreadKey {
  /** The filter the thread must pass, as {@link filterAlternatives} rearranged it. */
  readonly alternatives: FilterAlternatives;
}

/**
 * Threads each behind its own custom auth filter, in one query: result `i` is the thread at
 * `keys[i]` when it exists and its metadata passes `keys[i].alternatives`. The filters are checked
 * in SQL, row by row, so a thread the caller may not see never leaves Postgres.
 */
export async function findVisibleThreads(
  q: Queryable,
  keys: readonly VisibleThreadKey[],
): Promise<(ThreadRecord | undefined)[]> {
  const wanted = keys.map((k, i) => ({
    i,
    workspace_id: k.workspaceId,
    thread_id: k.threadId,
    alternatives: k.alternatives,
  }));
  const rows = await q<(ThreadRow & { key_index: number })[]>`
    select t.*, k.i as key_index
    from jsonb_to_recordset(${q.json(wanted as never)}) as k(i int, workspace_id uuid, thread_id uuid, alternatives jsonb)
    -- One primary-key probe per key, kept apart from the planner's join choices by the limit (see
    -- findThreads); the filter then reads the one row found.
    cross join lateral (
      select * from threads t
      where t.workspace_id = k.workspace_id and t.thread_id = k.thread_id
        and exists (
          select from jsonb_array_elements(k.alternatives) alternative
          where not exists (
            select from jsonb_array_elements(alternative.value) part where not t.metadata @> part.value
          )
        )
      limit 1
    ) t`;
  const byIndex = new Map(rows.map((row) => [row.key_index, row]));
  return keys.map((_, i) => {
    const row = byIndex.get(i);
    return row && toRecord(row);
  });
}

/**
 * A page of the workspace's threads matching `filter`, in the given order (thread id breaks ties),
 * with the number of matches.
 */
export async function searchThreads(
  q: Queryable,
  workspaceId: string,
  filter: ThreadFilter,
  page: { sortBy: ThreadSortColumn; descending: boolean; limit: number; offset: number },
): Promise<{ threads: ThreadRecord[]; total: number }> {
  const direction = page.descending ? q`desc` : q`asc`;
  // The count and the page are separate subqueries of one statement: a window count (`count(*) over
  // ()`) would make Postgres read and sort every match to return one page (14 ms instead of 2 ms for
  // 10,000 matches), while the page alone can stop after `limit` rows of the sort order's index.
  const rows = await q<(Partial<ThreadRow> & { total: number })[]>`
    with total as (
      select count(*)::int as total from threads where ${whereFilter(q, workspaceId, filter)}
    ), page as (
      select * from threads
      where ${whereFilter(q, workspaceId, filter)}
      order by ${q(page.sortBy)} ${direction}, thread_id ${direction}
      limit ${page.limit} offset ${page.offset}
    )
    select page.*, total.total from total left join page on true
    order by page.${q(page.sortBy)} ${direction}, page.thread_id ${direction}`;
  const threads = rows.filter((row) => row.thread_id != null).map((row) => toRecord(row as ThreadRow));
  return { threads, total: rows[0]?.total ?? 0 };
}

/** Number of the workspace's threads matching `filter`. */
export async function countThreads(q: Queryable, workspaceId: string, filter: ThreadFilter): Promise<number> {
  const [row] = await q<{ n: number }[]>`
    select count(*)::int as n from threads where ${whereFilter(q, workspaceId, filter)}`;
  return row?.n ?? 0;
}

/**
 * Merges `metadata` into the metadata of the thread's newest root checkpoint (table `checkpoints`,
 * migration 0003). False when the thread has no checkpoint.
 */
export async function patchLatestCheckpointMetadata(
  q: Queryable,
  workspaceId: string,
  threadId: string,
  metadata: JsonObject,
): Promise<boolean> {
  const rows = await q`
    update checkpoints c set metadata = coalesce(c.metadata, '{}'::jsonb) || ${q.json(metadata)}
    where c.workspace_id = ${workspaceId} and c.thread_id = ${threadId} and c.checkpoint_ns = ''
      and c.checkpoint_id = (
        select max(checkpoint_id) from checkpoints
        where workspace_id = ${workspaceId} and thread_id = ${threadId} and checkpoint_ns = '')
    returning c.checkpoint_id`;
  return rows.length > 0;
}

/** An expired thread, as the TTL sweeper sees it. */
export interface ExpiredThread {
  workspaceId: string;
  threadId: string;
  strategy: ThreadTtlStrategy;
}

/** Up to `limit` threads whose TTL has expired, oldest expiry first, across workspaces. */
export async function findExpiredThreads(q: Queryable, limit: number): Promise<ExpiredThread[]> {
  const rows = await q<{ workspace_id: string; thread_id: string; ttl_strategy: ThreadTtlStrategy }[]>`
    select workspace_id, thread_id, ttl_strategy from threads
    where expires_at <= now()
    order by expires_at
    limit ${limit}`;
  return rows.map((r) => ({ workspaceId: r.workspace_id, threadId: r.thread_id, strategy: r.ttl_strategy }));
}

/**
 * Pushes the expiry of `keep_latest` threads one TTL period past now, once their older
 * checkpoints are pruned: the thread stays, and whatever it accumulates is pruned a period later.
 */
export async function renewThreadExpiry(
  q: Queryable,
  workspaceId: string,
  threadIds: string[],
): Promise<void> {
  await q`
    update threads set expires_at = now() + make_interval(secs => ttl_minutes * 60)
    where workspace_id = ${workspaceId} and thread_id = any(${threadIds}::uuid[]) and ttl_minutes is not null`;
}

/**
 * Inserts thread `toId` as a copy of `fromId`'s row (metadata, config, cached state and TTL
 * period; a fresh expiry, and `idle` for a busy source since its runs are not copied).
 */
export async function copyThreadRow(
  q: Queryable,
  workspaceId: string,
  fromId: string,
  toId: string,
): Promise<ThreadRecord | undefined> {
  const [row] = await q<ThreadRow[]>`
    insert into threads (workspace_id, thread_id, metadata, config, status, "values", interrupts, error,
                         ttl_strategy, ttl_minutes, expires_at)
    select workspace_id, ${toId}, metadata, config, case when status = 'busy' then 'idle' else status end,
           "values", interrupts, error, ttl_strategy, ttl_minutes,
           case when ttl_minutes is null then null else now() + make_interval(secs => ttl_minutes * 60) end
    from threads where workspace_id = ${workspaceId} and thread_id = ${fromId}
    returning *`;
  return row && toRecord(row);
}
