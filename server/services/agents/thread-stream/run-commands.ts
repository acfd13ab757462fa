/**
 * The protocol's commands that start runs: `run.start`, `input.respond`, `input.inject` and
 * `state.fork`. Each becomes a run of the run endpoints' machinery (custom auth's
 * `threads:create_run`, workspace scoping, multitask strategies, webhooks, tracing and usage
 * apply as they do there), marked as a protocol run so that it streams protocol events on every
 * channel and namespace. Protocol runs keep their events for the stream TTL (they are resumable)
 * and queue behind a thread's active run unless the command says otherwise (`enqueue`, the
 * protocol's default).
 *
 * `run.start` on a thread waiting for input resumes it with the input as the answer, as the Agent
 * Server does; `input.respond` answers interrupts by id. A thread that does not exist is created
 * by `run.start`; the other commands need the thread's assistant (the one its runs ran).
 */
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import type { MultitaskStrategy } from "../../../store/agents/agent-run-store.js";
import { checkpointExists } from "../../../store/agents/agent-run-thread-store.js";
import type { ThreadRecord } from "../../../store/agents/thread-store.js";
import type { ThreadBatches } from "../../../store/batching/thread-batches.js";
import { authorizeWorkspace } from "../../iam/principal.js";
import { conflictsAs409 } from "../run-conflicts.js";
import { createRun, type RunCreationDeps } from "../run-creation.js";
import type { RunRequest } from "../run-requests.js";
import { invalidParam, ProtocolError } from "./protocol-errors.js";
import type { Params } from "./protocol-params.js";

/** What the run commands need. */
export interface RunCommandDeps {
  creation: RunCreationDeps;
  threads: ThreadBatches;
}

/** The thread a command addresses, and the call it arrived in. */
export interface CommandScope {
  ctx: HandlerContext;
  threadId: string;
}

const STRATEGIES: readonly MultitaskStrategy[] = ["reject", "interrupt", "rollback", "enqueue"];

/** The request of a protocol run: a thread run with the protocol's defaults. */
function protocolRunRequest(fields: Partial<RunRequest> & Pick<RunRequest, "assistantId">): RunRequest {
  return {
    input: null,
    command: null,
    config: {},
    context: {},
    metadata: {},
    // Ignored by a protocol run (it streams every channel), stored for those who read the run.
    streamModes: ["values"],
    subgraphs: true,
    resumable: true,
    interruptBefore: null,
    interruptAfter: null,
    checkpoint: null,
    webhook: null,
    multitaskStrategy: "enqueue",
    ifNotExists: "reject",
    onCompletion: "keep",
    onDisconnect: "continue",
    afterSeconds: 0,
    durability: null,
    feedbackKeys: null,
    langsmithTracer: null,
    protocol: { answers: [] },
    ...fields,
  };
}

/** The strategy a command names (`multitask_strategy`, or the SDK's older `multitaskStrategy`). */
function strategyOf(params: Params): MultitaskStrategy {
  const raw = params.string("multitask_strategy") ?? params.string("multitaskStrategy");
  if (raw === undefined) return "enqueue";
  if (!(STRATEGIES as readonly string[]).includes(raw))
    throw invalidParam(
      `multitask_strategy must be one of ${STRATEGIES.join(", ")}; got ${JSON.stringify(raw)}`,
    );
  return raw as MultitaskStrategy;
}

/** A checkpoint to start from, named by `config.configurable.checkpoint_id` (the SDK's `forkFrom`). */
function checkpointOf(config: JsonObject): RunRequest["checkpoint"] {
  const configurable = config.configurable;
  if (typeof configurable !== "object" || configurable === null || Array.isArray(configurable)) return null;
  const id = configurable.checkpoint_id;
  if (id === undefined || id === null) return null;
  if (typeof id !== "string" || id === "")
    throw invalidParam("config.configurable.checkpoint_id must be a string");
  const ns = configurable.checkpoint_ns;
  return { checkpoint_id: id, checkpoint_ns: typeof ns === "string" ? ns : "" };
}

