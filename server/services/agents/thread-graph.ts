import { Code, ConnectError } from "@connectrpc/connect";
import type { RunnableConfig } from "@langchain/core/runnables";
import type { StateSnapshot } from "@langchain/langgraph";
import postgres from "postgres";
import type { CompiledGraph, GraphRegistry, RegisteredGraph } from "../../runtime/graph-registry.js";
import { isObject, toPlainJson } from "../../runtime/plain-json.js";
import { PostgresCheckpointer } from "../../runtime/postgres-checkpointer.js";
import { PostgresStore } from "../../runtime/postgres-store.js";
import { newestRunConfig } from "../../store/agents/agent-run-store.js";
import { saveThreadState, type ThreadRecord, type ThreadStatus } from "../../store/agents/thread-store.js";
import type { Sql } from "../../store/db.js";
import { interruptsByTask } from "./thread-state-view.js";

/** Dependencies of {@link createThreadGraphs}. */
export interface ThreadGraphDeps {
  sql: Sql;
  graphs: GraphRegistry;
}

/** The graphs of threads, compiled with the request workspace's checkpointer and store. */
export interface ThreadGraphs {
  /**
   * The graph named by the thread's `metadata.graph_id`; undefined for a thread without one (it has
   * no state yet). FAILED_PRECONDITION when the graph is not registered in this server. A graph
   * exported as a factory of its config is built for the config of the thread's newest run (the
   * assistant's, the thread's and the run's), else the thread's own, so that its nodes are the
   * ones that wrote the thread's checkpoints.
   */
  forThread(
    workspaceId: string,
    thread: Pick<ThreadRecord, "threadId" | "metadata" | "config">,
  ): Promise<CompiledGraph | undefined>;
  /** The registered graph `graphId`; INVALID_ARGUMENT when there is none. */
  byId(workspaceId: string, graphId: string): Promise<CompiledGraph>;
  /**
   * Recomputes the thread row's cached state (values, interrupts, status) from the graph's latest
   * checkpoint. A thread with pending interrupts is `interrupted`; so is an interrupted thread
   * whose graph still has nodes to run (a human edited its state before resuming it), while an
   * edit that leaves nothing to run makes it `idle`. An edit never stops a thread that was not
   * stopped (as on the LangGraph JS server, where only runs set the status); a busy thread stays busy.
   */
  refresh(workspaceId: string, thread: ThreadRecord, graph: CompiledGraph): Promise<void>;
}

/** Builds {@link ThreadGraphs}. */
export function createThreadGraphs({ sql, graphs }: ThreadGraphDeps): ThreadGraphs {
  const load = (workspaceId: string, registered: RegisteredGraph, config?: RunnableConfig) =>
    registered.load({
      checkpointer: new PostgresCheckpointer(sql, workspaceId),
      store: new PostgresStore(sql, workspaceId, graphs.settings.store.ttl),
      ...(config ? { config } : {}),
    });
  return {
    async forThread(workspaceId, thread) {
      const graphId = thread.metadata.graph_id;
      if (typeof graphId !== "string") return undefined;
      const registered = graphs.get(graphId);
      const config = registered?.factory
        ? ((await newestRunConfig(sql, workspaceId, thread.threadId)) ?? thread.config)
        : undefined;
      const graph = registered && (await load(workspaceId, registered, config as RunnableConfig | undefined));
      if (!graph)
        throw new ConnectError(
          `thread ${thread.threadId} belongs to graph "${graphId}", which this server does not serve`,
          Code.FailedPrecondition,
        );
      return graph;
    },
    async byId(workspaceId, graphId) {
      const registered = graphs.get(graphId);
      const graph = registered && (await load(workspaceId, registered));
      if (!graph)
        throw new ConnectError(
          `metadata.graph_id "${graphId}" is not a registered graph; registered: ${graphs.ids().join(", ")}`,
          Code.InvalidArgument,
        );
      return graph;
    },
    async refresh(workspaceId, thread, graph) {
      const snapshot = await graph.getState(rootConfig(thread.threadId));
      const interrupts = interruptsByTask(snapshot);
      const stopped =
        Object.keys(interrupts).length > 0 || (thread.status === "interrupted" && snapshot.next.length > 0);
      let status: ThreadStatus = stopped ? "interrupted" : "idle";
      if (thread.status === "busy") status = "busy";
      const values = toPlainJson(snapshot.values ?? {});
      await saveThreadState(sql, workspaceId, thread.threadId, {
        values: isObject(values) || Array.isArray(values) ? values : {},
        interrupts,
        status,
      });
    },
  };
}

/** The config addressing a thread's root graph, optionally at one checkpoint. */
export function rootConfig(threadId: string, checkpoint: { ns?: string; id?: string } = {}): RunnableConfig {
  return {
    configurable: {
      thread_id: threadId,
      checkpoint_ns: checkpoint.ns ?? "",
      ...(checkpoint.id ? { checkpoint_id: checkpoint.id } : {}),
    },
  };
}

/** True when a snapshot comes from a stored checkpoint (an unknown checkpoint id gives an empty one). */
export function isStored(snapshot: StateSnapshot): boolean {
  return snapshot.createdAt !== undefined;
}

/**
 * Runs a graph state operation and maps what the caller's input causes to a 4xx with the library's
 * message: an unknown subgraph namespace is NOT_FOUND; for `input` operations (applying values),
 * any other error of the library is INVALID_ARGUMENT (an update that cannot be attributed to a
 * node, values a reducer or message coercion rejects). Database and system errors are rethrown.
 */
export async function graphCall<T>(what: string, call: () => Promise<T>, input = false): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof ConnectError || !(error instanceof Error)) throw error;
    if (error instanceof postgres.PostgresError || "code" in error) throw error;
    if (SUBGRAPH_NOT_FOUND.test(error.message))
      throw new ConnectError(`${what}: ${error.message}`, Code.NotFound);
    if (input || INPUT_ERRORS.has(error.name))
      throw new ConnectError(`${what}: ${error.message}`, Code.InvalidArgument);
    throw error;
  }
}

/** How @langchain/langgraph reports a checkpoint namespace that names no subgraph. */
const SUBGRAPH_NOT_FOUND = /^Subgraph ".*" not found$/;

/** Errors of @langchain/langgraph that a caller's input causes. */
const INPUT_ERRORS = new Set(["InvalidUpdateError", "EmptyInputError", "GraphValueError"]);
