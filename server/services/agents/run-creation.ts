/**
 * Run creation: one {@link createRun} for every run (the run service's, the A2A and MCP adapters',
 * a cron's), however many statements it pipelines.
 *
 * Invariants:
 * - a run on an existing thread is created with the thread's queue locked (lockThreadQueue) until
 *   its transaction ends, so concurrent creations on one thread keep arrival order, and its
 *   multitask strategy sees every run created before it;
 * - a run is inserted with the thread marked busy, in one statement, and, when it heads its
 *   thread's queue and may start now, either claimed by a slot of this process (it starts here),
 *   or, every slot being busy, handed to this process's backlog once it committed (it waits here
 *   for a slot, jobs/run-backlog.ts), or dispatched through the queue in the same transaction
 *   (the job exists only if the run does);
 * - a stateless run its caller waits on (a wait, a stream: `awaitedUntil`) that finds every slot
 *   busy waits for one, in turn with the process's other takers and at most BACKLOG_WAIT_MS,
 *   before anything is written, then takes the fast path; no slot in time, it is written as any
 *   other; its caller gone first, nothing is written;
 * - nothing is half-written: a request refused (4xx) or failed leaves no run, thread or job, and
 *   gives back the slot it reserved;
 * - statements are pipelined (store/batching/pipelined-transaction.ts): a run on a thread takes two round
 *   trips (BEGIN with the assistant's read and the thread queue's lock and reads; then the insert,
 *   its job and COMMIT), or one statement on a quiet thread's fast path (quiet-thread-start.ts); a
 *   stateless run one transaction of one round trip, or one statement on its fast path
 *   (stateless-start.ts).
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { DEFAULT_WEBHOOK_SETTINGS, type RunSettings, type WebhookSettings } from "../../config.js";
import { uuidv7 } from "../../ids.js";
import { dispatchRun } from "../../jobs/agent-run-dispatch.js";
import type { LocalRuns, RunSlot } from "../../jobs/agent-run-job.js";
import type { BacklogPlace } from "../../jobs/run-backlog.js";
import type { ConfigurableHeadersConfig } from "../../runtime/graph-config.js";
import {
  type AgentRunRecord,
  activeRunsOfThread,
  insertRun,
  insertRunOnNewThread,
  type RunCreator,
} from "../../store/agents/agent-run-store.js";
import { checkpointExists } from "../../store/agents/agent-run-thread-store.js";
import type { AssistantRecord } from "../../store/agents/assistant-store.js";
import { insertThreads, type ThreadRecord } from "../../store/agents/thread-store.js";
import { pipelinedTransaction } from "../../store/batching/pipelined-transaction.js";
import type { Queryable, Sql } from "../../store/db.js";
import { creatorOf, type Principal } from "../iam/principal.js";
import { requireUuid } from "../request-validation.js";
import { startOnQuietThread } from "./quiet-thread-start.js";
import {
  type AssistantLookup,
  assistantLookup,
  findRunAssistant,
  type RunAssistantDeps,
  servedAssistant,
} from "./run-assistant.js";
import type { RunAssistantCache } from "./run-assistant-cache.js";
import { authorizeRun, checkWebhook, type RunTarget } from "./run-authorization.js";
import { cancelRunsInTx, type RunCancelDeps } from "./run-cancel.js";
import { newRunOf } from "./run-new.js";
import type { RunRequest } from "./run-requests.js";
import { checkCheckpointThread, readThreadQueue, type ThreadQueue } from "./run-thread-queue.js";
import { asCreated } from "./slot-start.js";
import { startStatelessHere, startsStatelessHere, statelessSlot } from "./stateless-start.js";
import { threadNotFound } from "./thread-access.js";

/** What writing a run needs, in any transaction. */
export interface RunWriteDeps {
  cancel: RunCancelDeps;
  settings: RunSettings;
  /** The graphs file's `http.configurable_headers`; undefined copies no header. */
  configurableHeaders: ConfigurableHeadersConfig | undefined;
}

