import type postgres from "postgres";
import type { Queryable } from "../db.js";
import { type AuthFilter, authFilterSql } from "../filters/auth-filter-sql.js";
import type { SqlCondition } from "../filters/sql-conditions.js";

/** JSON object columns (config, context, metadata). */
export type JsonObject = Record<string, unknown>;

/** An assistant at its current version, or one version of it (then `updatedAt` is undefined). */
export interface AssistantRecord {
  assistantId: string;
  graphId: string;
  name: string;
  description: string | null;
  config: JsonObject;
  context: JsonObject;
  metadata: JsonObject;
  version: number;
  createdAt: Date;
  updatedAt: Date | undefined;
}

/** The fields a version sets. */
export interface AssistantFields {
  graphId: string;
  name: string;
  description: string | null;
  config: JsonObject;
  context: JsonObject;
  metadata: JsonObject;
}

/**
 * Which assistants a custom auth user may see: those whose metadata passes the handler's `filter`,
 * and the `sharedIds` (the system assistants, when reading) whatever their metadata holds.
 */
export interface AssistantVisibility {
  readonly filter: AuthFilter;
  readonly sharedIds: readonly string[];
}

/** `and (<visibility>)` on the assistant's `metadata` column (optionally with a table alias); empty when every row is visible. */
function visibleSql(q: Queryable, visible: AssistantVisibility | undefined, alias?: string): SqlCondition {
  if (!visible) return q``;
  const column = (name: string) => (alias ? `${alias}.${name}` : name);
  const filter = authFilterSql(q, column("metadata"), visible.filter);
  if (visible.sharedIds.length === 0) return q`and (${filter})`;
  return q`and ((${filter}) or ${q(column("assistant_id"))} = any(${visible.sharedIds as string[]}::uuid[]))`;
}

/** Filters of search and count; every one optional. */
export interface AssistantFilter {
  /** JSON containment on metadata. */
  metadata?: JsonObject;
  graphId?: string;
  /** Case-insensitive substring of the name. */
  name?: string;
  /** Custom auth's visibility; every assistant when absent. */
  visible?: AssistantVisibility;
  /** Only these assistants (lower-case UUIDs). */
  ids?: readonly string[];
  /**
   * The graphs this server serves: a system assistant (`metadata.created_by = "system"`) of any
   * other graph is left out, as nothing could run it. Every assistant when absent.
   */
  servedGraphs?: readonly string[];
}

/** Columns search may sort by. The allowlist identifiers come from: never a client string. */
export const ASSISTANT_SORT_COLUMNS = [
  "assistant_id",
  "created_at",
  "updated_at",
  "name",
  "graph_id",
] as const;

/** One of {@link ASSISTANT_SORT_COLUMNS}. */
export type AssistantSortColumn = (typeof ASSISTANT_SORT_COLUMNS)[number];

interface AssistantRow {
  assistant_id: string;
  graph_id: string;
  name: string;
  description: string | null;
  config: JsonObject;
  context: JsonObject;
  metadata: JsonObject;
  version: number;
  created_at: Date;
  updated_at?: Date;
}

