import type { JsonObject } from "@bufbuild/protobuf";
import { isUuid, uuidv7 } from "../../ids.js";
import type { GraphRegistry } from "../../runtime/graph-registry.js";
import {
  A2A_TASK_METADATA_KEY,
  hasLaterRun,
  latestRunOfTask,
  listTaskRuns,
} from "../../store/agents/a2a-task-store.js";
import { type AgentRunRecord, findRun } from "../../store/agents/agent-run-store.js";
import type { AssistantRecord } from "../../store/agents/assistant-store.js";
import { findThreads } from "../../store/agents/thread-store.js";
import { createThreadBatches } from "../../store/batching/thread-batches.js";
import type { Sql } from "../../store/db.js";
import { authorizeEvent, type Principal } from "../iam/principal.js";
import {
  A2A_ERRORS,
  A2A_PROTOCOL_VERSION,
  A2aError,
  type A2aTask,
  HISTORY_SCOPE_EXTENSION,
  type ListParams,
  type SendParams,
  type StreamResult,
  type TaskParams,
  type TaskState,
} from "./a2a-protocol.js";
import {
  historyOf,
  inputOf,
  latestAgentText,
  resumeValueOf,
  startMessageIdOf,
  type TaskContext,
  taskOf,
  taskState,
} from "./a2a-tasks.js";
import { type AssistantInputSchemas, acceptsMessages } from "./assistant-input-schemas.js";
import type { RunLauncher } from "./run-launcher.js";

/** Dependencies of {@link createA2aService}. */
export interface A2aServiceDeps {
  sql: Sql;
  graphs: GraphRegistry;
  launcher: RunLauncher;
  inputSchemas: AssistantInputSchemas;
}

/** Who calls, authorised for the workspace already, and for how long they listen. */
export interface A2aCaller {
  workspaceId: string;
  /** Who calls: custom auth's handlers apply to the threads and runs of its tasks. */
  principal: Principal;
  /** The request's headers (the graphs file may copy some into the run's config). */
  headers: Headers;
  /** Aborts when the client goes away. */
  signal: AbortSignal;
}

/**
 * The A2A methods on runs: `message/send` and `message/stream` start a run on the message's context
 * (thread; a new one when absent), or resume the run of an `input-required` task with the message
 * as the interrupt's answer; `tasks/get` and `tasks/cancel` read and cancel them. Errors are
 * {@link A2aError}s, or `ConnectError`s from run creation (the adapter maps both).
 */
export interface A2aService {
  /** The agent card of an assistant, served at `baseUrl/a2a/{assistant_id}`. */
  agentCard(assistant: AssistantRecord, baseUrl: string): JsonObject;
  /** `message/send`: the task, once ended unless `blocking` is false. */
  send(caller: A2aCaller, assistant: AssistantRecord, params: SendParams): Promise<A2aTask>;
  /**
   * `message/stream`: starts the run, then resolves to its events: the task, `working` updates with
   * each new agent message, the artifact, and a final status update.
   */
  stream(
    caller: A2aCaller,
    assistant: AssistantRecord,
    params: SendParams,
  ): Promise<AsyncGenerator<StreamResult>>;
  /**
   * `tasks/resubscribe`: the task as it is, then, while its run goes on, its updates as
   * `message/stream` sends them (agent messages of the run so far may come again); an ended task's
   * artifact and final status at once.
   */
  resubscribe(
    caller: A2aCaller,
    assistant: AssistantRecord,
    params: TaskParams,
  ): Promise<AsyncGenerator<StreamResult>>;
  /** `tasks/get`. */
  getTask(caller: A2aCaller, assistant: AssistantRecord, params: TaskParams): Promise<A2aTask>;
  /** `tasks/cancel`: cancels a submitted or working task and answers it once it has stopped. */
  cancelTask(caller: A2aCaller, assistant: AssistantRecord, params: TaskParams): Promise<A2aTask>;
  /** `ListTasks` (A2A 1.0): a page of the assistant's tasks the caller may see, newest first. */
  listTasks(caller: A2aCaller, assistant: AssistantRecord, params: ListParams): Promise<TaskPage>;
}

