import type { Config } from "../config.js";
import { allJobs, type JobRegistry } from "../jobs/job-registry.js";
import { createQueue, type Queue } from "../jobs/queue.js";
import type { Logger } from "../logger.js";
import type { Sql } from "../store/db.js";
import type { AppHooks } from "./app-hooks.js";
import type { LateBound } from "./late-bound.js";
import type { ShutdownSteps } from "./shutdown-steps.js";

/**
 * Stage 3: the pg-boss queue of every job, started (working the jobs unless the role is `api`), and
 * set into the holder the jobs enqueue through. It stops after every step registered later (the run
 * drain among them) has run.
 */
export async function startQueue(inputs: {
  config: Config;
  log: Logger;
  hooks: AppHooks;
  sql: Sql;
  jobs: JobRegistry;
  holder: LateBound<Queue>;
  steps: ShutdownSteps;
}): Promise<Queue> {
  const { config, log, hooks } = inputs;
  const queue = createQueue({
    sql: inputs.sql,
    jobs: allJobs(inputs.jobs),
    runWorkers: config.role !== "api",
    ...(hooks.workerStallAfterMs === undefined ? {} : { stallAfterMs: hooks.workerStallAfterMs }),
    log: (level, message, fields) => log[level](message, fields),
  });
  inputs.holder.set(queue);
  await queue.start();
  inputs.steps.onStop("job queue", () => queue.stop({ graceMs: config.shutdownGraceMs }));
  return queue;
}
