/**
 * How an attempt settles its run: ends it, rolls it back, or hands it back to the queue.
 *
 * Invariants:
 * - every write is conditional on the attempt's lease (token, and the run still `running`): an
 *   attempt whose run was taken over writes nothing, so two attempts never both end a run;
 * - the thread's queue is locked (lockThreadQueue, or by the end's own statement) before the run's
 *   row changes, and the next run of the thread is dispatched in the same transaction as the end:
 *   a run that ends always starts the next one, and creations on the thread see it either running
 *   or ended;
 * - a run's end event is written by the statement that ends it (run-end-store.ts), after every
 *   event of the attempt: the end waits for the attempt's write in flight before its transaction
 *   opens (a transaction holding a connection while the events wait for one could starve the
 *   pool), and stores the events not written yet itself, before the end event;
 * - the end event is handed to the run's streams in this process only once the end has committed.
 */
import type { RunSettings } from "../config.js";
import { protocolEndEvent, rootLifecycleEvent } from "../runtime/protocol/protocol-session.js";
import type { RunEventBus, StoredBatch } from "../runtime/run-event-bus.js";
import { storedEvent } from "../runtime/run-event-writer.js";
import type { ThreadStateAfterRun } from "../runtime/run-thread-state.js";
import type { ResumeRefusal } from "../runtime/strict-resume.js";
import {
  type AgentRunRecord,
  deleteRun,
  finishRun,
  lockThreadQueue,
  type RunStatus,
  releaseRun,
} from "../store/agents/agent-run-store.js";
import { deleteRunCheckpoints, saveThreadAfterRun } from "../store/agents/agent-run-thread-store.js";
import { deleteThreadCheckpoints } from "../store/agents/checkpoint-thread-store.js";
import {
  endRunWithThread,
  isRunEndNeedsMore,
  type RunEndWritten,
  type ThreadAfterEnd,
} from "../store/agents/run-end-store.js";
import {
  appendRunEvents,
  END_EVENT,
  endEventData,
  expireRunEvents,
  type NewRunEvent,
  RUN_EVENTS_CHANNEL,
} from "../store/agents/run-event-store.js";
import { pipelinedTransaction } from "../store/batching/pipelined-transaction.js";
import { type Queryable, type Sql, storedCipherOf } from "../store/db.js";
import type { JsonValue } from "../store/json-value.js";
import { dispatchRun, dispatchThreadQueue, type RunDispatchDeps } from "./agent-run-dispatch.js";
import type { RunFailure } from "./run-outcome.js";
import { oweWebhook, type WebhookOwing } from "./webhook-delivery-job.js";

/** What settling needs. */
export interface SettlementDeps {
  sql: Sql;
  settings: Pick<RunSettings, "streamTtlSeconds">;
  bus: () => RunEventBus;
  dispatch: RunDispatchDeps;
  /** Webhook delivery: a run with a `webhook` that ends owes a call, sent with its end. */
  webhooks?: Omit<WebhookOwing, "queue">;
}

/** The attempt being settled: its run and its lease. */
export interface SettledAttempt {
  run: AgentRunRecord;
  leaseToken: string;
}

/** How an attempt ends its run. */
export interface RunEnding {
  status: RunStatus;
  /** Its output; null or undefined takes the thread's values (the run produced none of its own). */
  output: JsonValue | undefined;
  failure: RunFailure | undefined;
  /** The thread's state after the run (none for a temporary thread, or when the graph never loaded). */
  state: ThreadStateAfterRun | undefined;
  /** A refused strict resume (the run fails, its thread stays as it was: no error on it). */
  refusal?: ResumeRefusal | undefined;
}

/** The attempt's events, as its end needs them. */
export interface AttemptEvents {
  /**
   * Waits for the write in flight, then takes the events not written yet: the end stores them,
   * before its end event, in its own statement. Rejects when an earlier write failed.
   */
  takeUnwritten(): Promise<NewRunEvent[]>;
  /** The seq of the last event written so far; undefined before the first write. */
  lastSeq(): number | undefined;
}

/** What an end committed: the run as ended, and whether it is kept (its thread still exists). */
export interface EndedRun {
  run: AgentRunRecord;
  kept: boolean;
}