/** The ids of the interrupts `thread` waits on (its pending interrupts, by task). */
export function pendingInterruptIds(thread: ThreadRecord | undefined): string[] {
  if (!thread) return [];
  const ids: string[] = [];
  for (const list of Object.values(thread.interrupts)) {
    if (!Array.isArray(list)) continue;
    for (const entry of list) {
      const id = typeof entry === "object" && entry !== null && !Array.isArray(entry) ? entry.id : undefined;
      if (typeof id === "string") ids.push(id);
    }
  }
  return ids;
}

/** Creates the run; answers what the command's result says of it. */
async function startProtocolRun(
  deps: RunCommandDeps,
  scope: CommandScope,
  request: RunRequest,
): Promise<{ runId: string; threadId: string }> {
  const { principal, workspace } = await authorizeWorkspace(scope.ctx, "threads:write");
  const { run } = await conflictsAs409(() =>
    createRun(
      deps.creation,
      {
        workspaceId: workspace.id,
        target: { kind: "thread", threadId: scope.threadId },
        request,
        headers: scope.ctx.requestHeader,
      },
      { principal },
    ),
  );
  return { runId: run.runId, threadId: run.threadId };
}

/** The assistant of the thread's runs: the one a command that continues the thread runs. */
function threadAssistant(thread: ThreadRecord | undefined, method: string): string {
  const id = thread?.metadata.assistant_id;
  if (typeof id === "string" && id !== "") return id;
  throw new ProtocolError(
    "no_such_run",
    thread
      ? `${method}: thread ${thread.threadId} has not run an assistant yet; call run.start first`
      : `${method}: the thread does not exist; call run.start to create it`,
  );
}