function toRecord(row: AssistantRow): AssistantRecord {
  return {
    assistantId: row.assistant_id,
    graphId: row.graph_id,
    name: row.name,
    description: row.description,
    config: row.config,
    context: row.context,
    metadata: row.metadata,
    version: row.version,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** A JSON parameter: porsager serialises it once (a string cast to jsonb would be stored twice encoded). */
const j = (q: Queryable, value: JsonObject) => q.json(value as postgres.JSONValue);

/**
 * Inserts an assistant at version 1, with its version row, in one statement. Returns undefined
 * when the workspace already has an assistant with that id (nothing is written then).
 */
export async function insertAssistant(
  q: Queryable,
  workspaceId: string,
  assistantId: string,
  f: AssistantFields,
): Promise<AssistantRecord | undefined> {
  const rows = await q<AssistantRow[]>`
    with created as (
      insert into assistants (workspace_id, assistant_id, graph_id, name, description, config, context, metadata, version)
      values (${workspaceId}, ${assistantId}, ${f.graphId}, ${f.name}, ${f.description},
              ${j(q, f.config)}, ${j(q, f.context)}, ${j(q, f.metadata)}, 1)
      on conflict (workspace_id, assistant_id) do nothing
      returning *
    ), versioned as (
      insert into assistant_versions (workspace_id, assistant_id, version, graph_id, name, description, config, context, metadata, created_at)
      select workspace_id, assistant_id, version, graph_id, name, description, config, context, metadata, created_at
      from created
    )
    select * from created`;
  return rows[0] && toRecord(rows[0]);
}

/** The assistant at its current version, if the workspace has it (and `visible` lets the caller see it). */
export async function findAssistant(
  q: Queryable,
  workspaceId: string,
  assistantId: string,
  visible?: AssistantVisibility,
): Promise<AssistantRecord | undefined> {
  const [row] = await q<AssistantRow[]>`
    select * from assistants where workspace_id = ${workspaceId} and assistant_id = ${assistantId}
    ${visibleSql(q, visible)}`;
  return row && toRecord(row);
}

/** An assistant as read at one version of its row: `rowVersion` changes with every change of the row. */
export interface VersionedAssistant {
  assistant: AssistantRecord;
  /** The row's version (its `xmin`, as text): a write can check the row is still the one read. */
  rowVersion: string;
}

/**
 * {@link findAssistant} with the row's version, for a reader that keeps the record and has every
 * later write that relies on it check it ({@link assistantUnchanged}).
 */
export async function findVersionedAssistant(
  q: Queryable,
  workspaceId: string,
  assistantId: string,
): Promise<VersionedAssistant | undefined> {
  const [row] = await q<(AssistantRow & { row_version: string })[]>`
    select *, xmin::text as row_version from assistants
    where workspace_id = ${workspaceId} and assistant_id = ${assistantId}`;
  return row && { assistant: toRecord(row), rowVersion: row.row_version };
}

/**
 * A condition (for a statement's `where`) that holds while the workspace's assistant row is still
 * at `rowVersion`: not changed, not deleted (and re-created) since it was read.
 */
export function assistantUnchanged(
  q: Queryable,
  workspaceId: string,
  assistantId: string,
  rowVersion: string,
) {
  return q`exists (select 1 from assistants a where a.workspace_id = ${workspaceId}
    and a.assistant_id = ${assistantId} and a.xmin = ${rowVersion}::xid)`;
}

/**
 * Writes a new version (one past the highest existing version) and makes it current. The caller
 * computes the fields from {@link lockAssistant}'s record inside the same transaction.
 */
export async function insertAssistantVersion(
  q: Queryable,
  workspaceId: string,
  assistantId: string,
  f: AssistantFields,
): Promise<AssistantRecord> {
  const [row] = await q<AssistantRow[]>`
    with next as (
      select coalesce(max(version), 0) + 1 as version from assistant_versions
      where workspace_id = ${workspaceId} and assistant_id = ${assistantId}
    ), versioned as (
      insert into assistant_versions (workspace_id, assistant_id, version, graph_id, name, description, config, context, metadata)
      select ${workspaceId}, ${assistantId}, next.version, ${f.graphId}, ${f.name}, ${f.description},
             ${j(q, f.config)}, ${j(q, f.context)}, ${j(q, f.metadata)}
      from next
    )
    update assistants a
    set graph_id = ${f.graphId}, name = ${f.name}, description = ${f.description},
        config = ${j(q, f.config)}, context = ${j(q, f.context)},
        metadata = ${j(q, f.metadata)}, version = next.version, updated_at = now()
    from next
    where a.workspace_id = ${workspaceId} and a.assistant_id = ${assistantId}
    returning a.*`;
  if (!row) throw new Error(`assistant ${assistantId} vanished while it was locked`);
  return toRecord(row);
}

/** The assistant (when `visible` lets the caller see it), locked for update until the transaction ends. */
export async function lockAssistant(
  q: Queryable,
  workspaceId: string,
  assistantId: string,
  visible?: AssistantVisibility,
): Promise<AssistantRecord | undefined> {
  const [row] = await q<AssistantRow[]>`
    select * from assistants where workspace_id = ${workspaceId} and assistant_id = ${assistantId}
    ${visibleSql(q, visible)}
    for update`;
  return row && toRecord(row);
}

/**
 * Makes an existing version current: the assistant takes that version's fields. Returns undefined
 * when the assistant (visible to the caller) or the version does not exist.
 */
export async function setCurrentAssistantVersion(
  q: Queryable,
  workspaceId: string,
  assistantId: string,
  version: number,
  visible?: AssistantVisibility,
): Promise<AssistantRecord | undefined> {
  const [row] = await q<AssistantRow[]>`
    update assistants a
    set graph_id = v.graph_id, name = v.name, description = v.description, config = v.config,
        context = v.context, metadata = v.metadata, version = v.version, updated_at = now()
    from assistant_versions v
    where a.workspace_id = ${workspaceId} and a.assistant_id = ${assistantId}
      and v.workspace_id = a.workspace_id and v.assistant_id = a.assistant_id and v.version = ${version}
      ${visibleSql(q, visible, "a")}
    returning a.*`;
  return row && toRecord(row);
}

/** Deletes an assistant and its versions; false when the workspace has no such assistant (visible to the caller). */
export async function deleteAssistant(
  q: Queryable,
  workspaceId: string,
  assistantId: string,
  visible?: AssistantVisibility,
): Promise<boolean> {
  const rows = await q`
    delete from assistants where workspace_id = ${workspaceId} and assistant_id = ${assistantId}
    ${visibleSql(q, visible)}
    returning assistant_id`;
  return rows.length > 0;
}

/**
 * Ids of the workspace's threads whose `metadata.assistant_id` is `assistantId` (for DeleteAssistant
 * with `delete_threads`), and whose metadata passes custom auth's `filter` when there is one,
 * locked until the transaction ends so none is changed while being deleted.
 */
export async function threadIdsOfAssistant(
  q: Queryable,
  workspaceId: string,
  assistantId: string,
  filter?: AuthFilter,
): Promise<string[]> {
  const rows = await q<{ thread_id: string }[]>`
    select thread_id::text from threads
    where workspace_id = ${workspaceId} and metadata @> ${j(q, { assistant_id: assistantId })}
      ${filter ? q`and (${authFilterSql(q, "metadata", filter)})` : q``}
    for update`;
  return rows.map((r) => r.thread_id);
}

/** The metadata the server gives the system assistants it makes. */
const SYSTEM_METADATA: JsonObject = { created_by: "system" };

function where(q: Queryable, workspaceId: string, f: AssistantFilter) {
  return q`
    workspace_id = ${workspaceId}
    ${f.metadata ? q`and metadata @> ${j(q, f.metadata)}` : q``}
    ${f.graphId !== undefined ? q`and graph_id = ${f.graphId}` : q``}
    ${f.name !== undefined ? q`and strpos(lower(name), lower(${f.name})) > 0` : q``}
    ${f.ids !== undefined ? q`and assistant_id = any(${f.ids as string[]}::uuid[])` : q``}
    ${
      f.servedGraphs !== undefined
        ? q`and (graph_id = any(${f.servedGraphs as string[]}::text[]) or not metadata @> ${j(q, SYSTEM_METADATA)})`
        : q``
    }
    ${visibleSql(q, f.visible)}`;
}

/** A page of the workspace's assistants matching `filter`, sorted, with the total match count. */
export async function searchAssistants(
  q: Queryable,
  workspaceId: string,
  filter: AssistantFilter,
  page: { sortBy: AssistantSortColumn; descending: boolean; limit: number; offset: number },
): Promise<{ assistants: AssistantRecord[]; total: number }> {
  const rows = await q<AssistantRow[]>`
    select * from assistants where ${where(q, workspaceId, filter)}
    order by ${q(page.sortBy)} ${page.descending ? q`desc` : q`asc`}, assistant_id ${page.descending ? q`desc` : q`asc`}
    limit ${page.limit} offset ${page.offset}`;
  const total =
    rows.length > 0 && rows.length < page.limit
      ? page.offset + rows.length
      : await countAssistants(q, workspaceId, filter);
  return { assistants: rows.map(toRecord), total };
}

/** Number of the workspace's assistants matching `filter`. */
export async function countAssistants(
  q: Queryable,
  workspaceId: string,
  filter: AssistantFilter,
): Promise<number> {
  const [row] = await q<{ n: number }[]>`
    select count(*)::int as n from assistants where ${where(q, workspaceId, filter)}`;
  return row?.n ?? 0;
}

/** Versions of an assistant, newest first, optionally only those whose metadata contains `metadata`. */
export async function listAssistantVersions(
  q: Queryable,
  workspaceId: string,
  assistantId: string,
  options: { metadata?: JsonObject; limit: number; offset: number },
): Promise<AssistantRecord[]> {
  const rows = await q<AssistantRow[]>`
    select assistant_id, version, graph_id, name, description, config, context, metadata, created_at
    from assistant_versions
    where workspace_id = ${workspaceId} and assistant_id = ${assistantId}
      ${options.metadata ? q`and metadata @> ${j(q, options.metadata)}` : q``}
    order by version desc
    limit ${options.limit} offset ${options.offset}`;
  return rows.map(toRecord);
}
