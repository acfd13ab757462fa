import type { JsonObject } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { DEFAULT_WEBHOOK_SETTINGS, type RunSettings, type WebhookSettings } from "../../config.js";
import { isUuid, uuidv7 } from "../../ids.js";
import { dispatchRun } from "../../jobs/agent-run-dispatch.js";
import type { AgentRunWorker, RunSlot } from "../../jobs/agent-run-job.js";
import { webhookTargetProblem } from "../../net/webhook-target.js";
import type { ConfigurableHeadersConfig } from "../../runtime/graph-config.js";
import {
  type AgentRunRecord,
  activeRunsOfThread,
  insertRun,
  insertRunOnNewThread,
  lockThreadQueue,
  type RunCreator,
} from "../../store/agent-run-store.js";
import { checkpointExists } from "../../store/agent-run-thread-store.js";
import { type AssistantRecord, findAssistant } from "../../store/assistant-store.js";
import type { AuthFilter } from "../../store/auth-filter-sql.js";
import type { Queryable, Sql } from "../../store/db.js";
import { type PipelinedTransaction, pipelinedTransaction } from "../../store/pipelined-transaction.js";
import {
  findThreads,
  findVisibleThread,
  insertThreads,
  type ThreadRecord,
} from "../../store/thread-store.js";
import { authorizeEvent, creatorOf, type Principal } from "../iam/principal.js";
import { invalid, requireUuid } from "../request-validation.js";
import { assistantVisibility } from "./assistant-access.js";
import { cancelRunsInTx, type RunCancelDeps } from "./run-cancel.js";
import { newRunOf } from "./run-new.js";
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
  | {
      kind: "stateless";
      /** Metadata its new thread gets besides its graph's ids (custom auth's, so its filter passes). */
      newThreadMetadata?: JsonObject;
    };

/** Where {@link resolveAssistant} looks: the assistant's id and custom auth's visibility filter. */
interface AssistantLookup {
  id: string;
  visible: Awaited<ReturnType<typeof assistantVisibility>>;
}

/** NOT_FOUND for the assistant a request names, listing what it could name. */
function assistantNotFound(deps: Pick<RunCreationDeps, "graphIds">, raw: string): ConnectError {
  return new ConnectError(
    `assistant "${raw}" not found: send an assistant's UUID or a graph id (graphs: ${deps.graphIds().join(", ")})`,
    Code.NotFound,
  );
}

/** The lookup of the assistant `raw` names (no query once the workspace's system assistants exist). */
async function assistantLookup(
  deps: Pick<RunCreationDeps, "systemAssistants" | "graphIds">,
  workspaceId: string,
  raw: string,
  principal: Principal,
): Promise<AssistantLookup> {
  await deps.systemAssistants.ensure(workspaceId);
  if (raw === "") throw invalid("assistant_id is required: a UUID or a graph id");
  const id = isUuid(raw) ? raw.toLowerCase() : deps.systemAssistants.idOfGraph(raw);
  if (!id) throw assistantNotFound(deps, raw);
  const visible = await assistantVisibility(
    principal,
    deps.systemAssistants,
    "assistants:read",
    { assistant_id: id },
    true,
  );
  return { id, visible };
}

/**
 * The assistant a request names: by UUID, or the system assistant of a graph id; NOT_FOUND
 * otherwise, and when custom auth's `assistants:read` handler hides it from `principal` (a run,
 * cron, A2A or MCP call reaches no assistant its caller cannot read; system assistants are shared).
 * FAILED_PRECONDITION (409) for an assistant of a graph this server no longer serves (the graphs
 * file changed): nothing could run it.
 */
