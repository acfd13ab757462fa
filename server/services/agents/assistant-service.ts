import type { JsonObject } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import type { AssistantService } from "../../../gen/agentplane/agents/v1/assistant_service_pb.js";
import { isUuid, uuidv7 } from "../../ids.js";
import { drawGraph, graphSchemas, subgraphSchemas } from "../../runtime/graph-introspection.js";
import type { CompiledGraph, GraphRegistry, RegisteredGraph } from "../../runtime/graph-registry.js";
import { syncAssistantSettings } from "../../settings/assistant-settings.js";
import {
  ASSISTANT_SORT_COLUMNS,
  type AssistantFields,
  type AssistantFilter,
  type AssistantRecord,
  type AssistantSortColumn,
  type AssistantVisibility,
  countAssistants,
  deleteAssistant,
  findAssistant,
  insertAssistant,
  insertAssistantVersion,
  listAssistantVersions,
  lockAssistant,
  searchAssistants,
  setCurrentAssistantVersion,
  threadIdsOfAssistant,
} from "../../store/agents/assistant-store.js";
import { deleteThreadCheckpoints } from "../../store/agents/checkpoint-thread-store.js";
import { deleteThreads } from "../../store/agents/thread-store.js";
import type { Sql } from "../../store/db.js";
import type { WorkspacePermission } from "../iam/permissions.js";
import { authorizeEvent, authorizeWorkspace, type Principal } from "../iam/principal.js";
import { type AssistantEvent, assistantVisibility } from "./assistant-access.js";
import { assistantMessage, graphSchemaMessage, parseSelect } from "./assistant-messages.js";
import { refuseEncryptedFilter } from "./encrypted-filter.js";
import type { SystemAssistants } from "./system-assistants.js";
import { handlerMetadata } from "./thread-access.js";

/** Dependencies of {@link createAssistantService}. */
export interface AssistantServiceDeps {
  sql: Sql;
  graphs: GraphRegistry;
  systemAssistants: SystemAssistants;
}

/** Default page size of search and versions, as in the LangGraph API. */
const DEFAULT_LIMIT = 10;
/** Largest page size of search and versions, as in the LangGraph API. */
const MAX_LIMIT = 1000;
/** Longest name accepted: far beyond any UI, short enough to keep rows and indexes small. */
const MAX_NAME_LENGTH = 1000;
/** Longest description accepted. */
const MAX_DESCRIPTION_LENGTH = 10_000;
/** Deepest `xray` expansion accepted: graphs nest a few levels; this bounds the work. */
const MAX_XRAY_DEPTH = 100;

