import type { JsonObject } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { DEFAULT_WEBHOOK_SETTINGS, type RunSettings, type WebhookSettings } from "../../config.js";
import { uuidv7 } from "../../ids.js";
import { dispatchRun } from "../../jobs/agent-run-dispatch.js";
import type { AgentRunWorker, RunSlot } from "../../jobs/agent-run-job.js";
import { webhookTargetProblem } from "../../net/webhook-target.js";
import type { ConfigurableHeadersConfig } from "../../runtime/graph-config.js";
import type { RunKwargs } from "../../runtime/run-kwargs.js";
import {
  type AgentRunRecord,
  activeRunsOfThread,
  insertRun,
  insertRunOnNewThread,
  lockThreadQueue,
  type NewRun,
} from "../../store/agent-run-store.js";
import { checkpointExists } from "../../store/agent-run-thread-store.js";
import { type AssistantRecord, findAssistant } from "../../store/assistant-store.js";
import type { AuthFilter } from "../../store/auth-filter-sql.js";
import type { Sql, Transaction } from "../../store/db.js";
import {
  findThreads,
  findVisibleThread,
  insertThreads,
  type ThreadRecord,
} from "../../store/thread-store.js";
import { authorizeEvent, type Principal } from "../iam/principal.js";
import { invalid, requireUuid } from "../request-validation.js";
import { assistantVisibility } from "./assistant-access.js";
import { cancelRunsInTx, type RunCancelDeps } from "./run-cancel.js";
import type { RunRequest } from "./run-requests.js";
import type { SystemAssistants } from "./system-assistants.js";
import { handlerMetadata, threadNotFound } from "./thread-access.js";

/** What creating runs needs. */
export interface RunCreationDeps {
  sql: Sql;
  systemAssistants: SystemAssistants;
  graphIds: () => string[];
  cancel: RunCancelDeps;
  settings: RunSettings;
  /** The graphs file's `http.configurable_headers`; undefined copies no header. */
  configurableHeaders: ConfigurableHeadersConfig | undefined;
  /** This process's run worker, when it executes runs (roles all and worker). */
  localRuns: Pick<AgentRunWorker, "reserve"> | undefined;
  /** Which webhook URLs runs may name; {@link DEFAULT_WEBHOOK_SETTINGS} when absent. */
  webhooks?: WebhookSettings;
}

/** What creating a run inside a caller's transaction needs. */
export type RunInTxDeps = Pick<RunCreationDeps, "cancel" | "settings" | "configurableHeaders">;

/** Where a run goes: an existing (or to be created) thread, or a new temporary one. */
export type RunTarget =
  | {
      kind: "thread";
      threadId: string;
      /** Custom auth's filter: a thread whose metadata fails it is not found. */
      auth?: AuthFilter;
      /** Metadata a thread created by `if_not_exists: "create"` gets besides its graph's ids. */
      newThreadMetadata?: JsonObject;
    }
  | { kind: "stateless" };

/**
 * The assistant a request names: by UUID, or the system assistant of a graph id; NOT_FOUND
 * otherwise, and when custom auth's `assistants:read` handler hides it from `principal` (a run,
 * cron, A2A or MCP call reaches no assistant its caller cannot read; system assistants are shared).
 */
export async function resolveAssistant(
  deps: Pick<RunCreationDeps, "sql" | "systemAssistants" | "graphIds">,
  workspaceId: string,
  raw: string,
  principal: Principal,
): Promise<AssistantRecord> {
  await deps.systemAssistants.ensure(workspaceId);
  if (raw === "") throw invalid("assistant_id is required: a UUID or a graph id");
  const id = /^[0-9a-f-]{36}$/i.test(raw) ? raw.toLowerCase() : deps.systemAssistants.idOfGraph(raw);
  const visible = id
    ? await assistantVisibility(principal, deps.systemAssistants, "assistants:read", { assistant_id: id })
    : undefined;
  const found = id ? await findAssistant(deps.sql, workspaceId, id, visible) : undefined;
  if (!found)
    throw new ConnectError(
      `assistant "${raw}" not found: send an assistant's UUID or a graph id (graphs: ${deps.graphIds().join(", ")})`,
      Code.NotFound,
    );
  return found;
}

/** A header name matches a `*`-wildcard pattern, case-insensitively. */
function matches(pattern: string, name: string): boolean {
  const re = new RegExp(
    `^${pattern
      .split("*")
      .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
      .join(".*")}$`,
    "i",
  );
  return re.test(name);
}

