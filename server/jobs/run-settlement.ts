/**
 * How an attempt settles its run: ends it, rolls it back, or hands it back to the queue.
 *
 * Invariants:
 * - every write is conditional on the attempt's lease (token, and the run still `running`): an
 *   attempt whose run was taken over writes nothing, so two attempts never both end a run;
 * - the thread's queue is locked (lockThreadQueue) before the run's row changes, and the next run
 *   of the thread is dispatched in the same transaction as the end: a run that ends always starts
 *   the next one, and creations on the thread see it either running or ended;
 * - a run's end event is written by the statement that ends it (endRun), after every event of the
 *   attempt: the end waits for the attempt's events to be written before its transaction opens (a
 *   transaction holding a connection while the events wait for one could starve the pool);
 * - the end event is handed to the run's streams in this process only once the end has committed.
 */
import type { RunSettings } from "../config.js";
import type { RunEventBus, StoredBatch } from "../runtime/run-event-bus.js";
import type { ThreadStateAfterRun } from "../runtime/run-thread-state.js";
import {
  type AgentRunRecord,
  deleteRun,
  endRun,
  finishRun,
  lockThreadQueue,
  type RunEnd,
  type RunStatus,
  releaseRun,
} from "../store/agent-run-store.js";
import {
  deleteRunCheckpoints,
  deleteTemporaryThread,
  saveThreadAfterRun,
} from "../store/agent-run-thread-store.js";
import { deleteThreadCheckpoints } from "../store/checkpoint-thread-store.js";
import type { Sql } from "../store/db.js";
import { appendRunEvents, END_EVENT, expireRunEvents, RUN_EVENTS_CHANNEL } from "../store/run-event-store.js";
import type { JsonValue } from "../store/thread-store.js";
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
}

/** The attempt's events: resolves once all are written; the seq of the last one written. */
export interface AttemptEvents {
  flushed: Promise<void>;
  lastSeq(): number | undefined;
}

/** What an end committed: the run as ended, and whether it is kept (its thread still exists). */
export interface EndedRun {
  run: AgentRunRecord;
  kept: boolean;
}

/**
 * Ends the run, when the attempt still holds it: its status, output and end event, the webhook it
 * owes, the thread's state, the thread's next run. A temporary thread is deleted with it. Resolves
 * with the run as ended, or undefined when the attempt no longer held it.
 */
export async function endAttempt(
  deps: SettlementDeps,
  { run, leaseToken }: SettledAttempt,
  ending: RunEnding,
  events: AttemptEvents,
): Promise<EndedRun | undefined> {
  const { state } = ending;
  const output = ending.output ?? state?.values ?? {};
  let ended: RunEnd | undefined;
  let kept = false;
  await events.flushed;
  // The end event's NOTIFY may arrive before the commit's answer: the run's streams here wait
  // for its hand-off rather than read Postgres for it.
  const handOver = deps.bus().writing(run.runId);
  const committed = deps.sql.begin(async (tx) => {
    // The lock and the end in one round trip: Postgres takes the lock before it runs the update.
    // A temporary thread's deletion goes with them: it only happens when no run is pending or
    // running on the thread, so when this attempt did not end the run it deletes nothing the
    // run's actual end would not.
    const [, times, deleted] = await Promise.all([
      lockThreadQueue(tx, run.workspaceId, run.threadId),
      endRun(tx, run.runId, leaseToken, {
        status: ending.status,
        output,
        eventTtlSeconds: deps.settings.streamTtlSeconds,
        endEvent: END_EVENT,
        channel: RUN_EVENTS_CHANNEL,
      }),
      run.temporary ? deleteTemporaryThread(tx, run.workspaceId, run.threadId) : false,
    ]);
    ended = times;
    if (!times) return;
    kept = true;
    if (deps.webhooks)
      await oweWebhook(tx, { ...deps.webhooks, queue: deps.dispatch.queue }, run, {
        status: ending.status,
        times,
        values: state?.values ?? (ending.failure ? null : output),
        error: ending.failure?.message,
      });
    if (deleted) return;
    const threadStatus =
      ending.status === "error"
        ? "error"
        : ending.status === "interrupted" || !state?.stopped
          ? "idle"
          : "interrupted";
    const saved = await saveThreadAfterRun(tx, run.workspaceId, run.threadId, {
      ...(state ? { state: { values: state.values, interrupts: state.interrupts } } : {}),
      status: threadStatus,
      error: ending.failure ?? null,
    });
    if (!saved) {
      // The thread was deleted while the run ran: what the run wrote after that goes too.
      kept = false;
      await deleteRun(tx, run.workspaceId, run.runId);
      await deleteThreadCheckpoints(tx, run.workspaceId, [run.threadId]);
      return;
    }
    await dispatchThreadQueue(tx, deps.dispatch, run.workspaceId, run.threadId);
  });
  let stored: StoredBatch | undefined;
  try {
    await committed;
    const end = ended?.endEvent;
    if (end)
      stored = {
        previousSeq: events.lastSeq(),
        rows: [{ seq: end.seq, runId: run.runId, ms: end.ms, event: END_EVENT, data: "null" }],
      };
  } finally {
    // Nothing to hand over when the end did not commit: the streams read Postgres if need be.
    handOver(stored);
  }
  if (!ended) return undefined;
  const record: AgentRunRecord = {
    ...run,
    status: ending.status,
    output,
    cancelAction: null,
    updatedAt: ended.updatedAt,
  };
  return { run: record, kept };
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
    await appendRunEvents(tx, run, [{ ms: Date.now(), event: END_EVENT, data: "null" }]);
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
