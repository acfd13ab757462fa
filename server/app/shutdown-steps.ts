import type { Logger } from "../logger.js";

/**
 * Time shutdown may take beyond the grace: the steps after draining requests and jobs (closing the
 * pool, stopping embedded Postgres) take well under a second when Postgres answers; when it does not,
 * each step gets what is left of this and the process goes on without it.
 */
const SHUTDOWN_MARGIN_MS = 3_000;
/** What a step that starts after the shutdown deadline still gets: enough to send its signals. */
const LATE_STEP_MS = 100;

/** The process's shutdown, built up by the start-up stages as they start things. */
export interface ShutdownSteps {
  /**
   * Registers how to stop what a stage just started; steps run in reverse order of registration.
   * `extraMs`: time this step may take beyond the shared grace (running runs get the background
   * grace); only the time it really took moves the deadline of the steps after it.
   */
  onStop(step: string, run: () => Promise<void>, extraMs?: number): void;
  /** Runs every registered step, last first, bounded whatever the state of Postgres. */
  stopAll(): Promise<void>;
}

/** Empty shutdown steps sharing `graceMs` (plus a margin) among them. */
export function createShutdownSteps(graceMs: number, log: Logger): ShutdownSteps {
  const steps: { step: string; run: () => Promise<void>; extraMs: number }[] = [];
  return {
    onStop(step, run, extraMs = 0) {
      steps.push({ step, run, extraMs });
    },
    // A step that overruns is left behind, the next one runs.
    async stopAll() {
      let deadline = Date.now() + graceMs + SHUTDOWN_MARGIN_MS;
      for (const { step: name, run, extraMs } of steps.reverse()) {
        const step = run().then(
          () => true,
          (error: unknown) => {
            log.error("shutdown step failed", { step: name, error });
            return true;
          },
        );
        const budget = Math.max(deadline - Date.now(), LATE_STEP_MS) + extraMs;
        const began = Date.now();
        if (!(await Promise.race([step, delay(budget).then(() => false)])))
          log.warn("shutdown step overran the grace; going on without it", { step: name, budgetMs: budget });
        else log.debug("shutdown step done", { step: name, ms: Date.now() - began });
        deadline += Math.min(Date.now() - began, extraMs);
      }
    },
  };
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