/** A page of tasks, and where the next one starts (undefined after the last). */
export interface TaskPage {
  tasks: A2aTask[];
  nextOffset: number | undefined;
  total: number;
}

/**
 * The run statuses each A2A state comes from. `completed` and `input-required` both come from a
 * successful run (the thread's interrupts tell them apart), so a page filtered by either is
 * filtered again once the tasks are built and may hold fewer than its size.
 */
const RUN_STATUSES: Readonly<Record<TaskState, readonly string[]>> = {
  submitted: ["pending"],
  working: ["running"],
  completed: ["success"],
  "input-required": ["success"],
  failed: ["error", "timeout"],
  canceled: ["interrupted"],
  rejected: [],
  "auth-required": [],
  unknown: [],
};

function taskNotFound(id: string): A2aError {
  return new A2aError(A2A_ERRORS.taskNotFound, `task ${id} not found`);
}

function hasEnded(run: AgentRunRecord): boolean {
  return run.status !== "pending" && run.status !== "running";
}

/** Creates the {@link A2aService}. */
export function createA2aService(deps: A2aServiceDeps): A2aService {
  const { sql, launcher } = deps;
  // Custom auth's thread checks, batched with the other lookups in flight like the thread service's.
  const threads = createThreadBatches(sql);

  /** What decides how the task's newest run looks as a task. */
  const contextOf = async (
    workspaceId: string,
    taskId: string,
    run: AgentRunRecord,
  ): Promise<TaskContext> => {
    const [[thread], superseded, first] = await Promise.all([
      findThreads(sql, [{ workspaceId, threadId: run.threadId }]),
      hasLaterRun(sql, workspaceId, run.threadId, run.runId),
      run.runId === taskId ? run : findRun(sql, workspaceId, taskId),
    ]);
    return { taskId, run, thread, superseded, startMessageId: first && startMessageIdOf(first) };
  };

  /** A task of this assistant by id, at its newest run. */
  const loadTask = async (
    caller: A2aCaller,
    assistant: AssistantRecord,
    rawId: string,
  ): Promise<TaskContext> => {
    const { workspaceId } = caller;
    if (!isUuid(rawId)) throw taskNotFound(rawId);
    const id = rawId.toLowerCase();
    const first = await findRun(sql, workspaceId, id);
    if (!first || first.assistantId !== assistant.assistantId) throw taskNotFound(rawId);
    // A task is its context's thread: one custom auth hides is no task of the caller's.
    const auth = await authorizeEvent(caller.principal, "threads:read", { thread_id: first.threadId });
    if (auth && !(await threads.findVisible({ workspaceId, threadId: first.threadId }, auth)))
      throw taskNotFound(rawId);
    const latestId = await latestRunOfTask(sql, workspaceId, first.threadId, id);
    const latest =
      latestId === undefined || latestId === id ? first : await findRun(sql, workspaceId, latestId);
    return contextOf(workspaceId, id, latest ?? first);
  };

  /** Starts the run a message asks for: a new turn of its context, or the answer to a task's question. */
  const begin = async (
    caller: A2aCaller,
    assistant: AssistantRecord,
    params: SendParams,
  ): Promise<{ taskId: string; run: AgentRunRecord; before: TaskContext["thread"] }> => {
    const { message } = params;
    const { workspaceId, headers } = caller;
    if (message.taskId !== undefined) {
      const task = await loadTask(caller, assistant, message.taskId);
      if (message.contextId !== undefined && message.contextId !== task.run.threadId)
        throw new A2aError(
          A2A_ERRORS.invalidParams,
          `task ${task.taskId} belongs to context ${task.run.threadId}, not ${message.contextId}`,
        );
      const state = taskState(task);
      if (state !== "input-required")
        throw new A2aError(
          A2A_ERRORS.invalidParams,
          `task ${task.taskId} is ${state}: only an input-required task takes a message; send it without taskId (in the same contextId) to continue the conversation`,
        );
      const run = await launcher.start(
        workspaceId,
        { kind: "thread", threadId: task.run.threadId },
        {
          assistant_id: assistant.assistantId,
          command: { resume: resumeValueOf(message) },
          metadata: { [A2A_TASK_METADATA_KEY]: task.taskId },
          // Two answers to one question: the second finds the first's run and is refused.
          multitask_strategy: "reject",
          stream_mode: ["values"],
        },
        headers,
        caller.principal,
      );
      return { taskId: task.taskId, run, before: task.thread };
    }
    const { input, hasText } = inputOf(message);
    if (hasText && !acceptsMessages(await deps.inputSchemas.of(assistant)))
      throw new A2aError(
        A2A_ERRORS.invalidParams,
        `assistant ${assistant.name} takes no messages (its graph input has no "messages" field): send a data part with its input instead of text`,
      );
    const threadId = message.contextId ?? uuidv7();
    const [before] = await findThreads(sql, [{ workspaceId, threadId }]);
    const run = await launcher.start(
      workspaceId,
      { kind: "thread", threadId },
      { assistant_id: assistant.assistantId, input, if_not_exists: "create", stream_mode: ["values"] },
      headers,
      caller.principal,
    );
    return { taskId: run.runId, run, before };
  };

  /** The last events of a task's stream: its artifact, if any, and its final status. */
  function* ending(task: A2aTask): Generator<StreamResult> {
    const artifact = task.artifacts?.[0];
    if (artifact)
      yield {
        kind: "artifact-update",
        taskId: task.id,
        contextId: task.contextId,
        artifact,
        lastChunk: true,
      };
    yield {
      kind: "status-update",
      taskId: task.id,
      contextId: task.contextId,
      status: task.status,
      final: true,
    };
  }

  /**
   * A task's updates while its run goes on: `working` at its first event, then each agent message
   * not `seen` before; when the run ends, its artifact and final status. Nothing more once `signal`
   * aborts.
   */
  async function* follow(
    workspaceId: string,
    taskId: string,
    run: AgentRunRecord,
    seen: Set<string>,
    signal: AbortSignal,
  ): AsyncGenerator<StreamResult> {
    const contextId = run.threadId;
    const working = (message?: A2aTask["status"]["message"]): StreamResult => ({
      kind: "status-update",
      taskId,
      contextId,
      status: { state: "working", timestamp: new Date().toISOString(), ...(message ? { message } : {}) },
      final: false,
    });
    let started = false;
    for await (const event of launcher.events(workspaceId, run.runId, signal)) {
      if (!started) {
        started = true;
        yield working();
      }
      if (event.event !== "values") continue;
      const said = latestAgentText(event.data);
      const key = said && (said.id ?? said.text);
      if (!said || !key || seen.has(key)) continue;
      seen.add(key);
      yield working({
        kind: "message",
        messageId: said.id ?? `${run.runId}-${seen.size}`,
        role: "agent",
        parts: [{ kind: "text", text: said.text }],
        contextId,
        taskId,
      });
    }
    if (signal.aborted) return;
    const ended = await findRun(sql, workspaceId, run.runId);
    if (ended) yield* ending(taskOf(await contextOf(workspaceId, taskId, ended), 0));
  }

  return {
    agentCard(assistant, baseUrl) {
      const description =
        assistant.description ??
        deps.graphs.get(assistant.graphId)?.description ??
        `agentplane assistant ${assistant.name} (graph ${assistant.graphId})`;
      return {
        protocolVersion: A2A_PROTOCOL_VERSION,
        name: assistant.name,
        description,
        url: `${baseUrl}/a2a/${assistant.assistantId}`,
        preferredTransport: "JSONRPC",
        version: String(assistant.version),
        capabilities: {
          streaming: true,
          pushNotifications: false,
          stateTransitionHistory: false,
          extensions: [HISTORY_SCOPE_EXTENSION],
        },
        defaultInputModes: ["text/plain", "application/json"],
        defaultOutputModes: ["text/plain", "application/json"],
        skills: [{ id: assistant.graphId, name: assistant.name, description, tags: [assistant.graphId] }],
        securitySchemes: { apiKey: { type: "apiKey", in: "header", name: "x-api-key" } },
        security: [{ apiKey: [] }],
        // A2A 1.0 clients pick the interface from here; the same endpoint answers both versions.
        supportedInterfaces: [
          {
            url: `${baseUrl}/a2a/${assistant.assistantId}`,
            protocolBinding: "JSONRPC",
            protocolVersion: "1.0",
          },
        ],
      };
    },

    async send(caller, assistant, params) {
      const { taskId, run } = await begin(caller, assistant, params);
      const ended = params.blocking
        ? await launcher.waitForEnd(caller.workspaceId, run.runId, caller.signal)
        : run;
      if (!ended) throw taskNotFound(taskId);
      return taskOf(
        await contextOf(caller.workspaceId, taskId, ended),
        params.historyLength,
        params.historyScope,
      );
    },

    async stream(caller, assistant, params) {
      const { taskId, run, before } = await begin(caller, assistant, params);
      const { workspaceId } = caller;
      const contextId = run.threadId;
      return (async function* () {
        const first = taskOf(await contextOf(workspaceId, taskId, run), params.historyLength);
        const asked = { ...params.message, contextId, taskId };
        if (first.history) first.history = [...first.history, asked];
        yield first;
        // Agent messages already in the thread are not news when a values event repeats them.
        const seen = new Set(historyOf(before?.values, taskId, contextId).map((m) => m.messageId));
        yield* follow(workspaceId, taskId, run, seen, caller.signal);
      })();
    },

    async resubscribe(caller, assistant, params) {
      const task = await loadTask(caller, assistant, params.id);
      return (async function* () {
        const current = taskOf(task, params.historyLength);
        yield current;
        if (hasEnded(task.run)) {
          yield* ending(current);
          return;
        }
        const seen = new Set(
          historyOf(task.thread?.values, task.taskId, task.run.threadId).map((m) => m.messageId),
        );
        yield* follow(caller.workspaceId, task.taskId, task.run, seen, caller.signal);
      })();
    },

    async getTask(caller, assistant, params) {
      return taskOf(await loadTask(caller, assistant, params.id), params.historyLength, params.historyScope);
    },

    async listTasks(caller, assistant, params) {
      const { workspaceId } = caller;
      const statuses = params.state === undefined ? undefined : RUN_STATUSES[params.state];
      const page = await listTaskRuns(
        sql,
        workspaceId,
        assistant.assistantId,
        { threadId: params.contextId, statuses },
        { offset: params.offset, limit: params.pageSize },
      );
      const tasks: A2aTask[] = [];
      for (const runId of page.runIds) {
        let task: TaskContext;
        try {
          task = await loadTask(caller, assistant, runId);
        } catch (error) {
          // A task whose thread custom auth hides, or that went away meanwhile, is not listed.
          if (error instanceof A2aError && error.code === A2A_ERRORS.taskNotFound) continue;
          throw error;
        }
        if (params.state !== undefined && taskState(task) !== params.state) continue;
        const shown = taskOf(task, params.historyLength, params.historyScope);
        if (!params.includeArtifacts) delete shown.artifacts;
        tasks.push(shown);
      }
      const next = params.offset + page.runIds.length;
      return { tasks, nextOffset: next < page.total ? next : undefined, total: page.total };
    },

    async cancelTask(caller, assistant, params) {
      const task = await loadTask(caller, assistant, params.id);
      const notCancelable = (state: string) =>
        new A2aError(
          A2A_ERRORS.taskNotCancelable,
          `task ${task.taskId} is ${state}: only a submitted or working task can be canceled`,
        );
      if (hasEnded(task.run)) throw notCancelable(taskState(task));
      const { workspaceId } = caller;
      if (!(await launcher.cancel(workspaceId, task.run.runId))) {
        const now = await findRun(sql, workspaceId, task.run.runId);
        throw notCancelable(now ? taskState(await contextOf(workspaceId, task.taskId, now)) : "gone");
      }
      const ended = await launcher.waitForEnd(workspaceId, task.run.runId, caller.signal);
      if (!ended) throw taskNotFound(params.id);
      return taskOf(
        await contextOf(workspaceId, task.taskId, ended),
        params.historyLength,
        params.historyScope,
      );
    },
  };
}
