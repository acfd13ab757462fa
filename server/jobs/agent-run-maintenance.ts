import type { Logger } from "../logger.js";
import { dueQueueHeads, releaseLapsedRuns, sweepTemporaryRuns } from "../store/agents/agent-run-store.js";
import { sweepRunEvents } from "../store/agents/run-event-store.js";
import type { Sql } from "../store/db.js";
import { dispatchRun, type RunDispatchDeps } from "./agent-run-dispatch.js";

/**
 * Seconds between maintenance passes: with the 15 s lease, a dead worker's run is taken over
 * within 20 s (the issue allows 30 s); a pass is three indexed statements, cheap at this rate.
 */
export const RUN_MAINTENANCE_INTERVAL_MS = 5_000;
/** Rows one pass handles per kind; the next pass takes the rest. */
const BATCH = 200;
/**
 * A pending run that heads its queue and has waited this long without starting may have lost its
 * job (a stopping worker left it, or its process died holding it before claiming): dispatch it
 * again. Long enough that runs merely waiting for a busy worker's slot are rarely dispatched twice
 * (a second job is harmless: its claim finds the run taken).
 */
const STALE_PENDING_SECONDS = 15;
/** Expired stream events deleted per pass. */
const SWEEP_BATCH = 5_000;

/**
 * The safety net of run execution, run by every worker process: puts runs whose lease lapsed
 * (their worker died) back in the queue, dispatches pending runs nobody dispatched, and deletes
 * stream events past their TTL and the ended stateless runs kept as long for wait and join. Returns the function that stops it.
 */
export function startRunMaintenance(
  deps: RunDispatchDeps & { sql: Sql; log: Logger; streamTtlSeconds: number },
): () => Promise<void> {
  const { sql, log } = deps;
  let pass: Promise<void> | undefined;
  const run = async (): Promise<void> => {
    for (const lapsed of await releaseLapsedRuns(sql, BATCH)) {
      log.warn("run lease lapsed: its worker stopped; another worker resumes it", {
        runId: lapsed.runId,
        attempt: lapsed.attempt,
      });
      await dispatchRun(sql, deps, lapsed);
    }
    for (const head of await dueQueueHeads(sql, STALE_PENDING_SECONDS, BATCH))
      await dispatchRun(sql, deps, head);
    await sweepRunEvents(sql, SWEEP_BATCH);
    await sweepTemporaryRuns(sql, deps.streamTtlSeconds, SWEEP_BATCH);
  };
  const timer = setInterval(() => {
    if (pass) return;
    pass = run()
      .catch((error: unknown) => log.warn("run maintenance pass failed", { error }))
      .finally(() => {
        pass = undefined;
      });
  }, RUN_MAINTENANCE_INTERVAL_MS);
  return async () => {
    clearInterval(timer);
    await pass;
  };
}