/** Whether the run is one of the thread-centric streaming protocol (its stream ends with a lifecycle event). */
function isProtocolRun(run: AgentRunRecord): boolean {
  return run.kwargs.protocol === true;
}

/** Whether the run owes a webhook call when it ends (written in the end's transaction). */
function owesWebhook(deps: SettlementDeps, run: AgentRunRecord): boolean {
  return deps.webhooks !== undefined && typeof run.kwargs.webhook === "string";
}

/**
 * Ends the run, when the attempt still holds it: its status, output, last events and end event,
 * the webhook it owes, the thread's state (a temporary thread is deleted), the thread's next run.
 * One statement, its own transaction (the end statement of run-end-store.ts, which locks the
 * thread's queue itself), when the end has nothing more to do; otherwise a transaction of two
 * round trips: the same statement, then what it found to do (dispatch the next run, owe the
 * webhook) with COMMIT. Resolves with the run as ended, or undefined when the attempt no longer
 * held it.
 */
export async function endAttempt(
  deps: SettlementDeps,
  { run, leaseToken }: SettledAttempt,
  ending: RunEnding,
  events: AttemptEvents,
): Promise<EndedRun | undefined> {
  const { state } = ending;
  const output = ending.output ?? state?.values ?? {};
  const { refusal } = ending;
  // A protocol run's stream ends with the root's lifecycle, stored by the end statement after the
  // attempt's last events (and encrypted as they are) and handed over with them as plain JSON.
  const final = isProtocolRun(run)
    ? [
        storedEvent(
          protocolEndEvent(
            {
              status: ending.status,
              ...(ending.failure ? { error: ending.failure.message } : {}),
              ...(refusal ? { refusal } : {}),
              waitingForInput: Object.keys(state?.interrupts ?? {}).length > 0,
            },
            run.graphId,
          ),
        ),
      ]
    : [];
  const unwritten = [...(await events.takeUnwritten()), ...final];
  const thread: ThreadAfterEnd = run.temporary
    ? { kind: "delete" }
    : {
        kind: "save",
        state: state ? { values: state.values, interrupts: state.interrupts } : undefined,
        status:
          ending.status === "error" && !refusal
            ? "error"
            : ending.status === "interrupted" || !state?.stopped
              ? "idle"
              : "interrupted",
        error: refusal ? null : (ending.failure ?? null),
      };
  const endData = endEventData(
    ending.status === "success" || ending.status === "error" || ending.status === "timeout"
      ? ending.status
      : "interrupted",
  );
  // The end's NOTIFY may arrive before the commit's answer: the run's streams here (and the
  // thread's watchers) wait for its hand-off rather than read Postgres for it.
  const handOver = deps.bus().writing(run.runId, run.threadId);
  let stored: StoredBatch | undefined;
  let ended: { written: RunEndWritten; kept: boolean } | undefined;
  const end = (q: Queryable, alone: boolean) =>
    endRunWithThread(q, {
      workspaceId: run.workspaceId,
      runId: run.runId,
      threadId: run.threadId,
      leaseToken,
      status: ending.status,
      output,
      eventTtlSeconds: deps.settings.streamTtlSeconds,
      events: unwritten,
      endEvent: END_EVENT,
      endData,
      channel: RUN_EVENTS_CHANNEL,
      thread,
      cipher: storedCipherOf(deps.sql),
      alone,
    });
  /**
   * The end. `alone`: the end statement is its own transaction (one statement, one round trip),
   * which fails instead when it finds more to do; otherwise a transaction whose COMMIT goes with
   * the follow-ups the end found (the webhook owed, the next run's dispatch, a deleted thread's
   * cleanup).
   */
  const write = async (alone: boolean) => {
    if (alone) {
      const written = await end(deps.sql, true);
      return written && { written, kept: true };
    }
    return pipelinedTransaction(deps.sql, async ({ tx, commitWith }) => {
      const written = await end(tx, false);
      if (!written) return undefined;
      // The thread was deleted while the run ran: what the run wrote after that goes too.
      const gone = !written.threadSaved && !written.threadDeleted;
      const follow: Promise<unknown>[] = [];
      if (owesWebhook(deps, run) && deps.webhooks)
        follow.push(
          oweWebhook(tx, { ...deps.webhooks, queue: deps.dispatch.queue }, run, {
            status: ending.status,
            times: written,
            values: state?.values ?? (ending.failure ? null : output),
            error: ending.failure?.message,
          }),
        );
      if (gone) {
        follow.push(deleteRun(tx, run.workspaceId, run.runId));
        follow.push(deleteThreadCheckpoints(tx, run.workspaceId, [run.threadId]));
      } else if (written.next) {
        const wait = (written.next.notBefore.getTime() - Date.now()) / 1000;
        follow.push(
          dispatchRun(
            tx,
            deps.dispatch,
            { workspaceId: run.workspaceId, threadId: run.threadId, runId: written.next.runId },
            wait,
          ),
        );
      }
      if (follow.length > 0) await commitWith(Promise.all(follow));
      return { written, kept: !gone };
    });
  };
  try {
    // Most ends have nothing more to do: a webhook owed is known before; the rest the end finds.
    const alone = !owesWebhook(deps, run);
    try {
      ended = await write(alone);
    } catch (error) {
      if (!alone || !isRunEndNeedsMore(error)) throw error;
      ended = await write(false);
    }
    if (ended) stored = { previousSeq: events.lastSeq(), rows: ended.written.events };
  } finally {
    // Nothing to hand over when the end did not commit: the streams read Postgres if need be.
    // A kept run goes to its waiters here as ended, without a read.
    handOver(stored, ended?.kept ? endedRecord(run, ending.status, output, ended.written) : undefined);
  }
  if (!ended) return undefined;
  return { run: endedRecord(run, ending.status, output, ended.written), kept: ended.kept };
}

