import { dispatchThreadQueue, type RunDispatchDeps } from "../../jobs/agent-run-dispatch.js";
import { oweWebhook, type WebhookOwing } from "../../jobs/webhook-delivery-job.js";
import { rootLifecycleEvent } from "../../runtime/protocol/protocol-session.js";
import type { RunEventBus } from "../../runtime/run-event-bus.js";
import { storedEvent } from "../../runtime/run-event-writer.js";
import {
  type CancelAction,
  type CancelOutcome,
  cancelRuns,
  deleteRun,
  findRun,
  lockThreadQueue,
  threadsOfRuns,
} from "../../store/agents/agent-run-store.js";
import { settleThreadStatus } from "../../store/agents/agent-run-thread-store.js";
import {
  appendRunEvents,
  END_EVENT,
  endEventData,
  expireRunEvents,
} from "../../store/agents/run-event-store.js";
import { findThreads } from "../../store/agents/thread-store.js";
import type { Queryable } from "../../store/db.js";

/** The cancel reason of a run a cancel request stopped (Run.cancel_reason). */
export const CANCELLED = "cancelled";

/** The cancel reason of a run stopped by a cancel with reason `taken` (its input absorbed for steering). */
export function takenReason(at: Date): string {
  return `taken:${at.toISOString()}`;
}

/** What cancelling needs. */
export interface RunCancelDeps {
  bus: RunEventBus;
  dispatch: RunDispatchDeps;
  /** Seconds a run's events are kept after it ends. */
  streamTtlSeconds: number;
  /** Webhook delivery: a pending run the cancel ends owes its webhook; absent owes none. */
  webhooks?: Omit<WebhookOwing, "queue">;
}

/** Owes the webhook of a pending run a cancel ended: the run never started; the thread's values. */
async function oweCancelledWebhook(
  tx: Queryable,
  deps: RunCancelDeps,
  workspaceId: string,
  outcome: CancelOutcome,
): Promise<void> {
  if (!deps.webhooks) return;
  const run = await findRun(tx, workspaceId, outcome.runId);
  if (!run) return;
  const [thread] = await findThreads(tx, [{ workspaceId, threadId: outcome.threadId }]);
  await oweWebhook(tx, { ...deps.webhooks, queue: deps.dispatch.queue }, run, {
    status: run.status,
    times: { startedAt: null, endedAt: run.updatedAt, updatedAt: run.updatedAt },
    values: thread?.values ?? null,
    error: undefined,
  });
}

/**
 * Cancels runs inside `tx`. A pending run ends at once (`interrupted`, owing its webhook; a
 * rollback deletes it) and its stream ends; a running run is asked to stop through NOTIFY (and the
 * flag its worker reads at every heartbeat), and its worker ends it. Threads left without active
 * runs go idle, and the next queued run of each thread is dispatched. Returns the runs that were
 * pending or running.
 */
export async function cancelRunsInTx(
  tx: Queryable,
  deps: RunCancelDeps,
  workspaceId: string,
  runIds: readonly string[],
  action: CancelAction,
  reason: string = CANCELLED,
): Promise<CancelOutcome[]> {
  if (runIds.length === 0) return [];
  // Thread queues first, in one order, as workers take them: a cancel racing a run's end waits
  // for it instead of deadlocking with it.
  for (const threadId of (await threadsOfRuns(tx, workspaceId, runIds)).sort())
    await lockThreadQueue(tx, workspaceId, threadId);
  const outcomes = await cancelRuns(tx, workspaceId, runIds, action, reason);
  const threads = new Set<string>();
  for (const outcome of outcomes) {
    if (outcome.previous === "running") {
      await deps.bus.notifyCancel(tx, outcome.runId, action);
      continue;
    }
    threads.add(outcome.threadId);
    // A protocol run's stream ends with the root's lifecycle, as when its worker ends it.
    const ended = outcome.protocol ? [storedEvent(rootLifecycleEvent("interrupted", outcome.graphId))] : [];
    await appendRunEvents(tx, { workspaceId, runId: outcome.runId, threadId: outcome.threadId }, [
      ...ended,
      {
        ms: Date.now(),
        event: END_EVENT,
        data: endEventData(action === "rollback" ? "rollback" : "interrupted"),
      },
    ]);
    await expireRunEvents(tx, outcome.runId, deps.streamTtlSeconds);
    if (action === "rollback") await deleteRun(tx, workspaceId, outcome.runId);
    else if (outcome.webhook !== null && deps.webhooks)
      await oweCancelledWebhook(tx, deps, workspaceId, outcome);
  }
  for (const threadId of threads) {
    await settleThreadStatus(tx, workspaceId, threadId);
    await dispatchThreadQueue(tx, deps.dispatch, workspaceId, threadId);
  }
  return outcomes;
}