/** AssistantService: the LangGraph assistants API on the workspace's assistants. */
export function createAssistantService(deps: AssistantServiceDeps): ServiceImpl<typeof AssistantService> {
  const { sql, graphs, systemAssistants } = deps;

  /** Authorizes, makes sure the system assistants exist, and returns the caller and workspace id. */
  const workspaceOf = async (
    ctx: HandlerContext,
    permission: WorkspacePermission,
  ): Promise<{ principal: Principal; workspaceId: string }> => {
    const { principal, workspace } = await authorizeWorkspace(ctx, permission);
    await systemAssistants.ensure(workspace.id);
    return { principal, workspaceId: workspace.id };
  };

  /** The workspace, and which assistants custom auth's handler of `event` lets the caller reach. */
  const scoped = async (
    ctx: HandlerContext,
    event: AssistantEvent,
    value: Record<string, unknown>,
  ): Promise<{ principal: Principal; workspaceId: string; visible: AssistantVisibility | undefined }> => {
    const permission = event === "assistants:read" || event === "assistants:search" ? "read" : "write";
    const { principal, workspaceId } = await workspaceOf(ctx, `assistants:${permission}`);
    const visible = await assistantVisibility(principal, systemAssistants, event, value);
    return { principal, workspaceId, visible };
  };

  /** A UUID, or the system assistant of the graph with that id. */
  const resolveId = (raw: string): string => {
    if (isUuid(raw)) return raw.toLowerCase();
    const id = systemAssistants.idOfGraph(raw);
    if (id) return id;
    throw new ConnectError(
      raw === ""
        ? "assistant_id is required: a UUID or a graph id"
        : `assistant "${raw}" not found: it is neither a UUID nor a graph id of this server (graphs: ${graphs.ids().join(", ")})`,
      raw === "" ? Code.InvalidArgument : Code.NotFound,
    );
  };

  /**
   * Search's and count's filter: the request's, its `ids` (UUIDs, or graph ids for their system
   * assistants; 422 naming any other entry), and no system assistant of a graph this server no
   * longer serves.
   */
  const listFilter = (request: {
    metadata?: JsonObject;
    graphId?: string;
    name?: string;
    ids: readonly string[];
  }): AssistantFilter => {
    const ids = request.ids.map((raw, i) => {
      if (isUuid(raw)) return raw.toLowerCase();
      const id = systemAssistants.idOfGraph(raw);
      if (!id)
        throw new ConnectError(
          `ids[${i}] must be an assistant UUID or a graph id of this server (graphs: ${graphs.ids().join(", ")}), got ${JSON.stringify(raw)}`,
          Code.InvalidArgument,
        );
      return id;
    });
    return {
      ...filterOf(sql, request),
      ...(ids.length > 0 ? { ids } : {}),
      servedGraphs: graphs.ids(),
    };
  };

  const requireGraph = (graphId: string): string => {
    if (graphs.get(graphId)) return graphId;
    throw new ConnectError(
      graphId === ""
        ? `graph_id is required; this server's graphs: ${graphs.ids().join(", ")}`
        : `graph_id "${graphId}" is not a graph of this server; its graphs: ${graphs.ids().join(", ")}`,
      Code.InvalidArgument,
    );
  };

  const getExisting = async (
    workspaceId: string,
    assistantId: string,
    visible: AssistantVisibility | undefined,
  ): Promise<AssistantRecord> => {
    const found = await findAssistant(sql, workspaceId, assistantId, visible);
    if (!found) throw notFound(assistantId);
    return found;
  };

  /** The assistant `rawId` names, when the caller may read it (`assistants:read`); NOT_FOUND otherwise. */
  const readable = async (ctx: HandlerContext, rawId: string): Promise<AssistantRecord> => {
    const assistantId = resolveId(rawId);
    const { workspaceId, visible } = await scoped(ctx, "assistants:read", { assistant_id: assistantId });
    return getExisting(workspaceId, assistantId, visible);
  };

  /** The graph of an assistant, loaded for drawing and schemas (no checkpointer needed). */
  const graphOf = async (
    assistant: AssistantRecord,
  ): Promise<{ registered: RegisteredGraph; graph: CompiledGraph }> => {
    const registered = graphs.get(assistant.graphId);
    if (!registered) {
      throw new ConnectError(
        `assistant ${assistant.assistantId} uses graph "${assistant.graphId}", which this server does not load`,
        Code.FailedPrecondition,
      );
    }
    const graph = await registered.load({
      config: { ...assistant.config, configurable: { ...assistant.context } },
    });
    return { registered, graph };
  };

  return {
    async createAssistant(request, ctx) {
      const { principal, workspaceId } = await workspaceOf(ctx, "assistants:write");
      const ifExists = request.ifExists ?? "raise";
      if (ifExists !== "raise" && ifExists !== "do_nothing") {
        throw new ConnectError(
          `if_exists must be "raise" or "do_nothing", got "${ifExists}"`,
          Code.InvalidArgument,
        );
      }
      let assistantId = uuidv7();
      if (request.assistantId !== undefined) {
        if (!isUuid(request.assistantId))
          throw new ConnectError("assistant_id must be a UUID", Code.InvalidArgument);
        assistantId = request.assistantId.toLowerCase();
      }
      const { config, context } = syncConfigAndContext(request.config, request.context);
      const fields: AssistantFields = {
        graphId: requireGraph(request.graphId),
        name: checkName(request.name ?? "Untitled"),
        description: checkDescription(request.description) ?? null,
        config,
        context,
        metadata: request.metadata ?? {},
      };
      const value: Record<string, unknown> = {
        assistant_id: assistantId,
        graph_id: fields.graphId,
        config,
        context,
        metadata: { ...fields.metadata },
        if_exists: ifExists,
        name: fields.name,
        description: fields.description,
      };
      const visible = await assistantVisibility(principal, systemAssistants, "assistants:create", value);
      fields.metadata = handlerMetadata(value, "assistants:create");
      const created = await insertAssistant(sql, workspaceId, assistantId, fields);
      if (created) return assistantMessage(created);
      // An existing assistant the caller may not see collides without being shown.
      const existing = await findAssistant(sql, workspaceId, assistantId, visible);
      if (existing && ifExists === "do_nothing") return assistantMessage(existing);
      throw new ConnectError(`assistant ${assistantId} already exists`, Code.AlreadyExists);
    },

    async searchAssistants(request, ctx) {
      const select = parseSelect(request.select);
      const limit = checkLimit(request.limit);
      const offset = checkOffset(request.offset);
      const sortBy = request.sortBy ?? "created_at";
      if (!(ASSISTANT_SORT_COLUMNS as readonly string[]).includes(sortBy)) {
        throw new ConnectError(
          `sort_by must be one of ${ASSISTANT_SORT_COLUMNS.join(", ")}, got "${sortBy}"`,
          Code.InvalidArgument,
        );
      }
      const sortOrder = request.sortOrder ?? "desc";
      if (sortOrder !== "asc" && sortOrder !== "desc") {
        throw new ConnectError(
          `sort_order must be "asc" or "desc", got "${sortOrder}"`,
          Code.InvalidArgument,
        );
      }
      const { workspaceId, visible } = await scoped(ctx, "assistants:search", {
        graph_id: request.graphId,
        metadata: request.metadata,
        name: request.name,
        limit,
        offset,
      });
      const filter = { ...listFilter(request), ...(visible ? { visible } : {}) };
      const { assistants, total } = await searchAssistants(sql, workspaceId, filter, {
        sortBy: sortBy as AssistantSortColumn,
        descending: sortOrder === "desc",
        limit,
        offset,
      });
      ctx.responseHeader.set("X-Pagination-Total", String(total));
      // The next page's offset, only when there is a next page (a full page and more rows).
      if (assistants.length === limit && offset + limit < total)
        ctx.responseHeader.set("X-Pagination-Next", String(offset + limit));
      return { assistants: assistants.map((a) => assistantMessage(a, select)), total };
    },

    async countAssistants(request, ctx) {
      const { workspaceId, visible } = await scoped(ctx, "assistants:search", {
        graph_id: request.graphId,
        metadata: request.metadata,
        name: request.name,
        limit: 0,
        offset: 0,
      });
      const filter = { ...listFilter(request), ...(visible ? { visible } : {}) };
      return { count: await countAssistants(sql, workspaceId, filter) };
    },

    async getAssistant(request, ctx) {
      const assistantId = resolveId(request.assistantId);
      const { workspaceId, visible } = await scoped(ctx, "assistants:read", { assistant_id: assistantId });
      return assistantMessage(await getExisting(workspaceId, assistantId, visible));
    },

    async updateAssistant(request, ctx) {
      const assistantId = resolveId(request.assistantId);
      const graphId = request.graphId === undefined ? undefined : requireGraph(request.graphId);
      const name = request.name === undefined ? undefined : checkName(request.name);
      const description = checkDescription(request.description);
      const replacesConfig = request.config !== undefined || request.context !== undefined;
      const synced = replacesConfig ? syncConfigAndContext(request.config, request.context) : undefined;
      const value: Record<string, unknown> = {
        assistant_id: assistantId,
        graph_id: graphId,
        config: synced?.config,
        context: synced?.context,
        metadata: request.metadata === undefined ? undefined : { ...request.metadata },
        name,
        description,
      };
      const { workspaceId, visible } = await scoped(ctx, "assistants:update", value);
      const metadata = handlerMetadata(value, "assistants:update");
      const updated = await sql.begin(async (tx) => {
        const current = await lockAssistant(tx, workspaceId, assistantId, visible);
        if (!current) throw notFound(assistantId);
        return insertAssistantVersion(tx, workspaceId, assistantId, {
          graphId: graphId ?? current.graphId,
          name: name ?? current.name,
          description: description === undefined ? current.description : description,
          config: synced?.config ?? current.config,
          context: synced?.context ?? current.context,
          metadata: { ...current.metadata, ...metadata },
        });
      });
      return assistantMessage(updated);
    },

    async deleteAssistant(request, ctx) {
      const assistantId = resolveId(request.assistantId);
      const { principal, workspaceId, visible } = await scoped(ctx, "assistants:delete", {
        assistant_id: assistantId,
        delete_threads: request.deleteThreads ?? false,
      });
      // Threads go only as far as custom auth's threads:delete lets the caller delete them: other
      // users' threads on this assistant stay.
      const threadsFilter = request.deleteThreads
        ? await authorizeEvent(principal, "threads:delete", { assistant_id: assistantId })
        : undefined;
      await sql.begin(async (tx) => {
        if (!(await deleteAssistant(tx, workspaceId, assistantId, visible))) throw notFound(assistantId);
        if (!request.deleteThreads) return;
        // The same steps as ThreadService's delete, inside this transaction.
        const threadIds = await threadIdsOfAssistant(tx, workspaceId, assistantId, threadsFilter);
        await deleteThreadCheckpoints(tx, workspaceId, threadIds);
        await deleteThreads(tx, workspaceId, threadIds);
      });
      return { assistantIds: [assistantId] };
    },

    async listAssistantVersions(request, ctx) {
      const assistantId = resolveId(request.assistantId);
      const limit = checkLimit(request.limit);
      const offset = checkOffset(request.offset);
      refuseEncryptedFilter(sql, "metadata", request.metadata);
      const { workspaceId, visible } = await scoped(ctx, "assistants:read", { assistant_id: assistantId });
      // The handler's filter decides on the assistant as it is now; its versions come with it.
      if (visible) await getExisting(workspaceId, assistantId, visible);
      const versions = await listAssistantVersions(sql, workspaceId, assistantId, {
        ...(request.metadata ? { metadata: request.metadata } : {}),
        limit,
        offset,
      });
      if (versions.length === 0) await getExisting(workspaceId, assistantId, visible);
      return { versions: versions.map((v) => assistantMessage(v)) };
    },

    async setLatestAssistantVersion(request, ctx) {
      const assistantId = resolveId(request.assistantId);
      if (request.version < 1)
        throw new ConnectError(`version must be 1 or more, got ${request.version}`, Code.InvalidArgument);
      const { workspaceId, visible } = await scoped(ctx, "assistants:update", {
        assistant_id: assistantId,
        version: request.version,
      });
      const updated = await setCurrentAssistantVersion(
        sql,
        workspaceId,
        assistantId,
        request.version,
        visible,
      );
      if (updated) return assistantMessage(updated);
      await getExisting(workspaceId, assistantId, visible);
      throw new ConnectError(`assistant ${assistantId} has no version ${request.version}`, Code.NotFound);
    },

    async getAssistantGraph(request, ctx) {
      const xray = parseXray(request.xray);
      const assistant = await readable(ctx, request.assistantId);
      return { graph: await drawGraph((await graphOf(assistant)).graph, xray) };
    },

    async getAssistantSchemas(request, ctx) {
      const assistant = await readable(ctx, request.assistantId);
      const { registered, graph } = await graphOf(assistant);
      return graphSchemaMessage(await graphSchemas(registered, graph), assistant.graphId);
    },

    async getAssistantSubgraphs(request, ctx) {
      const assistant = await readable(ctx, request.assistantId);
      const { registered, graph } = await graphOf(assistant);
      const found = await subgraphSchemas(registered, graph, request.namespace, request.recurse);
      return {
        subgraphs: Object.fromEntries(
          Object.entries(found).map(([ns, schemas]) => [ns, graphSchemaMessage(schemas)]),
        ),
      };
    },
  };
}

