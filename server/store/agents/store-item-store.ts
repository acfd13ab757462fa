import type postgres from "postgres";
import type { Queryable } from "../db.js";
import { type AuthFilter, authFilterSql } from "../filters/auth-filter-sql.js";
import { inWorkspace } from "../filters/sql-conditions.js";

/** A live (unexpired) store item. */
export interface StoreItemRecord {
  namespace: string[];
  key: string;
  value: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
}

/** Where an item lives: its namespace (at least one label, none containing ".") and key. */
export interface StoreItemKey {
  readonly namespace: readonly string[];
  readonly key: string;
}

/** An item read, with whether to restart its TTL. */
export interface StoreItemRead extends StoreItemKey {
  readonly refreshTtl: boolean;
}

/** An item to store. */
export interface StoreItemWrite extends StoreItemKey {
  /** A JSON object. */
  readonly value: Record<string, unknown>;
  /** Minutes until it expires (positive); null: never. */
  readonly ttlMinutes: number | null;
}

/** The comparison a filter condition makes; the operators BaseStore documents plus $in / $nin. */
export type StoreFilterOperator = "$eq" | "$ne" | "$gt" | "$gte" | "$lt" | "$lte" | "$in" | "$nin";

/** One validated condition on a top-level field of item values. */
export interface StoreFilterCondition {
  /** The top-level field of the value. */
  readonly field: string;
  readonly operator: StoreFilterOperator;
  /**
   * The JSON operand: any JSON for $eq / $ne; a number, string or boolean for $gt / $gte / $lt /
   * $lte; an array for $in / $nin.
   */
  readonly operand: unknown;
}

/** What {@link searchStoreItems} looks for. */
export interface StoreSearchQuery {
  /** Namespace prefix; "*" matches any one label; empty matches everything. */
  readonly namespacePrefix: readonly string[];
  /** Conditions that must all hold. */
  readonly filter: readonly StoreFilterCondition[];
  readonly limit: number;
  readonly offset: number;
  /** Restart the TTL of the items returned. */
  readonly refreshTtl: boolean;
  /** Custom auth's filter on the items' {@link storeAuthDocument}; every item when absent. */
  readonly auth?: AuthFilter | undefined;
}

/** What {@link listStoreNamespaces} lists. */
export interface StoreNamespaceQuery {
  /** Namespaces starting with these labels ("*" matches any one label). */
  readonly prefix?: readonly string[] | undefined;
  /** Namespaces ending with these labels ("*" matches any one label). */
  readonly suffix?: readonly string[] | undefined;
  /** Truncate the matching namespaces to this many labels (at least 1), then deduplicate. */
  readonly maxDepth?: number | undefined;
  readonly limit: number;
  readonly offset: number;
  /** Custom auth's filter on each namespace listed (as `{namespace}`); every one when absent. */
  readonly auth?: AuthFilter | undefined;
}

/** The label that matches any one label in a namespace prefix or suffix. */
export const NAMESPACE_WILDCARD = "*";