/** What creating runs in transactions of their own needs. */
export interface RunCreationDeps extends RunWriteDeps, RunAssistantDeps {
  sql: Sql;
  /** The assistants stateless runs were made from lately (run-assistant-cache.ts). */
  assistants: RunAssistantCache;
  /** This process's run worker, when it executes runs (roles all and worker). */
  localRuns: LocalRuns | undefined;
  /** Which webhook URLs runs may name; {@link DEFAULT_WEBHOOK_SETTINGS} when absent. */
  webhooks?: WebhookSettings;
}

/** A run to create. */
export interface RunCreation {
  workspaceId: string;
  target: RunTarget;
  request: RunRequest;
  /** The request's headers: `http.configurable_headers` copies some into the run's config. */
  headers: Headers;
}

/** A transaction a run is created in, rather than one of its own (a cron's tick), and its assistant. */
export interface WithinTransaction {
  tx: Queryable;
  /** The run's assistant, as read in `tx`. */
  assistant: AssistantRecord;
  /** Who the run counts under in usage (a cron's runs: whoever created the cron). */
  creator: RunCreator;
}

/** A run created for a caller, in a transaction of its own. */
export interface CallerCreation {
  principal: Principal;
  /**
   * Given when the caller waits on the run's execution (a wait, a stream) until this signal
   * aborts (the client went away): a stateless run that may start now then waits up to
   * BACKLOG_WAIT_MS (jobs/run-backlog.ts) for a slot of this process before anything is written,
   * and takes the fast path (stateless-start.ts `statelessSlot`) once it has one. The caller waited for the run either way;
   * this way the run is one statement rather than a pending run, its commit and a claim. A run
   * that got no slot in time is written pending as any other; a client gone first has nothing written.
   */
  awaitedUntil?: AbortSignal;
}

/** A run {@link createRun} created, and whether it started executing in this process. */
export interface StartedRun {
  /** The run as created (pending). */
  run: AgentRunRecord;
  /**
   * Claimed by this process's run worker as it was created, and launched just before `createRun`
   * resolved: until the caller's next turn of the event loop, none of its events can have been
   * stored and handed over, and no other process executes it.
   */
  startedHere: boolean;
}

/** One creation, as the write phase sees it. */
interface Creating {
  deps: RunWriteDeps;
  tx: Queryable;
  workspaceId: string;
  target: RunTarget;
  threadId: string;
  assistant: AssistantRecord;
  request: RunRequest;
  headers: Headers;
  /** Who creates the run: its trace counts in usage under them. */
  creator: RunCreator;
  /** This process's run worker, when it executes runs and the run may start here. */
  local?: LocalRuns | undefined;
  /** For a stateless run made from a kept assistant: the row version its insert checks. */
  assistantRowVersion?: string;
  /** Sends COMMIT behind the transaction's last statement; absent in a caller's transaction. */
  commitWith?: <T>(last: Promise<T>) => Promise<T>;
}

/** The run written, and whether a slot of this process claimed it as it was inserted. */
interface Written {
  run: AgentRunRecord;
  claimed: boolean;
}

/**
 * What a creation took of this process's run worker for a run that may start now: a slot (the run
 * is claimed as it is inserted) or, every slot being busy, a backlog place (it waits here for one,
 * without a job). Each is used once the creation committed, and given back when it did not.
 */
interface LocalStart {
  slot?: RunSlot | undefined;
  place?: BacklogPlace | undefined;
}

/** Gives back what `took` holds: the creation did not commit. */
function releaseLocal(took: LocalStart): void {
  took.slot?.release();
  took.place?.release();
  took.slot = undefined;
  took.place = undefined;
}