/** The run as its end wrote it. */
function endedRecord(
  run: AgentRunRecord,
  status: RunStatus,
  output: JsonValue,
  written: RunEndWritten,
): AgentRunRecord {
  return { ...run, status, output, cancelAction: null, updatedAt: written.updatedAt };
}

/**
 * A rollback: the run, its checkpoints and (after their TTL) its events go, when the attempt still
 * holds it; then the thread's state is recorded as `readState` reads it, and its next run starts.
 * True when this attempt ended the run.
 */
export async function rollBackAttempt(
  deps: SettlementDeps,
  { run, leaseToken }: SettledAttempt,
  readState: () => Promise<ThreadStateAfterRun | undefined>,
): Promise<boolean> {
  let ended = false;
  await deps.sql.begin(async (tx) => {
    await lockThreadQueue(tx, run.workspaceId, run.threadId);
    ended = await finishRun(tx, run.runId, leaseToken, { status: "interrupted", output: {} });
    if (!ended) return;
    await deleteRunCheckpoints(tx, run.workspaceId, run.threadId, run.runId);
    await deleteRun(tx, run.workspaceId, run.runId);
    await appendRunEvents(tx, run, [
      ...(isProtocolRun(run) ? [storedEvent(rootLifecycleEvent("interrupted", run.graphId))] : []),
      { ms: Date.now(), event: END_EVENT, data: endEventData("rollback") },
    ]);
    await expireRunEvents(tx, run.runId, deps.settings.streamTtlSeconds);
  });
  const state = await readState();
  await deps.sql.begin(async (tx) => {
    await lockThreadQueue(tx, run.workspaceId, run.threadId);
    await saveThreadAfterRun(tx, run.workspaceId, run.threadId, {
      ...(state ? { state: { values: state.values, interrupts: state.interrupts } } : {}),
      status: state?.stopped ? "interrupted" : "idle",
      error: null,
    });
    await dispatchThreadQueue(tx, deps.dispatch, run.workspaceId, run.threadId);
  });
  return ended;
}

/**
 * A stopping worker gives the run back: pending again and dispatched for any worker to resume
 * (from its last checkpoint), when the attempt still holds it. True when it did.
 */
export async function handBackAttempt(
  deps: SettlementDeps,
  { run, leaseToken }: SettledAttempt,
): Promise<boolean> {
  let handed = false;
  await deps.sql.begin(async (tx) => {
    if (!(await releaseRun(tx, run.runId, leaseToken))) return;
    handed = true;
    await dispatchRun(tx, deps.dispatch, {
      workspaceId: run.workspaceId,
      threadId: run.threadId,
      runId: run.runId,
    });
  });
  return handed;
}