export async function resolveAssistant(
  deps: Pick<RunCreationDeps, "sql" | "systemAssistants" | "graphIds">,
  workspaceId: string,
  raw: string,
  principal: Principal,
): Promise<AssistantRecord> {
  const { id, visible } = await assistantLookup(deps, workspaceId, raw, principal);
  const found = await findAssistant(deps.sql, workspaceId, id, visible);
  if (!found) throw assistantNotFound(deps, raw);
  const served = deps.graphIds();
  if (!served.includes(found.graphId))
    throw new ConnectError(
      `assistant ${found.assistantId} uses graph "${found.graphId}", which this server does not serve (graphs: ${served.join(", ")})`,
      Code.FailedPrecondition,
    );
  return found;
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

/** A thread's queue as read under its lock: the thread (undefined when missing or hidden) and its active runs. */
interface ThreadQueue {
  thread: ThreadRecord | undefined;
  active: AgentRunRecord[];
}

/**
 * Locks the thread's queue ({@link lockThreadQueue}) and reads the thread (through custom auth's
 * filter when given) and its active runs, the three sent together: Postgres takes the lock before
 * it runs the reads, and each read sees what committed before it.
 */
async function readThreadQueue(
  tx: Queryable,
  workspaceId: string,
  threadId: string,
  auth: AuthFilter | undefined,
): Promise<ThreadQueue> {
  const [, thread, active] = await Promise.all([
    lockThreadQueue(tx, workspaceId, threadId),
    auth
      ? findVisibleThread(tx, { workspaceId, threadId }, auth)
      : findThreads(tx, [{ workspaceId, threadId }]).then(([found]) => found),
    activeRunsOfThread(tx, workspaceId, threadId),
  ]);
  return { thread, active };
}

/** InvalidArgument when the request's checkpoint names another thread than the run's. */
function checkCheckpointThread(request: RunRequest, threadId: string): void {
  if (request.checkpoint?.thread_id !== undefined && request.checkpoint.thread_id.toLowerCase() !== threadId)
    throw invalid(
      `checkpoint.thread_id ${request.checkpoint.thread_id} is another thread's: the run is on ${threadId}`,
    );
}

/** How {@link createRunInTx} may start the run here and end the transaction early. */
export interface RunInTxOptions {
  /** A slot of this process's run worker for a run that may start now; undefined when none is free. */
  reserve?: () => RunSlot | undefined;
  /**
   * Sends the transaction's COMMIT ({@link PipelinedTransaction.commit}): given, it goes out right
   * behind the run's insert when that is the transaction's last statement.
   */
  commit?: () => Promise<void>;
}

/**
 * Creates a run inside `tx`: finds (or creates) the thread, applies the multitask strategy to the
 * thread's active runs, stores the run with its merged config, marks the thread busy and, when the
 * run heads its thread's queue, dispatches it (or, when `reserve` hands it a local slot, claims it).
 * The thread's queue is locked until `tx` ends, so concurrent creations on one thread keep arrival
 * order. Crons fire through here, in the transaction that advances their schedule.
 */
export async function createRunInTx(
  tx: Queryable,
  deps: RunInTxDeps,
  workspaceId: string,
  target: RunTarget,
  assistant: AssistantRecord,
  request: RunRequest,
  headers: Headers,
  creator: RunCreator,
  options: RunInTxOptions = {},
): Promise<CreatedRun> {
  const threadId = target.kind === "thread" ? requireUuid(target.threadId, "thread_id") : uuidv7();
  checkCheckpointThread(request, threadId);
  const queue =
    target.kind === "thread"
      ? await readThreadQueue(tx, workspaceId, threadId, target.auth)
      : { thread: undefined, active: [] };
  return createRunOnQueue(
    tx,
    deps,
    workspaceId,
    target,
    threadId,
    queue,
    assistant,
    request,
    headers,
    creator,
    options,
  );
}

/** {@link createRunInTx} once the thread's queue is locked and read (a stateless run's is empty). */
async function createRunOnQueue(
  tx: Queryable,
  deps: RunInTxDeps,
  workspaceId: string,
  target: RunTarget,
  threadId: string,
  queue: ThreadQueue,
  assistant: AssistantRecord,
  request: RunRequest,
  headers: Headers,
  creator: RunCreator,
  options: RunInTxOptions,
): Promise<CreatedRun> {
  const graphMetadata = { graph_id: assistant.graphId, assistant_id: assistant.assistantId };
  const metadata = { ...target.newThreadMetadata, ...graphMetadata };
  // A thread that exists but is hidden from the caller (custom auth) collides here: 409, never its content.
  const newThread = () => insertThreads(tx, [{ workspaceId, threadId, metadata, ttl: null }]);
  const created = (rows: (ThreadRecord | undefined)[]): ThreadRecord => {
    const [row] = rows;
    if (!row) throw new ConnectError(`thread ${threadId} was created concurrently; retry`, Code.Aborted);
    return row;
  };
  // A stateless run's thread is new: nobody else can know it, so it has no queue to order, and its
  // insert goes out pipelined with the statements after it (the connection runs them in order).
  let { thread } = queue;
  const { active } = queue;
  let insertingThread: Promise<(ThreadRecord | undefined)[]> | undefined;
  if (target.kind === "thread") {
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
      `multitask:${request.multitaskStrategy}`,
    );
    waiting = await activeRunsOfThread(tx, workspaceId, threadId);
  }
  const newRun = newRunOf(
    deps,
    workspaceId,
    target.kind === "stateless",
    threadId,
    thread,
    assistant,
    request,
    headers,
    creator,
  );
  // A run that may start now starts in this process when it has a free slot: claimed as it is
  // inserted, no queue round trip. Runs still active before it dispatch it when they end.
  const slot = waiting.length === 0 && request.afterSeconds === 0 ? options.reserve?.() : undefined;
  // insertRun sends its statement as it is called, so a COMMIT sent next follows it on the wire.
  // It is the transaction's last statement when nothing is dispatched after it and no new thread's
  // insert is left to check.
  const inserting = insertRun(tx, newRun, {
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
  const last = !insertingThread && (slot !== undefined || waiting.length > 0);
  const [stored] = await Promise.all([inserting, last ? options.commit?.() : undefined]);
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
  creator: RunCreator,
  slot: RunSlot,
  target: Extract<RunTarget, { kind: "stateless" }>,
): Promise<AgentRunRecord> {
  const threadId = uuidv7();
  const newRun = newRunOf(deps, workspaceId, true, threadId, undefined, assistant, request, headers, creator);
  let stored: AgentRunRecord;
  try {
    stored = await insertRunOnNewThread(
      deps.sql,
      newRun,
      { ...target.newThreadMetadata, graph_id: assistant.graphId, assistant_id: assistant.assistantId },
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
 * A run on a thread named by a valid UUID, in a {@link pipelinedTransaction}: BEGIN, the
 * assistant's read and the thread queue's lock and reads go out together, and the COMMIT with the
 * run's insert, so a run on an idle or busy thread takes two round trips, as a stateless one does.
 */
async function createThreadRun(
  deps: RunCreationDeps,
  workspaceId: string,
  target: Extract<RunTarget, { kind: "thread" }>,
  request: RunRequest,
  headers: Headers,
  principal: Principal,
  reserve: () => RunSlot | undefined,
): Promise<CreatedRun> {
  const lookup = await assistantLookup(deps, workspaceId, request.assistantId, principal);
  const threadId = target.threadId.toLowerCase();
  return pipelinedTransaction(deps.sql, async ({ tx, commit }) => {
    const [assistant, queue] = await Promise.all([
      findAssistant(tx, workspaceId, lookup.id, lookup.visible),
      readThreadQueue(tx, workspaceId, threadId, target.auth),
    ]);
    if (!assistant) throw assistantNotFound(deps, request.assistantId);
    checkCheckpointThread(request, threadId);
    return createRunOnQueue(
      tx,
      deps,
      workspaceId,
      target,
      threadId,
      queue,
      assistant,
      request,
      headers,
      creatorOf(principal),
      { reserve, commit },
    );
  });
}

/** A run {@link createRun} created, and whether it started executing in this process. */
export interface StartedRun {
  run: AgentRunRecord;
  /**
   * Claimed by this process's run worker as it was created, and launched just before `createRun`
   * resolved: until the caller's next turn of the event loop, none of its events can have been
   * stored and handed over, and no other process executes it.
   */
  startedHere: boolean;
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
): Promise<StartedRun> {
  const { target, request } = await authorizeRun(principal, unauthorized, unauthorizedRequest);
  await checkWebhook(request.webhook, deps.webhooks ?? DEFAULT_WEBHOOK_SETTINGS);
  let reserved: RunSlot | undefined;
  const reserve = () => {
    reserved = deps.localRuns?.reserve();
    return reserved;
  };
  let creating: Promise<CreatedRun>;
  if (target.kind === "thread" && isUuid(target.threadId)) {
    creating = createThreadRun(deps, workspaceId, target, request, headers, principal, reserve);
  } else {
    const assistant = await resolveAssistant(deps, workspaceId, request.assistantId, principal);
    // A stateless run that starts now, in a free slot of this process: its new thread and the run,
    // claimed, in one statement (no transaction, no queue). Anything else takes the transaction.
    if (target.kind === "stateless" && !request.checkpoint && request.afterSeconds === 0) {
      const slot = deps.localRuns?.reserve();
      if (slot)
        return {
          run: await startStatelessHere(
            deps,
            workspaceId,
            assistant,
            request,
            headers,
            creatorOf(principal),
            slot,
            target,
          ),
          startedHere: true,
        };
    }
    creating = pipelinedTransaction(deps.sql, ({ tx, commit }) =>
      createRunInTx(tx, deps, workspaceId, target, assistant, request, headers, creatorOf(principal), {
        reserve,
        commit,
      }),
    );
  }
  const created = await creating.catch((error: unknown) => {
    reserved?.release();
    reserved = undefined;
    throw error;
  });
  if (reserved) {
    if (created.claim) reserved.run(created.claim);
    else reserved.release();
  }
  return { run: created.run, startedHere: created.claim !== undefined };
}

/**
 * Custom auth's `threads:create_run` for a run: the handler sees the run (a stateless run has no
 * thread id) and may change its metadata, which the run then stores (and a thread the run creates
 * gets, a stateless run's included); its filter must pass the run's thread.
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
  // A stateless run's thread carries the metadata too, so the handler's filter finds it when the
  // caller joins the run's stream (as the LangGraph JS server's temporary threads do).
  if (target.kind === "stateless")
    return { target: { ...target, newThreadMetadata: metadata }, request: authorized };
  return {
    target: { ...target, ...(auth ? { auth } : {}), newThreadMetadata: metadata },
    request: authorized,
  };
}