function notFound(assistantId: string): ConnectError {
  return new ConnectError(`assistant ${assistantId} not found`, Code.NotFound);
}

function filterOf(
  sql: Sql,
  request: { metadata?: JsonObject; graphId?: string; name?: string },
): AssistantFilter {
  refuseEncryptedFilter(sql, "metadata", request.metadata);
  return {
    ...(request.metadata && Object.keys(request.metadata).length > 0 ? { metadata: request.metadata } : {}),
    ...(request.graphId ? { graphId: request.graphId } : {}),
    ...(request.name ? { name: request.name } : {}),
  };
}

/** {@link syncAssistantSettings}, refusing settings that cannot be reconciled with a 422. */
function syncConfigAndContext(
  config: JsonObject | undefined,
  context: JsonObject | undefined,
): { config: JsonObject; context: JsonObject } {
  const synced = syncAssistantSettings(config, context);
  if ("problem" in synced) throw new ConnectError(synced.problem, Code.InvalidArgument);
  return synced.settings;
}

function checkName(name: string): string {
  if (name.length > MAX_NAME_LENGTH)
    throw new ConnectError(`name must be at most ${MAX_NAME_LENGTH} characters`, Code.InvalidArgument);
  return name;
}

function checkDescription(description: string | undefined): string | undefined {
  if (description !== undefined && description.length > MAX_DESCRIPTION_LENGTH) {
    throw new ConnectError(
      `description must be at most ${MAX_DESCRIPTION_LENGTH} characters`,
      Code.InvalidArgument,
    );
  }
  return description;
}

function checkLimit(limit: number | undefined): number {
  if (limit === undefined) return DEFAULT_LIMIT;
  if (limit < 1 || limit > MAX_LIMIT)
    throw new ConnectError(`limit must be from 1 to ${MAX_LIMIT}, got ${limit}`, Code.InvalidArgument);
  return limit;
}

function checkOffset(offset: number | undefined): number {
  if (offset === undefined) return 0;
  if (offset < 0) throw new ConnectError(`offset must be 0 or more, got ${offset}`, Code.InvalidArgument);
  return offset;
}

/** `xray`: absent/"false" → false, "true" → true, a whole number → that depth (0 → false). */
function parseXray(raw: string | undefined): boolean | number {
  if (raw === undefined || raw === "" || raw === "false") return false;
  if (raw === "true") return true;
  if (/^\d+$/.test(raw) && Number(raw) <= MAX_XRAY_DEPTH) return Number(raw) === 0 ? false : Number(raw);
  throw new ConnectError(
    `xray must be true, false or a depth from 0 to ${MAX_XRAY_DEPTH}, got "${raw}"`,
    Code.InvalidArgument,
  );
}