/** The thread the run goes on, created when it is missing and the request says so. */
async function threadOfRun(c: Creating, queue: ThreadQueue): Promise<ThreadRecord> {
  if (queue.thread) return queue.thread;
  if (c.target.kind !== "thread" || c.request.ifNotExists !== "create") throw threadNotFound(c.threadId);
  const metadata = {
    ...c.target.newThreadMetadata,
    graph_id: c.assistant.graphId,
    assistant_id: c.assistant.assistantId,
  };
  const [inserted] = await insertThreads(c.tx, [
    { workspaceId: c.workspaceId, threadId: c.threadId, metadata, ttl: null },
  ]);
  // A thread that exists but is hidden from the caller (custom auth) collides here: 409, never its
  // content. With a filter, the thread that is there is most likely one the caller may not see.
  if (!inserted && c.target.auth)
    throw new ConnectError(`thread ${c.threadId} already exists`, Code.AlreadyExists);
  if (!inserted) throw new ConnectError(`thread ${c.threadId} was created concurrently; retry`, Code.Aborted);
  return inserted;
}

/**
 * Applies the multitask strategy to the runs active on the thread: refuses the run (reject),
 * cancels them (interrupt, rollback) or leaves them (enqueue). Answers the runs still ahead of it.
 */
async function runsAhead(c: Creating, active: AgentRunRecord[]): Promise<AgentRunRecord[]> {
  if (active.length === 0) return active;
  const strategy = c.request.multitaskStrategy;
  if (strategy === "reject")
    throw new ConnectError(
      `thread ${c.threadId} is busy with run ${active[0]?.runId}: multitask_strategy "reject" refuses a new run while one is pending or running (use enqueue, interrupt or rollback)`,
      Code.AlreadyExists,
    );
  if (strategy !== "interrupt" && strategy !== "rollback") return active;
  await cancelRunsInTx(
    c.tx,
    c.deps.cancel,
    c.workspaceId,
    active.map((r) => r.runId),
    strategy,
    `multitask:${strategy}`,
  );
  return activeRunsOfThread(c.tx, c.workspaceId, c.threadId);
}

/**
 * The write phase, once the thread's queue is locked and read (a stateless run's is empty): the
 * run is inserted, claimed by a local slot when it may start now and one is free, and otherwise
 * dispatched when it heads its thread's queue. The last statement goes out with COMMIT.
 */
async function writeRun(c: Creating, queue: ThreadQueue | undefined, took: LocalStart): Promise<Written> {
  const { deps, tx, workspaceId, threadId, assistant, request } = c;
  const graphMetadata = { graph_id: assistant.graphId, assistant_id: assistant.assistantId };
  // A stateless run's new thread also gets custom auth's metadata, so the handler's filter passes it.
  const newThreadMetadata = {
    ...(c.target.kind === "stateless" ? c.target.newThreadMetadata : {}),
    ...graphMetadata,
  };
  const thread = queue ? await threadOfRun(c, queue) : undefined;
  if (request.checkpoint && !(await checkpointExists(tx, workspaceId, threadId, request.checkpoint)))
    throw new ConnectError(
      `checkpoint ${request.checkpoint.checkpoint_id} not found on thread ${threadId}`,
      Code.NotFound,
    );
  const ahead = queue ? await runsAhead(c, queue.active) : [];
  const newRun = newRunOf(deps, {
    workspaceId,
    threadId,
    thread,
    stateless: !queue,
    assistant,
    request,
    headers: c.headers,
    creator: c.creator,
  });
  // A run that may start now starts in this process when it has a free slot: claimed as it is
  // inserted, no queue round trip; with every slot busy, it may wait in the backlog for one. Runs
  // still active before it dispatch it when they end.
  const startsNow = ahead.length === 0 && request.afterSeconds === 0;
  const taken = startsNow ? c.local?.reserve() : undefined;
  took.slot = taken;
  took.place = startsNow && !taken ? c.local?.backlog() : undefined;
  const claim = taken
    ? { owner: taken.owner, leaseToken: taken.leaseToken, leaseSeconds: deps.settings.leaseSeconds }
    : undefined;
  const inserting = queue
    ? insertRun(tx, newRun, {
        threadMetadata: deps.settings.richThreads ? graphMetadata : null,
        ...(claim ? { claim } : {}),
      })
    : insertRunOnNewThread(tx, newRun, newThreadMetadata, {
        ...(claim ? { claim } : {}),
        ...(c.assistantRowVersion === undefined ? {} : { assistantRowVersion: c.assistantRowVersion }),
      }).then(({ inserted }) => {
        if (!inserted) throw new AssistantChanged();
        return inserted;
      });
  const dispatching =
    !taken && !took.place && ahead.length === 0
      ? dispatchRun(
          tx,
          deps.cancel.dispatch,
          { workspaceId, threadId, runId: newRun.runId },
          request.afterSeconds,
        )
      : undefined;
  // Both sent; COMMIT goes behind them. The first to fail is the cause (a failure aborts the
  // transaction, and the statements after it fail for that alone).
  const written = Promise.all([inserting, dispatching]);
  const [stored] = await (c.commitWith ? c.commitWith(written) : written);
  return { run: stored, claimed: taken !== undefined };
}