/**
 * The request headers the graphs file lets into `config.configurable` (`http.configurable_headers`
 * include patterns, minus exclude patterns). Credentials never pass, whatever the patterns say.
 */
export function configurableHeaders(
  headers: Headers,
  config: ConfigurableHeadersConfig | undefined,
): JsonObject {
  if (!config || config.include.length === 0) return {};
  const out: JsonObject = {};
  headers.forEach((value, name) => {
    if (name === "x-api-key" || name === "authorization" || name === "cookie") return;
    if (!config.include.some((p) => matches(p, name))) return;
    if (config.exclude.some((p) => matches(p, name))) return;
    out[name] = value;
  });
  return out;
}

function objectOf(value: unknown): JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as JsonObject) : {};
}

/** A run created in a transaction, and the claim to start it here when a local slot took it. */
export interface CreatedRun {
  run: AgentRunRecord;
  claim: { run: AgentRunRecord; leaseToken: string; orphaned: false } | undefined;
}

/**
 * Refuses (422) a webhook this server would not call: not an absolute http(s) URL, a host off the
 * allow list, or a host that is (or resolves to) an address the SSRF policy refuses. With webhooks
 * disabled nothing is called, so nothing is checked beyond the URL's form. Run creation calls it;
 * whatever stores a run payload for later (a cron) can call it up front with the same answer.
 */
export async function checkWebhook(webhook: string | null, settings: WebhookSettings): Promise<void> {
  if (webhook === null || !settings.enabled) return;
  const problem = await webhookTargetProblem(webhook, settings);
  if (problem) throw invalid(problem.message);
}

/** The run a request makes on `threadId`: a new id, and the assistant's, thread's and request's config merged. */
function newRunOf(
  deps: Pick<RunInTxDeps, "configurableHeaders">,
  workspaceId: string,
  target: RunTarget,
  threadId: string,
  thread: ThreadRecord | undefined,
  assistant: AssistantRecord,
  request: RunRequest,
  headers: Headers,
): NewRun {
  const threadConfig = objectOf(thread?.config);
  const requestConfig = request.config;
  const config = {
    ...assistant.config,
    ...threadConfig,
    ...requestConfig,
    configurable: {
      ...objectOf(assistant.config.configurable),
      ...objectOf(threadConfig.configurable),
      ...objectOf(requestConfig.configurable),
      ...configurableHeaders(headers, deps.configurableHeaders),
    },
  };
  const kwargs: RunKwargs = {
    input: request.input,
    command: request.command,
    config: config as RunKwargs["config"],
    context: { ...objectOf(assistant.context), ...request.context },
    stream_mode: request.streamModes,
    subgraphs: request.subgraphs,
    resumable: request.resumable,
    interrupt_before: request.interruptBefore,
    interrupt_after: request.interruptAfter,
    checkpoint: request.checkpoint
      ? {
          checkpoint_id: request.checkpoint.checkpoint_id,
          checkpoint_ns: request.checkpoint.checkpoint_ns,
        }
      : null,
    durability: request.durability,
    webhook: request.webhook,
    feedback_keys: request.feedbackKeys,
    temporary: target.kind === "stateless" && request.onCompletion === "delete",
    on_disconnect: request.onDisconnect,
    ...(request.langsmithTracer ? { langsmith_tracer: request.langsmithTracer } : {}),
  };
  return {
    workspaceId,
    runId: uuidv7(),
    threadId,
    assistantId: assistant.assistantId,
    graphId: assistant.graphId,
    metadata: request.metadata,
    kwargs: kwargs as unknown as JsonObject,
    multitaskStrategy: request.multitaskStrategy,
    temporary: kwargs.temporary,
    afterSeconds: request.afterSeconds,
  };
}

/**
 * Creates a run inside `tx`: finds (or creates) the thread, applies the multitask strategy to the
 * thread's active runs, stores the run with its merged config, marks the thread busy and, when the
 * run heads its thread's queue, dispatches it (or, when `reserve` hands it a local slot, claims it).
 * The thread's queue is locked until `tx` ends, so concurrent creations on one thread keep arrival
 * order. Crons fire through here, in the transaction that advances their schedule.
 */