interface ItemRow {
  namespace: string[];
  key: string;
  value: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

function toRecord(row: ItemRow): StoreItemRecord {
  return {
    namespace: row.namespace,
    key: row.key,
    value: row.value,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** A JSON parameter (porsager serialises it itself; a pre-stringified value would be double-encoded). */
function json(q: Queryable, value: unknown): postgres.Parameter {
  return q.json(value as postgres.JSONValue);
}

/**
 * The items of a workspace at `reads`, in one query: result `i` is the item of `reads[i]`, or null
 * when it does not exist or has expired. Restarts the TTL of the items read with `refreshTtl`.
 */
export async function getStoreItems(
  q: Queryable,
  workspaceId: string,
  reads: readonly StoreItemRead[],
): Promise<(StoreItemRecord | null)[]> {
  if (reads.length === 0) return [];
  const wanted = reads.map((r, i) => ({ i, namespace: r.namespace, key: r.key, refresh: r.refreshTtl }));
  const rows = await q<(ItemRow & { i: number })[]>`
    with wanted as (
      select * from jsonb_to_recordset(${json(q, wanted)}) as w(i int, namespace text[], key text, refresh boolean)
    ), found as (
      select w.i, w.refresh, s.namespace, s.key, s.value, s.created_at, s.updated_at, s.ttl_minutes
      from wanted w
      -- One primary-key probe per item: a plain join lets the planner, expecting 100 rows from the
      -- function, scan and hash the workspace's items instead; the limit keeps the subquery apart.
      cross join lateral (
        select * from store_items s
        where s.workspace_id = ${workspaceId} and s.namespace = w.namespace and s.key = w.key
        limit 1
      ) s
      where s.expires_at is null or s.expires_at > now()
    ), refreshed as (
      update store_items s set expires_at = now() + s.ttl_minutes * interval '1 minute'
      from found f
      where f.refresh and f.ttl_minutes is not null
        and s.workspace_id = ${workspaceId} and s.namespace = f.namespace and s.key = f.key
    )
    select i, namespace, key, value, created_at, updated_at from found`;
  const results: (StoreItemRecord | null)[] = reads.map(() => null);
  for (const row of rows) results[row.i] = toRecord(row);
  return results;
}

/** An item to store in a workspace. */
export interface WorkspaceStoreItemWrite extends StoreItemWrite {
  readonly workspaceId: string;
}

/**
 * Stores items of any workspaces (insert or replace) in one statement; of several writes to one
 * item, the last one wins. Replacing keeps `created_at`, unless the old item had expired (it is then
 * a new item that the sweeper had not yet removed).
 */
export async function upsertStoreItems(
  q: Queryable,
  items: readonly WorkspaceStoreItemWrite[],
): Promise<void> {
  const last = new Map<string, WorkspaceStoreItemWrite>();
  for (const it of items) last.set(JSON.stringify([it.workspaceId, it.namespace, it.key]), it);
  const writes = [...last.values()];
  if (writes.length === 0) return;
  const [only] = writes;
  // One item (every call at low load) is a plain row: a third less work for Postgres than
  // unpacking a JSON batch of one.
  const source =
    writes.length === 1 && only
      ? q`(values (${only.workspaceId}::uuid, ${only.namespace as string[]}::text[], ${only.key}::text,
                   ${json(q, only.value)}::jsonb, ${only.ttlMinutes}::float8))
            as o(workspace_id, namespace, key, value, ttl)`
      : q`jsonb_to_recordset(${json(
          q,
          writes.map((it) => ({
            workspace_id: it.workspaceId,
            namespace: it.namespace,
            key: it.key,
            value: it.value,
            ttl: it.ttlMinutes,
          })),
        )}) as o(workspace_id uuid, namespace text[], key text, value jsonb, ttl double precision)`;
  await q`
    insert into store_items (workspace_id, namespace, key, value, ttl_minutes, expires_at)
    select o.workspace_id, o.namespace, o.key, o.value, o.ttl, now() + o.ttl * interval '1 minute'
    from ${source}
    -- Rows are locked in key order, so two concurrent batches over the same items cannot deadlock.
    order by o.workspace_id, o.namespace, o.key
    on conflict (workspace_id, namespace, key) do update set
      value = excluded.value,
      ttl_minutes = excluded.ttl_minutes,
      expires_at = excluded.expires_at,
      updated_at = now(),
      created_at = case when store_items.expires_at <= now() then now() else store_items.created_at end`;
}

/** Deletes items; missing ones are ignored. */
export async function deleteStoreItems(
  q: Queryable,
  workspaceId: string,
  keys: readonly StoreItemKey[],
): Promise<void> {
  if (keys.length === 0) return;
  const rows = keys.map((k) => ({ namespace: k.namespace, key: k.key }));
  await q`
    delete from store_items s
    using jsonb_to_recordset(${json(q, rows)}) as o(namespace text[], key text)
    where s.workspace_id = ${workspaceId} and s.namespace = o.namespace and s.key = o.key`;
}

/**
 * Live items of a workspace under a namespace prefix that satisfy every filter condition, most
 * recently updated first (ties by namespace and key, so pages are stable).
 */
export async function searchStoreItems(
  q: Queryable,
  workspaceId: string,
  query: StoreSearchQuery,
): Promise<StoreItemRecord[]> {
  const refresh = query.refreshTtl
    ? q`, refreshed as (
        update store_items s set expires_at = now() + s.ttl_minutes * interval '1 minute'
        from found f
        where f.ttl_minutes is not null
          and s.workspace_id = ${workspaceId} and s.namespace = f.namespace and s.key = f.key
      )`
    : q``;
  const rows = await q<ItemRow[]>`
    with found as (
      select s.namespace, s.key, s.value, s.created_at, s.updated_at, s.ttl_minutes, s.namespace_path
      from store_items s ${query.auth ? authDocumentOf(q) : q``}
      where ${inWorkspace(q, "s", workspaceId, [
        q`s.expires_at is null or s.expires_at > now()`,
        prefixMatch(q, query.namespacePrefix),
        ...query.filter.map((c) => filterCondition(q, c)),
        ...(query.auth ? [authFilterSql(q, "d.auth_document", query.auth)] : []),
      ])}
      order by s.updated_at desc, s.namespace_path, s.key
      limit ${query.limit} offset ${query.offset}
    )${refresh}
    select namespace, key, value, created_at, updated_at from found
    order by updated_at desc, namespace_path, key`;
  return rows.map(toRecord);
}

/**
 * The distinct namespaces of a workspace's live items that match the prefix and suffix, truncated
 * to `maxDepth` labels (after matching), in label order (bytewise).
 */
export async function listStoreNamespaces(
  q: Queryable,
  workspaceId: string,
  query: StoreNamespaceQuery,
): Promise<string[][]> {
  const truncated = query.maxDepth === undefined ? q`s.namespace` : q`s.namespace[1:${query.maxDepth}::int]`;
  const rows = await q<{ namespace: string[] }[]>`
    select ns as namespace from (
      select distinct ${truncated} as ns
      from store_items s
      where s.workspace_id = ${workspaceId} and (s.expires_at is null or s.expires_at > now())
        and ${prefixMatch(q, query.prefix ?? [])}
        and ${suffixMatch(q, query.suffix ?? [])}
    ) n
    ${
      query.auth
        ? q`cross join lateral (select jsonb_build_object('namespace', to_jsonb(n.ns)) as auth_document) d
            where ${authFilterSql(q, "d.auth_document", query.auth)}`
        : q``
    }
    order by ns collate "C"
    limit ${query.limit} offset ${query.offset}`;
  return rows.map((r) => r.namespace);
}

/**
 * What custom auth's filters of store events are matched against, as on the LangGraph JS server:
 * the item's value with its `namespace` (a list of labels) and `key` added, so a filter may check a
 * field of the value (`{owner: "ana"}`) or the namespace (`{namespace: {$contains: "ana"}}`).
 */
export function storeAuthDocument(item: StoreItemKey & { value?: Record<string, unknown> }) {
  return { ...item.value, namespace: [...item.namespace], key: item.key };
}

/** A lateral join giving each row `s` of store_items its {@link storeAuthDocument} as `d.auth_document`. */
function authDocumentOf(q: Queryable) {
  return q`cross join lateral (
    select s.value || jsonb_build_object('namespace', to_jsonb(s.namespace), 'key', s.key) as auth_document
  ) d`;
}

/**
 * Whether the workspace's live item at `key` exists, and whether custom auth's `filter` lets the
 * caller see it (matched on its {@link storeAuthDocument}).
 */
export async function storeItemAccess(
  q: Queryable,
  workspaceId: string,
  key: StoreItemKey,
  filter: AuthFilter,
): Promise<"missing" | "visible" | "hidden"> {
  const [row] = await q<{ visible: boolean }[]>`
    select (${authFilterSql(q, "d.auth_document", filter)}) as visible
    from store_items s ${authDocumentOf(q)}
    where s.workspace_id = ${workspaceId} and s.namespace = ${key.namespace as string[]}::text[]
      and s.key = ${key.key} and (s.expires_at is null or s.expires_at > now())`;
  if (!row) return "missing";
  return row.visible ? "visible" : "hidden";
}

/** Whether custom auth's `filter` passes a document (an item about to be written, a namespace). */
export async function storeDocumentPasses(
  q: Queryable,
  document: Record<string, unknown>,
  filter: AuthFilter,
): Promise<boolean> {
  const [row] = await q<{ passes: boolean }[]>`
    select (${authFilterSql(q, "d.auth_document", filter)}) as passes
    from (select ${json(q, document)}::jsonb as auth_document) d`;
  return row?.passes ?? false;
}

/**
 * Deletes up to `limit` expired items of all workspaces, oldest expiry first; returns how many.
 * Rows another transaction holds (a concurrent sweep or a refresh) are skipped, not waited for.
 */
export async function deleteExpiredStoreItems(q: Queryable, limit: number): Promise<number> {
  const result = await q`
    with doomed as (
      select workspace_id, namespace, key from store_items
      where expires_at <= now()
      order by expires_at
      limit ${limit}
      for update skip locked
    )
    delete from store_items s using doomed d
    where s.workspace_id = d.workspace_id and s.namespace = d.namespace and s.key = d.key`;
  return result.count;
}

/**
 * Namespaces starting with `prefix`. The labels before the first wildcard become a range on
 * `namespace_path` (see the migration), which the index serves; wildcards add a per-label check.
 */
function prefixMatch(q: Queryable, prefix: readonly string[]) {
  if (prefix.length === 0) return q`true`;
  const wildcardAt = prefix.indexOf(NAMESPACE_WILDCARD);
  const head = wildcardAt < 0 ? prefix : prefix.slice(0, wildcardAt);
  const path = head.join(".");
  const range =
    head.length === 0 ? q`true` : q`s.namespace_path >= ${`${path}.`} and s.namespace_path < ${`${path}/`}`;
  if (wildcardAt < 0) return range;
  return q`${range} and cardinality(s.namespace) >= ${prefix.length}::int and not exists (
    select from unnest(${prefix as string[]}::text[]) with ordinality as p(label, i)
    where p.label <> ${NAMESPACE_WILDCARD} and p.label is distinct from s.namespace[p.i])`;
}

/** Namespaces ending with `suffix`, label by label. */
function suffixMatch(q: Queryable, suffix: readonly string[]) {
  if (suffix.length === 0) return q`true`;
  return q`cardinality(s.namespace) >= ${suffix.length}::int and not exists (
    select from unnest(${suffix as string[]}::text[]) with ordinality as p(label, i)
    where p.label <> ${NAMESPACE_WILDCARD}
      and p.label is distinct from s.namespace[cardinality(s.namespace) - ${suffix.length}::int + p.i::int])`;
}

/**
 * One filter condition as SQL. The operand travels as a one-element JSON array (`-> 0` takes it
 * out) so that a JSON null stays JSON null rather than becoming SQL NULL. Ordering operators
 * compare only values of the operand's JSON type, so a string never passes `{"$gt": 5}`.
 */
function filterCondition(q: Queryable, c: StoreFilterCondition) {
  const field = q`s.value -> ${c.field}::text`;
  const operand = q`(${json(q, [c.operand])} -> 0)`;
  const sameType = q`jsonb_typeof(${field}) = jsonb_typeof(${operand})`;
  switch (c.operator) {
    case "$eq":
      return q`${field} = ${operand}`;
    case "$ne":
      return q`${field} is distinct from ${operand}`;
    case "$gt":
      return q`(${sameType} and ${field} > ${operand})`;
    case "$gte":
      return q`(${sameType} and ${field} >= ${operand})`;
    case "$lt":
      return q`(${sameType} and ${field} < ${operand})`;
    case "$lte":
      return q`(${sameType} and ${field} <= ${operand})`;
    case "$in":
      return q`exists (select from jsonb_array_elements(${json(q, c.operand)}) as e(v) where e.v = ${field})`;
    case "$nin":
      return q`not exists (select from jsonb_array_elements(${json(q, c.operand)}) as e(v) where e.v = ${field})`;
  }
}