/** The assistant a stateless run was made from changed since it was read: the creation is retried. */
class AssistantChanged extends Error {
  override readonly name = "AssistantChanged";
}

/**
 * Creates a run (see the invariants above). Given a `principal`, custom auth's
 * `threads:create_run` and `assistants:read` apply and the webhook is checked; the run is created
 * in a transaction of its own and starts in this process when it has a free slot. Given a
 * transaction (`within`, a cron's tick), the run is created in it and starts through the queue.
 */
export async function createRun(
  deps: RunWriteDeps,
  creation: RunCreation,
  options: { within: WithinTransaction },
): Promise<StartedRun>;
export async function createRun(
  deps: RunCreationDeps,
  creation: RunCreation,
  options: CallerCreation,
): Promise<StartedRun>;
export async function createRun(
  deps: RunWriteDeps | RunCreationDeps,
  creation: RunCreation,
  options: { within: WithinTransaction } | CallerCreation,
): Promise<StartedRun> {
  const threadId =
    creation.target.kind === "thread"
      ? requireUuid(creation.target.threadId, "thread_id").toLowerCase()
      : uuidv7();
  checkCheckpointThread(creation.request, threadId);
  if ("within" in options) {
    const { tx, assistant, creator } = options.within;
    const c: Creating = { ...creation, deps, tx, threadId, assistant, creator };
    const queue =
      creation.target.kind === "thread"
        ? await readThreadQueue(tx, creation.workspaceId, threadId, creation.target.auth)
        : undefined;
    const { run } = await writeRun(c, queue, {});
    return { run: asCreated(run), startedHere: false };
  }
  if (!isCreationDeps(deps))
    throw new Error("createRun for a caller needs the run creation deps (sql, assistants)");
  return createInOwnTransaction(deps, creation, threadId, options);
}

/**
 * A stateless run in a transaction of its own: on the fast path (stateless-start.ts) when a slot
 * of this process is free, through the queue otherwise; made from the kept assistant first, and
 * once more from a fresh read when that one changed meanwhile.
 */