export async function createRunInTx(
  tx: Transaction,
  deps: RunInTxDeps,
  workspaceId: string,
  target: RunTarget,
  assistant: AssistantRecord,
  request: RunRequest,
  headers: Headers,
  reserve: () => RunSlot | undefined = () => undefined,
): Promise<CreatedRun> {
  const threadId = target.kind === "thread" ? requireUuid(target.threadId, "thread_id") : uuidv7();
  if (request.checkpoint?.thread_id !== undefined && request.checkpoint.thread_id.toLowerCase() !== threadId)
    throw invalid(
      `checkpoint.thread_id ${request.checkpoint.thread_id} is another thread's: the run is on ${threadId}`,
    );
  const graphMetadata = { graph_id: assistant.graphId, assistant_id: assistant.assistantId };
  const metadata = { ...(target.kind === "thread" ? target.newThreadMetadata : undefined), ...graphMetadata };
  // A thread that exists but is hidden from the caller (custom auth) collides here: 409, never its content.
  const newThread = () => insertThreads(tx, [{ workspaceId, threadId, metadata, ttl: null }]);
  const created = (rows: (ThreadRecord | undefined)[]): ThreadRecord => {
    const [row] = rows;
    if (!row) throw new ConnectError(`thread ${threadId} was created concurrently; retry`, Code.Aborted);
    return row;
  };
  // A stateless run's thread is new: nobody else can know it, so it has no queue to order, and its
  // insert goes out pipelined with the statements after it (the connection runs them in order).
  let thread: ThreadRecord | undefined;
  let insertingThread: Promise<(ThreadRecord | undefined)[]> | undefined;
  let active: Awaited<ReturnType<typeof activeRunsOfThread>> = [];
  if (target.kind === "thread") {
    // The lock and the reads in one round trip: Postgres takes the lock before it reads.
    [, [thread], active] = await Promise.all([
      lockThreadQueue(tx, workspaceId, threadId),
      target.auth
        ? findVisibleThread(tx, { workspaceId, threadId }, target.auth).then((visible) => [visible])
        : findThreads(tx, [{ workspaceId, threadId }]),
      activeRunsOfThread(tx, workspaceId, threadId),
    ]);
    if (!thread) {
      if (request.ifNotExists !== "create") throw threadNotFound(threadId);
      const [inserted] = await newThread();
      // With a filter, the thread that is there is most likely one the caller may not see.
      if (!inserted && target.auth)
        throw new ConnectError(`thread ${threadId} already exists`, Code.AlreadyExists);
      thread = created([inserted]);
    }
  } else {
    const inserting = newThread();
    // Awaited below; a statement failing before then must not leave its rejection unhandled.
    inserting.catch(() => {});
    insertingThread = inserting;
  }
  if (request.checkpoint && !(await checkpointExists(tx, workspaceId, threadId, request.checkpoint)))
    throw new ConnectError(
      `checkpoint ${request.checkpoint.checkpoint_id} not found on thread ${threadId}`,
      Code.NotFound,
    );
  if (active.length > 0 && request.multitaskStrategy === "reject")
    throw new ConnectError(
      `thread ${threadId} is busy with run ${active[0]?.runId}: multitask_strategy "reject" refuses a new run while one is pending or running (use enqueue, interrupt or rollback)`,
      Code.AlreadyExists,
    );
  let waiting = active;
  if (
    active.length > 0 &&
    (request.multitaskStrategy === "interrupt" || request.multitaskStrategy === "rollback")
  ) {
    await cancelRunsInTx(
      tx,
      deps.cancel,
      workspaceId,
      active.map((r) => r.runId),
      request.multitaskStrategy,
    );
    waiting = await activeRunsOfThread(tx, workspaceId, threadId);
  }
  const newRun = newRunOf(deps, workspaceId, target, threadId, thread, assistant, request, headers);
  // A run that may start now starts in this process when it has a free slot: claimed as it is
  // inserted, no queue round trip. Runs still active before it dispatch it when they end.
  const slot = waiting.length === 0 && request.afterSeconds === 0 ? reserve() : undefined;
  const stored = await insertRun(tx, newRun, {
    threadMetadata: deps.settings.richThreads ? graphMetadata : null,
    ...(slot
      ? {
          claim: {
            owner: slot.owner,
            leaseToken: slot.leaseToken,
            leaseSeconds: deps.settings.leaseSeconds,
          },
        }
      : {}),
  });
  if (insertingThread) created(await insertingThread);
  // The caller sees the run as created (pending), as when a worker claims it a moment later.
  const run: AgentRunRecord = { ...stored, status: "pending", attempt: 0 };
  if (slot) return { run, claim: { run: stored, leaseToken: slot.leaseToken, orphaned: false } };
  if (waiting.length > 0) return { run, claim: undefined };
  await dispatchRun(
    tx,
    deps.cancel.dispatch,
    { workspaceId, threadId, runId: newRun.runId },
    request.afterSeconds,
  );
  return { run, claim: undefined };
}

