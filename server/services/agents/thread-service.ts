import { type JsonObject, toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { ThreadService } from "../../../gen/agentplane/agents/v1/thread_service_pb.js";
import { uuidv7 } from "../../ids.js";
import { isStrippedMetadataKey } from "../../runtime/checkpoint-metadata.js";
import {
  copyThreadCheckpoints,
  deleteThreadCheckpoints,
  pruneThreadCheckpoints,
  threadCheckpointStorage,
} from "../../runtime/postgres-checkpointer.js";
import {
  copyThreadRow,
  countThreads,
  deleteThreads,
  existingThreadIds,
  patchLatestCheckpointMetadata,
  searchThreads,
  type ThreadFilter,
  type ThreadTtl,
  updateThread,
} from "../../store/agents/thread-store.js";
import { createThreadBatches } from "../../store/batching/thread-batches.js";
import type { Sql } from "../../store/db.js";
import { authorizeEvent, authorizeWorkspace } from "../iam/principal.js";
import { invalid, oneOf, requireUuid } from "../request-validation.js";
import { refuseEncryptedFilter } from "./encrypted-filter.js";
import { handlerMetadata, loadThread, threadNotFound } from "./thread-access.js";
import { graphCall, type ThreadGraphs } from "./thread-graph.js";
import {
  DEFAULT_SEARCH_LIMIT,
  MAX_PRUNE_IDS,
  parseInclude,
  parseLimit,
  parseOffset,
  parseSort,
  parseStatus,
  parseTtl,
  requireObject,
} from "./thread-requests.js";
import { createThreadStateHandlers } from "./thread-state-handlers.js";
import { parseExtract, parseSelect, threadView } from "./thread-view.js";

/** Dependencies of {@link createThreadService}. */
export interface ThreadServiceDeps {
  sql: Sql;
  /**
   * The TTL of threads created without one: the graphs file's `checkpointer.ttl` (strategy and
   * `default_ttl`); undefined keeps them forever.
   */
  defaultTtl?: ThreadTtl;
  /** The graphs of threads, with the workspace's checkpointer and store attached. */
  threadGraphs: ThreadGraphs;
}

function filterOf(
  sql: Sql,
  request: { metadata?: JsonObject; values?: JsonObject; status?: string },
): ThreadFilter {
  refuseEncryptedFilter(sql, "metadata", request.metadata);
  refuseEncryptedFilter(sql, "values", request.values);
  const status = parseStatus(request.status);
  return {
    ...(request.metadata ? { metadata: request.metadata } : {}),
    ...(request.values ? { values: request.values } : {}),
    ...(status ? { status } : {}),
  };
}

/** Deletes threads with their checkpoints, in one transaction; returns the ids that existed. */
function removeThreads(sql: Sql, workspaceId: string, threadIds: string[]): Promise<string[]> {
  return sql.begin(async (tx) => {
    await deleteThreadCheckpoints(tx, workspaceId, threadIds);
    return deleteThreads(tx, workspaceId, threadIds);
  });
}

/** ThreadService: threads, their state and their history. */
export function createThreadService({
  sql,
  threadGraphs,
  defaultTtl,
}: ThreadServiceDeps): ServiceImpl<typeof ThreadService> {
  const threads = createThreadBatches(sql);
  return {
    async createThread(request, ctx) {
      const { principal, workspace } = await authorizeWorkspace(ctx, "threads:write");
      const threadId = request.threadId === undefined ? uuidv7() : requireUuid(request.threadId, "thread_id");
      const ifExists = oneOf(request.ifExists, ["raise", "do_nothing"] as const, "if_exists", "raise");
      const value = { thread_id: threadId, metadata: request.metadata ?? {}, if_exists: ifExists };
      const auth = await authorizeEvent(principal, "threads:create", value);
      const metadata = handlerMetadata(value, "threads:create");
      const ttl = parseTtl(request.ttl) ?? defaultTtl ?? null;
      const supersteps = request.supersteps.map((step, i) => ({
        updates: step.updates.map((update, j) => {
          if (update.command !== undefined && update.command.kind.case !== "nullValue")
            throw invalid(`supersteps[${i}].updates[${j}].command is not supported on create: send values`);
          if (update.asNode === undefined)
            throw invalid(`supersteps[${i}].updates[${j}].as_node is required`);
          return {
            values: update.values ? toJson(ValueSchema, update.values) : null,
            asNode: update.asNode,
          };
        }),
      }));
      let graph: Awaited<ReturnType<ThreadGraphs["byId"]>> | undefined;
      if (supersteps.length > 0) {
        const graphId = metadata.graph_id;
        if (typeof graphId !== "string")
          throw invalid("supersteps need metadata.graph_id: the graph that applies them");
        graph = await threadGraphs.byId(workspace.id, graphId);
      }
      const created = await threads.insert({ workspaceId: workspace.id, threadId, metadata, ttl });
      if (!created) {
        const key = { workspaceId: workspace.id, threadId };
        // Answering with the existing thread reads it: the create handler's filter, else the read
        // handler's, decides. A thread the caller may not see collides all the same: 409, never its content.
        const visibleBy =
          ifExists === "do_nothing"
            ? (auth ?? (await authorizeEvent(principal, "threads:read", { thread_id: threadId })))
            : undefined;
        const existing =
          ifExists !== "do_nothing"
            ? undefined
            : visibleBy
              ? await threads.findVisible(key, visibleBy)
              : await threads.find(key);
        if (!existing) throw new ConnectError(`thread ${threadId} already exists`, Code.AlreadyExists);
        return threadView(existing);
      }
      if (!graph) return threadView(created);
      const stateGraph = graph;
      try {
        await graphCall("supersteps", () =>
          stateGraph.bulkUpdateState(
            { configurable: { thread_id: threadId, checkpoint_ns: "" } },
            supersteps,
          ),
        );
        await threadGraphs.refresh(workspace.id, created, stateGraph);
      } catch (error) {
        // Nothing half-made stays behind: the thread exists only with its whole initial state.
        await removeThreads(sql, workspace.id, [threadId]);
        throw error;
      }
      const thread = await threads.find({ workspaceId: workspace.id, threadId });
      if (!thread) throw threadNotFound(threadId);
      return threadView(thread);
    },

    async searchThreads(request, ctx) {
      const { principal, workspace } = await authorizeWorkspace(ctx, "threads:read");
      const limit = parseLimit(request.limit, DEFAULT_SEARCH_LIMIT);
      const offset = parseOffset(request.offset);
      const sort = parseSort(request.sortBy, request.sortOrder);
      const select = parseSelect(request.select);
      const extract = parseExtract(request.extract);
      const ids = request.ids.map((id, i) => requireUuid(id, `ids[${i}]`));
      const auth = await authorizeEvent(principal, "threads:search", {
        ids,
        metadata: request.metadata ?? null,
        values: request.values ?? null,
        status: request.status ?? null,
        limit,
        offset,
      });
      const filter: ThreadFilter = {
        ...filterOf(sql, request),
        ...(ids.length > 0 ? { ids } : {}),
        ...(auth ? { auth } : {}),
      };
      const { threads, total } = await searchThreads(sql, workspace.id, filter, { ...sort, limit, offset });
      ctx.responseHeader.set("X-Pagination-Total", String(total));
      if (offset + threads.length < total)
        ctx.responseHeader.set("X-Pagination-Next", String(offset + limit));
      return {
        threads: threads.map((t) =>
          threadView(t, { ...(select ? { select } : {}), ...(extract ? { extract } : {}) }),
        ),
      };
    },

    async countThreads(request, ctx) {
      const { principal, workspace } = await authorizeWorkspace(ctx, "threads:read");
      const auth = await authorizeEvent(principal, "threads:search", {
        metadata: request.metadata ?? null,
        values: request.values ?? null,
        status: request.status ?? null,
      });
      return {
        count: await countThreads(sql, workspace.id, {
          ...filterOf(sql, request),
          ...(auth ? { auth } : {}),
        }),
      };
    },

    async pruneThreads(request, ctx) {
      const { principal, workspace } = await authorizeWorkspace(ctx, "threads:write");
      const strategy = oneOf(request.strategy, ["delete", "keep_latest"] as const, "strategy", "delete");
      if (request.threadIds.length === 0 || request.threadIds.length > MAX_PRUNE_IDS)
        throw invalid(`thread_ids must list 1 to ${MAX_PRUNE_IDS} thread ids`);
      const ids = [...new Set(request.threadIds.map((id, i) => requireUuid(id, `thread_ids[${i}]`)))];
      const auth = await authorizeEvent(principal, "threads:delete", { thread_ids: ids });
      const existing = await existingThreadIds(sql, workspace.id, ids, auth);
      if (existing.length === 0) return { prunedCount: 0 };
      if (strategy === "delete")
        return { prunedCount: (await removeThreads(sql, workspace.id, existing)).length };
      await pruneThreadCheckpoints(sql, workspace.id, existing, "keep_latest");
      return { prunedCount: existing.length };
    },

    async getThread(request, ctx) {
      const include = parseInclude(request.include);
      const { thread } = await loadThread(threads, ctx, "threads:read", request.threadId);
      return threadView(thread, { includeTtl: include.has("ttl") });
    },

    async updateThread(request, ctx) {
      const ttl = parseTtl(request.ttl);
      const value = { thread_id: request.threadId, metadata: request.metadata ?? {} };
      const { workspaceId, thread } = await loadThread(
        threads,
        ctx,
        "threads:update",
        request.threadId,
        value,
      );
      const updated = await updateThread(sql, workspaceId, thread.threadId, {
        metadata: handlerMetadata(value, "threads:update"),
        ...(ttl ? { ttl } : {}),
      });
      if (!updated) throw threadNotFound(thread.threadId);
      return threadView(updated);
    },

    async deleteThread(request, ctx) {
      const { workspaceId, thread } = await loadThread(threads, ctx, "threads:delete", request.threadId);
      await removeThreads(sql, workspaceId, [thread.threadId]);
      return {};
    },

    async getThreadStorage(request, ctx) {
      const { workspaceId, thread } = await loadThread(threads, ctx, "threads:read", request.threadId);
      const storage = await threadCheckpointStorage(sql, workspaceId, thread.threadId);
      return { threadId: thread.threadId, ...storage };
    },

    async copyThread(request, ctx) {
      // Copying reads the source (a thread the caller cannot see is not found) and needs write access.
      const { principal } = await authorizeWorkspace(ctx, "threads:write");
      const { workspaceId, thread } = await loadThread(threads, ctx, "threads:read", request.threadId).catch(
        (error: unknown) => {
          // A custom auth user is answered as the LangGraph JS server answers them: 409, for another
          // user's thread and for one that does not exist alike (telling them apart would say which exist).
          if (principal.authRules && error instanceof ConnectError && error.code === Code.NotFound)
            throw new ConnectError(
              `thread ${request.threadId} cannot be copied: not found`,
              Code.FailedPrecondition,
            );
          throw error;
        },
      );
      await authorizeEvent(principal, "threads:create", { thread_id: null, metadata: thread.metadata });
      const copyId = uuidv7();
      const copy = await sql.begin(async (tx) => {
        const row = await copyThreadRow(tx, workspaceId, thread.threadId, copyId);
        if (row) await copyThreadCheckpoints(tx, workspaceId, thread.threadId, copyId);
        return row;
      });
      if (!copy) throw threadNotFound(thread.threadId);
      return threadView(copy);
    },

    async patchThreadState(request, ctx) {
      // The checkpointer's rule applies to patched metadata too: no auth users, headers or request ids.
      const metadata = Object.fromEntries(
        Object.entries(requireObject(request.metadata, "metadata")).filter(
          ([key]) => !isStrippedMetadataKey(key),
        ),
      );
      const { workspaceId, thread } = await loadThread(threads, ctx, "threads:update", request.threadId);
      if (!(await patchLatestCheckpointMetadata(sql, workspaceId, thread.threadId, metadata)))
        throw new ConnectError(
          `thread ${thread.threadId} has no checkpoint to patch yet`,
          Code.FailedPrecondition,
        );
      return {};
    },

    ...createThreadStateHandlers({ sql, threads, threadGraphs }),
  };
}
