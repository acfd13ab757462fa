/**
 * The protocol's commands that read a thread: `state.get` (the state of the root graph or of a
 * subgraph waiting in it, by namespace), `state.listCheckpoints` (the thread's checkpoints, newest
 * first, in pages) and `agent.getTree` (the graphs a run went through, from its lifecycle events).
 * State is read as `GET /threads/{id}/state` and the history endpoints read it (the same checks,
 * custom auth's `threads:read` among them), so the protocol and the REST API can never disagree.
 */
import { create, type JsonObject, type JsonValue, toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { isPrefixMatch } from "@langchain/langgraph/stream";
import {
  CheckpointInputSchema,
  GetThreadStateRequestSchema,
  SearchThreadHistoryRequestSchema,
  type ThreadService,
  ThreadStateSchema,
} from "../../../../gen/agentplane/agents/v1/thread_service_pb.js";
import { parseProtocolParams, protocolMethodOf } from "../../../runtime/protocol/protocol-event.js";
import { findRun, listRuns } from "../../../store/agents/agent-run-store.js";
import { eventsAfter } from "../../../store/agents/run-event-store.js";
import type { ThreadBatches } from "../../../store/batching/thread-batches.js";
import type { Sql } from "../../../store/db.js";
import { loadThread } from "../thread-access.js";
import { ProtocolError } from "./protocol-errors.js";
import type { Params } from "./protocol-params.js";
import type { CommandScope } from "./run-commands.js";

/** What the state commands need: the thread service's reads, and the run events. */
export interface StateCommandDeps {
  sql: Sql;
  threads: ThreadBatches;
  threadService: Pick<ServiceImpl<typeof ThreadService>, "getThreadState" | "searchThreadHistory">;
}

/** Checkpoints `state.listCheckpoints` answers when no limit is asked for. */
const DEFAULT_CHECKPOINT_PAGE = 10;
/** The largest page of checkpoints (the history endpoints' limit). */
const MAX_CHECKPOINT_PAGE = 1000;
/** Events of a run read per page while its tree is built. */
const TREE_PAGE = 1000;

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The state JSON of `GET /threads/{id}/state?subgraphs=true`. */
async function threadState(deps: StateCommandDeps, scope: CommandScope): Promise<JsonObject> {
  const state = await deps.threadService.getThreadState(
    create(GetThreadStateRequestSchema, { threadId: scope.threadId, subgraphs: true }),
    scope.ctx,
  );
  return toJson(ThreadStateSchema, create(ThreadStateSchema, state), {
    useProtoFieldName: true,
  }) as JsonObject;
}

/**
 * The state at `namespace` inside `state`: the root's for `[]`; for each segment, the subgraph
 * state of the task whose `<name>:<id>` (or bare node name) it names.
 */
function stateAt(state: JsonObject, namespace: readonly string[]): JsonObject | undefined {
  let current: JsonObject | undefined = state;
  for (const segment of namespace) {
    const tasks: JsonValue[] = Array.isArray(current?.tasks) ? current.tasks : [];
    const task = tasks.find(
      (t) =>
        isObject(t) &&
        (`${String(t.name)}:${String(t.id)}` === segment || t.name === segment) &&
        isObject(t.state),
    );
    current = isObject(task) && isObject(task.state) ? task.state : undefined;
    if (!current) return undefined;
  }
  return current;
}

/** `{id, ns}` of a state's checkpoint. */
function checkpointRef(state: JsonObject): JsonObject | undefined {
  const checkpoint = state.checkpoint;
  if (!isObject(checkpoint) || typeof checkpoint.checkpoint_id !== "string") return undefined;
  return {
    id: checkpoint.checkpoint_id,
    ...(typeof checkpoint.checkpoint_ns === "string" ? { ns: checkpoint.checkpoint_ns } : {}),
  };
}

/** A lifecycle event's status names, as the protocol's agent statuses. */
const STATUSES = new Set(["started", "running", "completed", "failed", "interrupted"]);

/** A graph of the tree as it is built. */
interface TreeNode {
  namespace: string[];
  status: string;
  graphName: string;
}

/** Creates the state-command handlers. */
export function createStateCommands(deps: StateCommandDeps) {
  return {
    /** `state.get`: `{values, checkpoint}` of the root graph or of the subgraph at `namespace`. */
    async get(scope: CommandScope, params: Params): Promise<JsonObject> {
      const namespace = params.namespace("namespace");
      const keys = params.stringList("keys");
      const state = stateAt(await threadState(deps, scope), namespace);
      if (!state)
        throw new ProtocolError(
          "no_such_namespace",
          `state.get: no subgraph at namespace ${JSON.stringify(namespace)} is waiting in thread ${scope.threadId}`,
        );
      const all = isObject(state.values) ? state.values : {};
      const values = keys
        ? Object.fromEntries(Object.entries(all).filter(([key]) => keys.includes(key)))
        : all;
      const checkpoint = checkpointRef(state);
      return { values, ...(checkpoint ? { checkpoint } : {}) };
    },

    /** `state.listCheckpoints`: `{checkpoints: [{id, timestamp, step, node_name, metadata}]}`, newest first. */
    async listCheckpoints(scope: CommandScope, params: Params): Promise<JsonObject> {
      const namespace = params.namespace("namespace");
      const limit = params.integer("limit", 1) ?? DEFAULT_CHECKPOINT_PAGE;
      if (limit > MAX_CHECKPOINT_PAGE)
        throw new ProtocolError(
          "invalid_argument",
          `state.listCheckpoints: limit is at most ${MAX_CHECKPOINT_PAGE}`,
        );
      const before = params.string("before");
      // One more than the page: a checkpoint's node is the one its parent was about to run.
      const history = await deps.threadService.searchThreadHistory(
        create(SearchThreadHistoryRequestSchema, {
          threadId: scope.threadId,
          limit: limit + 1,
          ...(before
            ? { before: create(ValueSchema, { kind: { case: "stringValue", value: before } }) }
            : {}),
          // A subgraph's checkpoints are kept under its namespace's segments joined by "|".
          checkpoint: create(CheckpointInputSchema, { checkpointNs: namespace.join("|") }),
        }),
        scope.ctx,
      );
      const states = (history.states ?? []).map(
        (s) =>
          toJson(ThreadStateSchema, create(ThreadStateSchema, s), { useProtoFieldName: true }) as JsonObject,
      );
      const checkpoints = states.slice(0, limit).map((state, i) => {
        const metadata = isObject(state.metadata) ? state.metadata : {};
        const parent = states[i + 1];
        const ran = metadata.source === "loop" && Array.isArray(parent?.next) ? parent.next : [];
        return {
          id: checkpointRef(state)?.id ?? "",
          timestamp: typeof state.created_at === "string" ? state.created_at : "",
          step: typeof metadata.step === "number" ? metadata.step : 0,
          ...(typeof ran[0] === "string" ? { node_name: ran[0] } : {}),
          metadata,
        };
      });
      return { checkpoints };
    },

    /**
     * `agent.getTree`: the run's graphs (the root and each subgraph it went through) with their
     * latest lifecycle status, from the run's stored events; the thread's latest run by default.
     */
    async getTree(scope: CommandScope, params: Params): Promise<JsonObject> {
      const { workspaceId } = await loadThread(deps.threads, scope.ctx, "threads:read", scope.threadId);
      const runId = params.string("run_id");
      const run = runId
        ? await findRun(deps.sql, workspaceId, runId, scope.threadId)
        : (await listRuns(deps.sql, workspaceId, scope.threadId, { limit: 1, offset: 0 }))[0];
      if (!run)
        throw new ProtocolError(
          "no_such_run",
          runId
            ? `agent.getTree: run ${runId} not found on thread ${scope.threadId}`
            : "agent.getTree: the thread has no run",
        );
      const nodes = new Map<string, TreeNode>();
      const touch = (namespace: string[], status?: string, graphName?: string) => {
        for (let depth = 0; depth <= namespace.length; depth++) {
          const ns = namespace.slice(0, depth);
          const key = ns.join("\u0000");
          // A subgraph is named for its node until a lifecycle event names it.
          const node = nodes.get(key) ?? {
            namespace: ns,
            status: "started",
            graphName: depth === 0 ? run.graphId : (ns[depth - 1]?.split(":")[0] ?? ""),
          };
          if (depth === namespace.length) {
            if (status && STATUSES.has(status)) node.status = status;
            if (graphName) node.graphName = graphName;
          }
          nodes.set(key, node);
        }
      };
      touch([]);
      for (let after = 0; ; ) {
        const rows = await eventsAfter(deps.sql, workspaceId, { runId: run.runId }, after, TREE_PAGE);
        for (const row of rows) {
          after = row.seq;
          const method = protocolMethodOf(row.event);
          if (method === undefined) continue;
          const { namespace, data } = parseProtocolParams(row.data);
          if (method === "lifecycle" && isObject(data))
            touch(
              namespace,
              typeof data.event === "string" ? data.event : undefined,
              typeof data.graph_name === "string" ? data.graph_name : undefined,
            );
          else touch(namespace);
        }
        if (rows.length < TREE_PAGE) break;
      }
      const build = (node: TreeNode): JsonObject => {
        const children = [...nodes.values()]
          .filter(
            (c) =>
              c.namespace.length === node.namespace.length + 1 && isPrefixMatch(c.namespace, node.namespace),
          )
          .sort((a, b) => JSON.stringify(a.namespace).localeCompare(JSON.stringify(b.namespace)))
          .map(build);
        return {
          namespace: node.namespace,
          status: node.status,
          graph_name: node.graphName,
          ...(children.length > 0 ? { children } : {}),
        };
      };
      const root = nodes.get("");
      return { tree: root ? build(root) : {} };
    },
  };
}