/** The fast path of {@link createRun}: a stateless run inserted with its thread and started in `slot`. */
async function startStatelessHere(
  deps: RunCreationDeps,
  workspaceId: string,
  assistant: AssistantRecord,
  request: RunRequest,
  headers: Headers,
  slot: RunSlot,
): Promise<AgentRunRecord> {
  const threadId = uuidv7();
  const newRun = newRunOf(
    deps,
    workspaceId,
    { kind: "stateless" },
    threadId,
    undefined,
    assistant,
    request,
    headers,
  );
  let stored: AgentRunRecord;
  try {
    stored = await insertRunOnNewThread(
      deps.sql,
      newRun,
      { graph_id: assistant.graphId, assistant_id: assistant.assistantId },
      { owner: slot.owner, leaseToken: slot.leaseToken, leaseSeconds: deps.settings.leaseSeconds },
    );
  } catch (error) {
    slot.release();
    throw error;
  }
  slot.run({ run: stored, leaseToken: slot.leaseToken, orphaned: false });
  // The caller sees the run as created (pending), as when a worker claims it a moment later.
  return { ...stored, status: "pending", attempt: 0 };
}

/**
 * Creates a run in one transaction of its own (see {@link createRunInTx}), after resolving the
 * assistant; a run that may start at once starts in this process when it has a free slot.
 */
export async function createRun(
  deps: RunCreationDeps,
  workspaceId: string,
  unauthorized: RunTarget,
  unauthorizedRequest: RunRequest,
  headers: Headers,
  principal: Principal,
): Promise<AgentRunRecord> {
  const { target, request } = await authorizeRun(principal, unauthorized, unauthorizedRequest);
  await checkWebhook(request.webhook, deps.webhooks ?? DEFAULT_WEBHOOK_SETTINGS);
  const assistant = await resolveAssistant(deps, workspaceId, request.assistantId, principal);
  // A stateless run that starts now, in a free slot of this process: its new thread and the run,
  // claimed, in one statement (no transaction, no queue). Anything else takes the transaction.
  if (target.kind === "stateless" && !request.checkpoint && request.afterSeconds === 0) {
    const slot = deps.localRuns?.reserve();
    if (slot) return startStatelessHere(deps, workspaceId, assistant, request, headers, slot);
  }
  let reserved: RunSlot | undefined;
  const reserve = () => {
    reserved = deps.localRuns?.reserve();
    return reserved;
  };
  const created = await deps.sql
    .begin((tx) => createRunInTx(tx, deps, workspaceId, target, assistant, request, headers, reserve))
    .catch((error: unknown) => {
      reserved?.release();
      reserved = undefined;
      throw error;
    });
  if (reserved) {
    if (created.claim) reserved.run(created.claim);
    else reserved.release();
  }
  return created.run;
}

/**
 * Custom auth's `threads:create_run` for a run: the handler sees the run (a stateless run has no
 * thread id) and may change its metadata, which the run then stores (and a thread the run creates
 * gets); its filter must pass the run's thread.
 */
async function authorizeRun(
  principal: Principal,
  target: RunTarget,
  request: RunRequest,
): Promise<{ target: RunTarget; request: RunRequest }> {
  if (!principal.authRules) return { target, request };
  const value: Record<string, unknown> = {
    thread_id: target.kind === "thread" ? target.threadId : undefined,
    assistant_id: request.assistantId,
    run_id: undefined,
    status: "pending",
    metadata: { ...request.metadata },
    prevent_insert_if_inflight: undefined,
    multitask_strategy: request.multitaskStrategy,
    if_not_exists: request.ifNotExists,
    after_seconds: request.afterSeconds,
    kwargs: {
      input: request.input,
      command: request.command,
      config: request.config,
      context: request.context,
      stream_mode: request.streamModes,
      webhook: request.webhook,
    },
  };
  const auth = await authorizeEvent(principal, "threads:create_run", value);
  const metadata = handlerMetadata(value, "threads:create_run");
  const authorized = { ...request, metadata };
  if (target.kind === "stateless") return { target, request: authorized };
  return {
    target: { ...target, ...(auth ? { auth } : {}), newThreadMetadata: metadata },
    request: authorized,
  };
}