/** Creates the run-command handlers. */
export function createRunCommands(deps: RunCommandDeps) {
  /**
   * The command's thread (undefined when it does not exist), read for the command's decisions
   * (resume or new input, the assistant to continue with); creating the run checks custom auth.
   */
  const findThread = async (scope: CommandScope) => {
    const { workspace } = await authorizeWorkspace(scope.ctx, "threads:write");
    const thread = await deps.threads.find({ workspaceId: workspace.id, threadId: scope.threadId });
    return { workspaceId: workspace.id, thread };
  };

  return {
    /** `run.start`: a new run on the thread (created if missing), or the answer to its interrupt. */
    async start(scope: CommandScope, params: Params): Promise<JsonObject> {
      const assistantId = params.requiredString("assistant_id");
      const input: JsonValue = params.raw("input") ?? null;
      const config = params.object("config") ?? {};
      const { thread } = await findThread(scope);
      const waiting = pendingInterruptIds(thread);
      // On a thread waiting for input, the input is the answer (a cancelled run left no interrupt).
      const resume = input !== null && waiting.length > 0;
      const run = await startProtocolRun(
        deps,
        scope,
        protocolRunRequest({
          assistantId,
          input: resume ? null : input,
          command: resume ? { resume: input } : null,
          config,
          context: params.object("context") ?? {},
          metadata: params.object("metadata") ?? {},
          checkpoint: checkpointOf(config),
          multitaskStrategy: strategyOf(params),
          ifNotExists: "create",
          langsmithTracer: params.object("langsmith_tracer") ?? null,
          protocol: { answers: resume ? waiting : [] },
        }),
      );
      return { run_id: run.runId };
    },

    /** `input.respond`: answers interrupts by id (one, or several pending at the same checkpoint). */
    async respond(scope: CommandScope, params: Params): Promise<JsonObject> {
      const answers: Record<string, JsonValue> = {};
      const responses = params.raw("responses");
      if (responses !== undefined) {
        if (!Array.isArray(responses) || responses.length === 0)
          throw invalidParam("input.respond: responses must be a non-empty list of {interrupt_id, response}");
        for (const [i, entry] of responses.entries()) {
          const id =
            typeof entry === "object" && entry !== null && !Array.isArray(entry)
              ? entry.interrupt_id
              : undefined;
          if (typeof id !== "string" || id === "")
            throw invalidParam(`input.respond: responses[${i}] needs an interrupt_id`);
          answers[id] = (entry as JsonObject).response ?? null;
        }
      } else answers[params.requiredString("interrupt_id")] = params.raw("response") ?? null;
      const update = params.raw("update");
      if (update !== undefined && (typeof update !== "object" || update === null))
        throw invalidParam(
          "input.respond: update must be an object of state values or a list of [key, value] pairs",
        );
      const goto = params.raw("goto");
      if (goto !== undefined) checkGoto(goto);
      const strict = params.boolean("strict_resume") === true;
      const { thread } = await findThread(scope);
      const assistantId = threadAssistant(thread, "input.respond");
      const ids = Object.keys(answers);
      if (!strict && pendingInterruptIds(thread).length === 0)
        throw new ProtocolError(
          "no_such_interrupt",
          `input.respond: thread ${scope.threadId} is not waiting for input (no interrupt is pending)`,
        );
      const run = await startProtocolRun(
        deps,
        scope,
        protocolRunRequest({
          assistantId,
          command: {
            resume: answers,
            ...(update !== undefined ? { update } : {}),
            ...(goto !== undefined ? { goto } : {}),
          },
          config: params.object("config") ?? {},
          metadata: params.object("metadata") ?? {},
          protocol: { answers: ids },
          ...(strict ? { strictResume: true } : {}),
        }),
      );
      return { run_id: run.runId };
    },

    /**
     * `input.inject`: a message from the user (or system) while the agent works. LangGraph cannot
     * take input into a running graph, so the message is the input of the thread's next run, which
     * starts when the current one ends (at once on an idle thread).
     */
    async inject(scope: CommandScope, params: Params): Promise<JsonObject> {
      const message = params.object("message");
      if (!message) throw invalidParam("input.inject requires message: {role, content}");
      const role = message.role;
      if (role !== "user" && role !== "system")
        throw invalidParam('input.inject: message.role must be "user" or "system"');
      if (typeof message.content !== "string")
        throw invalidParam("input.inject: message.content must be a string");
      if (message.name !== undefined && typeof message.name !== "string")
        throw invalidParam("input.inject: message.name must be a string");
      const { thread } = await findThread(scope);
      const run = await startProtocolRun(
        deps,
        scope,
        protocolRunRequest({
          assistantId: threadAssistant(thread, "input.inject"),
          input: { messages: [{ ...message, role }] },
        }),
      );
      return { run_id: run.runId };
    },

    /** `state.fork`: a run from an earlier checkpoint of the thread (time travel). */
    async fork(scope: CommandScope, params: Params): Promise<JsonObject> {
      const checkpointId = params.requiredString("checkpoint_id");
      const { workspaceId, thread } = await findThread(scope);
      const assistantId = threadAssistant(thread, "state.fork");
      const found = await checkpointExists(deps.creation.sql, workspaceId, scope.threadId, {
        checkpoint_ns: "",
        checkpoint_id: checkpointId,
      });
      if (!found)
        throw new ProtocolError(
          "no_such_checkpoint",
          `state.fork: checkpoint ${checkpointId} not found in thread ${scope.threadId}`,
        );
      const run = await startProtocolRun(
        deps,
        scope,
        protocolRunRequest({
          assistantId,
          input: params.raw("input") ?? null,
          config: params.object("config") ?? {},
          checkpoint: { checkpoint_id: checkpointId, checkpoint_ns: "" },
        }),
      );
      return { run_id: run.runId, thread_id: run.threadId };
    },
  };
}

/** A `goto`: a node name, a `{node, input}` send, or a list of them. */
function checkGoto(goto: JsonValue): void {
  const list = Array.isArray(goto) ? goto : [goto];
  for (const item of list) {
    const ok =
      typeof item === "string" ||
      (typeof item === "object" && item !== null && !Array.isArray(item) && typeof item.node === "string");
    if (!ok)
      throw invalidParam("input.respond: goto must be a node name, a {node, input} send, or a list of them");
  }
}