async function createStateless(
  deps: RunCreationDeps,
  creation: {
    workspaceId: string;
    target: RunTarget;
    threadId: string;
    request: RunRequest;
    headers: Headers;
    creator: RunCreator;
    awaitedUntil: AbortSignal | undefined;
  },
  lookup: AssistantLookup,
  took: LocalStart,
): Promise<{ started: AgentRunRecord } | { written: Written }> {
  const { workspaceId, target, threadId, request, headers, creator, awaitedUntil } = creation;
  for (let fresh = false; ; fresh = true) {
    const { assistant, rowVersion } = await deps.assistants.get(
      workspaceId,
      lookup,
      request.assistantId,
      fresh,
    );
    servedAssistant(deps, assistant);
    const here = startsStatelessHere(target, request)
      ? await statelessSlot(deps.localRuns, awaitedUntil)
      : undefined;
    if (here) {
      const started = await startStatelessHere(
        deps,
        {
          workspaceId,
          assistant,
          rowVersion,
          request,
          headers,
          creator,
          newThreadMetadata: target.kind === "stateless" ? target.newThreadMetadata : undefined,
        },
        here,
      );
      if (started) return { started };
    } else {
      try {
        const written = await pipelinedTransaction(deps.sql, ({ tx, commitWith }) =>
          writeRun(
            {
              deps,
              tx,
              workspaceId,
              target,
              threadId,
              assistant,
              request,
              headers,
              creator,
              local: deps.localRuns,
              commitWith,
              ...(rowVersion === undefined ? {} : { assistantRowVersion: rowVersion }),
            },
            undefined,
            took,
          ),
        );
        return { written };
      } catch (error) {
        if (!(error instanceof AssistantChanged)) throw error;
        releaseLocal(took);
      }
    }
    // The assistant changed between its read and the insert: once from a kept record, read afresh.
    if (fresh)
      throw new Error(`assistant ${assistant.assistantId} changed while a run was being made from it; retry`);
    deps.assistants.forget(workspaceId, assistant.assistantId);
  }
}

/** Whether `deps` has what a run in a transaction of its own needs (the overloads guarantee it). */
function isCreationDeps(deps: RunWriteDeps | RunCreationDeps): deps is RunCreationDeps {
  return "sql" in deps && "systemAssistants" in deps;
}

/** {@link createRun} for a caller: authorised, in a transaction of its own, started here when it can be. */
async function createInOwnTransaction(
  deps: RunCreationDeps,
  unauthorized: RunCreation,
  threadId: string,
  { principal, awaitedUntil }: CallerCreation,
): Promise<StartedRun> {
  const { workspaceId, headers } = unauthorized;
  const creator = creatorOf(principal);
  const { target, request } = await authorizeRun(principal, unauthorized.target, unauthorized.request);
  await checkWebhook(request.webhook, deps.webhooks ?? DEFAULT_WEBHOOK_SETTINGS);
  const lookup = await assistantLookup(deps, workspaceId, request.assistantId, principal);
  const took: LocalStart = {};
  let created: Written;
  try {
    if (target.kind === "stateless") {
      const made = await createStateless(
        deps,
        { workspaceId, target, threadId, request, headers, creator, awaitedUntil },
        lookup,
        took,
      );
      if ("started" in made) return { run: made.started, startedHere: true };
      created = made.written;
    } else {
      const started = await startOnQuietThread(deps, {
        workspaceId,
        threadId,
        target,
        request,
        headers,
        creator,
        lookup,
      });
      if (started) return { run: started, startedHere: true };
      created = await pipelinedTransaction(deps.sql, async ({ tx, commitWith }) => {
        const [assistant, queue] = await Promise.all([
          findRunAssistant(tx, deps, workspaceId, lookup, request.assistantId),
          readThreadQueue(tx, workspaceId, threadId, target.auth),
        ]);
        return writeRun(
          {
            deps,
            tx,
            workspaceId,
            target,
            threadId,
            assistant,
            request,
            headers,
            creator,
            local: deps.localRuns,
            commitWith,
          },
          queue,
          took,
        );
      });
    }
  } catch (error) {
    releaseLocal(took);
    throw error;
  }
  const { slot, place } = took;
  if (slot) {
    if (created.claimed) slot.run({ run: created.run, leaseToken: slot.leaseToken, orphaned: false });
    else slot.release();
  }
  place?.enqueue({ workspaceId, threadId: created.run.threadId, runId: created.run.runId });
  return { run: asCreated(created.run), startedHere: created.claimed };
}
