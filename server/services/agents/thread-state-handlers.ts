import { create, fromJson, type JsonObject, type JsonValue, toJson } from "@bufbuild/protobuf";
import { type Value, ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import type { StateSnapshot } from "@langchain/langgraph";
import {
  type CheckpointInput,
  type ThreadService,
  type ThreadState,
  ThreadStateSchema,
} from "../../../gen/agentplane/agents/v1/thread_service_pb.js";
import { checkpointOf } from "../../runtime/checkpoint-config.js";
import { isObject } from "../../runtime/plain-json.js";
import type { ThreadBatches } from "../../store/batching/thread-batches.js";
import type { Queryable } from "../../store/db.js";
import { queryList } from "../query-lists.js";
import { invalid } from "../request-validation.js";
import { selectRestFields } from "../response-status.js";
import { refuseEncryptedFilter } from "./encrypted-filter.js";
import { loadThread } from "./thread-access.js";
import { graphCall, isStored, rootConfig, type ThreadGraphs } from "./thread-graph.js";
import { DEFAULT_HISTORY_LIMIT, parseLimit } from "./thread-requests.js";
import { emptyThreadState, threadStateView } from "./thread-state-view.js";

type StateHandlers = Pick<
  ServiceImpl<typeof ThreadService>,
  | "getThreadState"
  | "getThreadStateAtCheckpoint"
  | "updateThreadState"
  | "listThreadHistory"
  | "searchThreadHistory"
>;

/** A checkpoint of the request: its namespace and id (both optional). */
interface CheckpointRef {
  ns?: string;
  id?: string;
}

function refOf(input: CheckpointInput | undefined, checkpointId?: string): CheckpointRef {
  const id = checkpointId ?? input?.checkpointId;
  return {
    ...(input?.checkpointNs !== undefined ? { ns: input.checkpointNs } : {}),
    ...(id ? { id } : {}),
  };
}

/**
 * The checkpoint id of a history `before`: a config (`{configurable: {checkpoint_id}}`), a
 * checkpoint (`{checkpoint_id}`) or the id itself; null and absent mean no bound.
 */
function beforeId(before: Value | undefined): string | undefined {
  const json: JsonValue = before ? toJson(ValueSchema, before) : null;
  if (json === null) return undefined;
  if (typeof json === "string" && json !== "") return json;
  const object = isObject(json) ? json : {};
  const configurable = object.configurable;
  const id = isObject(configurable) ? configurable.checkpoint_id : object.checkpoint_id;
  if (typeof id !== "string" || id === "")
    throw invalid(
      "before must be a checkpoint id, a config {configurable: {checkpoint_id}} or a checkpoint {checkpoint_id}",
    );
  return id;
}

/** The fields of a thread state a `select` may name (or `values.<key>`). */
const STATE_FIELDS = [
  "values",
  "next",
  "tasks",
  "checkpoint",
  "metadata",
  "created_at",
  "parent_checkpoint",
  "interrupts",
] as const;

/** A state `select`: the fields to answer, and the keys of the values when `values.<key>` names some. */
interface StateSelection {
  fields: ReadonlySet<string>;
  valueKeys: ReadonlySet<string> | undefined;
}

/** Parses a `select` of thread states (a JSON array is accepted); undefined selects everything. */
function parseStateSelect(raw: readonly string[]): StateSelection | undefined {
  const names = queryList(raw, "select");
  if (names.length === 0) return undefined;
  const fields = new Set<string>();
  const valueKeys = new Set<string>();
  let allValues = false;
  for (const name of names) {
    if (name.startsWith("values.") && name.length > "values.".length) {
      valueKeys.add(name.slice("values.".length));
      fields.add("values");
    } else if ((STATE_FIELDS as readonly string[]).includes(name)) {
      fields.add(name);
      if (name === "values") allValues = true;
    } else
      throw invalid(
        `select: unknown state field ${JSON.stringify(name)}; fields: ${STATE_FIELDS.join(", ")}, or values.<key>`,
      );
  }
  return { fields, valueKeys: allValues || valueKeys.size === 0 ? undefined : valueKeys };
}

/** `state` with only the selected fields (the others unset) and values. */
function applySelection(state: ThreadState, selection: StateSelection | undefined): ThreadState {
  if (!selection) return state;
  const { fields, valueKeys } = selection;
  const out = create(ThreadStateSchema, {});
  if (fields.has("values") && state.values) {
    const values = toJson(ValueSchema, state.values);
    out.values =
      valueKeys && isObject(values)
        ? fromJson(
            ValueSchema,
            Object.fromEntries(Object.entries(values).filter(([key]) => valueKeys.has(key))),
          )
        : state.values;
  }
  if (fields.has("next")) out.next = state.next;
  if (fields.has("tasks")) out.tasks = state.tasks;
  if (fields.has("checkpoint") && state.checkpoint) out.checkpoint = state.checkpoint;
  if (fields.has("metadata") && state.metadata) out.metadata = state.metadata;
  if (fields.has("created_at") && state.createdAt) out.createdAt = state.createdAt;
  if (fields.has("parent_checkpoint") && state.parentCheckpoint)
    out.parentCheckpoint = state.parentCheckpoint;
  if (fields.has("interrupts")) out.interrupts = state.interrupts;
  return out;
}

/** The state RPCs of ThreadService: read, update and list a thread's checkpoints through its graph. */
export function createThreadStateHandlers({
  sql,
  threads,
  threadGraphs,
}: {
  sql: Queryable;
  threads: ThreadBatches;
  threadGraphs: ThreadGraphs;
}): StateHandlers {
  const stateAt = async (
    ctx: HandlerContext,
    rawThreadId: string,
    ref: CheckpointRef,
    subgraphs: boolean,
    select: readonly string[],
  ): Promise<ThreadState> => {
    const selection = parseStateSelect(select);
    if (selection) selectRestFields(ctx, selection.fields);
    return applySelection(await fullStateAt(ctx, rawThreadId, ref, subgraphs), selection);
  };

  const fullStateAt = async (
    ctx: HandlerContext,
    rawThreadId: string,
    ref: CheckpointRef,
    subgraphs: boolean,
  ): Promise<ThreadState> => {
    const { workspaceId, thread } = await loadThread(threads, ctx, "threads:read", rawThreadId);
    const graph = await threadGraphs.forThread(workspaceId, thread);
    const notFound = () =>
      new ConnectError(`checkpoint ${ref.id} not found in thread ${thread.threadId}`, Code.NotFound);
    if (!graph) {
      if (ref.id) throw notFound();
      return emptyThreadState();
    }
    const snapshot = await graphCall("get state", () =>
      graph.getState(rootConfig(thread.threadId, ref), { subgraphs }),
    );
    if (ref.id && !isStored(snapshot)) throw notFound();
    return isStored(snapshot) ? threadStateView(snapshot) : emptyThreadState();
  };

  const history = async (
    ctx: HandlerContext,
    rawThreadId: string,
    options: {
      limit: number;
      before?: string;
      metadata?: JsonObject;
      ref: CheckpointRef;
      select?: readonly string[];
    },
  ) => {
    refuseEncryptedFilter(sql, "metadata", options.metadata);
    const selection = parseStateSelect(options.select ?? []);
    if (selection) selectRestFields(ctx, selection.fields);
    const { workspaceId, thread } = await loadThread(threads, ctx, "threads:read", rawThreadId);
    const graph = await threadGraphs.forThread(workspaceId, thread);
    if (!graph) return { states: [] };
    const states: ThreadState[] = [];
    const snapshots: AsyncIterable<StateSnapshot> = graph.getStateHistory(
      rootConfig(thread.threadId, options.ref),
      {
        limit: options.limit,
        ...(options.before ? { before: { configurable: { checkpoint_id: options.before } } } : {}),
        ...(options.metadata ? { filter: options.metadata } : {}),
      },
    );
    await graphCall("get history", async () => {
      for await (const snapshot of snapshots)
        states.push(applySelection(threadStateView(snapshot), selection));
    });
    return { states };
  };

  return {
    getThreadState: (request, ctx) =>
      stateAt(
        ctx,
        request.threadId,
        refOf(undefined, request.checkpointId),
        request.subgraphs ?? false,
        request.select,
      ),

    getThreadStateAtCheckpoint(request, ctx) {
      if (!request.checkpoint) throw invalid("checkpoint is required: {checkpoint_ns, checkpoint_id}");
      return stateAt(
        ctx,
        request.threadId,
        refOf(request.checkpoint),
        request.subgraphs ?? false,
        request.select,
      );
    },

    async updateThreadState(request, ctx) {
      const { workspaceId, thread } = await loadThread(threads, ctx, "threads:update", request.threadId);
      if (thread.status === "busy")
        throw new ConnectError(
          `thread ${thread.threadId} is busy: a run is pending or running; update its state afterwards`,
          Code.FailedPrecondition,
        );
      const graph = await threadGraphs.forThread(workspaceId, thread);
      if (!graph)
        throw new ConnectError(
          `thread ${thread.threadId} has no graph yet: create it with metadata.graph_id or run it first`,
          Code.FailedPrecondition,
        );
      const values = request.values ? toJson(ValueSchema, request.values) : null;
      const ref = refOf(request.checkpoint, request.checkpointId);
      if (ref.id) {
        const from = await graphCall("update state", () => graph.getState(rootConfig(thread.threadId, ref)));
        if (!isStored(from))
          throw new ConnectError(
            `checkpoint ${ref.id} not found in thread ${thread.threadId}`,
            Code.NotFound,
          );
      }
      const config = await graphCall(
        "update state",
        () => graph.updateState(rootConfig(thread.threadId, ref), values, request.asNode),
        true,
      );
      await threadGraphs.refresh(workspaceId, thread, graph);
      const checkpoint = checkpointOf(config);
      if (!checkpoint) throw new Error(`updateState of thread ${thread.threadId} returned no checkpoint`);
      return {
        checkpoint: {
          threadId: checkpoint.thread_id,
          checkpointNs: checkpoint.checkpoint_ns,
          checkpointId: checkpoint.checkpoint_id,
          ...(checkpoint.checkpoint_map ? { checkpointMap: checkpoint.checkpoint_map } : {}),
        },
      };
    },

    listThreadHistory: (request, ctx) =>
      history(ctx, request.threadId, {
        limit: parseLimit(request.limit, DEFAULT_HISTORY_LIMIT),
        ...(request.before ? { before: request.before } : {}),
        ref: {},
      }),

    searchThreadHistory(request, ctx) {
      const before = beforeId(request.before);
      return history(ctx, request.threadId, {
        limit: parseLimit(request.limit, DEFAULT_HISTORY_LIMIT),
        ...(before ? { before } : {}),
        ...(request.metadata ? { metadata: request.metadata } : {}),
        ref: refOf(request.checkpoint),
        select: request.select,
      });
    },
  };
}
