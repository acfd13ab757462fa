import type { RunSettings } from "../config.js";
import { scheduleCronTick } from "../jobs/agent-cron-tick.js";
import type { AgentRunWorker } from "../jobs/agent-run-job.js";
import { startRunMaintenance } from "../jobs/agent-run-maintenance.js";
import { scheduleExportMaintenance } from "../jobs/bulk-export-maintenance-job.js";
import type { JobRegistry } from "../jobs/job-registry.js";
import { scheduleOtelOrphanSweep } from "../jobs/otel-orphan-sweep-job.js";
import type { Queue } from "../jobs/queue.js";
import { scheduleStoreTtlSweep } from "../jobs/store-ttl-sweep-job.js";
import { scheduleThreadTtlSweep } from "../jobs/thread-ttl-sweep-job.js";
import type { Logger } from "../logger.js";
import type { Sql } from "../store/db.js";
import type { Jobs } from "./jobs-stage.js";
import type { ShutdownSteps } from "./shutdown-steps.js";

/**
 * Stage 4, in processes that work jobs (roles `all` and `worker`): the first run of each recurring
 * job, the run maintenance loop, and the drain of running runs at shutdown.
 */
export async function startWorkers(inputs: {
  sql: Sql;
  log: Logger;
  queue: Queue;
  jobs: JobRegistry;
  agentRuns: AgentRunWorker;
  runSettings: RunSettings;
  runTracing: Jobs["runTracing"];
  steps: ShutdownSteps;
}): Promise<void> {
  const { sql, log, queue, jobs, agentRuns, runSettings } = inputs;
  await scheduleThreadTtlSweep(queue, jobs.threadTtlSweep, 0);
  await scheduleStoreTtlSweep(queue, jobs.storeTtlSweep, 0);
  await scheduleOtelOrphanSweep(queue, jobs.otelOrphanSweep, 0);
  await scheduleExportMaintenance(queue, jobs.bulkExportMaintenance, 0);
  await scheduleCronTick(queue, jobs.agentCronTick, 0);
  const stopMaintenance = startRunMaintenance({
    sql,
    log,
    queue: () => queue,
    runJob: () => agentRuns.job,
    streamTtlSeconds: runSettings.streamTtlSeconds,
  });
  // Steps run in reverse: the drain first, then the writes it leaves, bounded by the shared grace
  // (in an outage they cannot finish, and must not hold the process for the runs' grace).
  inputs.steps.onStop("agent run traces and maintenance", async () => {
    await inputs.runTracing?.settle();
    await stopMaintenance();
  });
  // Before the queue stops: running runs get the background grace, then are handed back.
  inputs.steps.onStop(
    "agent runs",
    () => agentRuns.drain(runSettings.shutdownGraceMs),
    runSettings.shutdownGraceMs,
  );
}
