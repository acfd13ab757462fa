import type { Clock } from "../clock.js";
import type { BulkExportSettings } from "../config.js";
import type { Logger } from "../logger.js";
import type { GraphRegistry } from "../runtime/graph-registry.js";
import type { SecretBox } from "../store/crypto/secret-box.js";
import type { Sql } from "../store/db.js";
import type { IngestService } from "../tracing/ingest-service.js";
import { type CronTickDeps, createCronJobs } from "./agent-cron-tick.js";
import type { AgentRunWorker } from "./agent-run-job.js";
import { createExportMaintenanceJob } from "./bulk-export-maintenance-job.js";
import { createExportRunJob } from "./bulk-export-run-job.js";
import type { JobDefinition } from "./job-definition.js";
import { createOtelOrphanSweepJob } from "./otel-orphan-sweep-job.js";
import type { Queue } from "./queue.js";
import { createStoreTtlSweepJob } from "./store-ttl-sweep-job.js";
import { createThreadTtlSweepJob } from "./thread-ttl-sweep-job.js";
import type { WebhookPayload } from "./webhook-delivery-job.js";
import { createWorkspacePurgeJob } from "./workspace-purge-job.js";

/** Every job of the product, with its handler bound to its dependencies. */
export interface JobRegistry {
  /** Deletes a workspace marked deleted. */
  readonly workspacePurge: ReturnType<typeof createWorkspacePurgeJob>;
  /** Applies expired thread TTLs; reschedules itself. */
  readonly threadTtlSweep: ReturnType<typeof createThreadTtlSweepJob>;
  /** Deletes expired store items; reschedules itself. */
  readonly storeTtlSweep: ReturnType<typeof createStoreTtlSweepJob>;
  /** Stores OTLP spans whose parent never came as runs of their own; reschedules itself. */
  readonly otelOrphanSweep: ReturnType<typeof createOtelOrphanSweepJob>;
  /** Exports one partition of a bulk export. */
  readonly bulkExportRun: ReturnType<typeof createExportRunJob>;
  /** Resumes orphaned export runs, times exports out, spawns scheduled exports; reschedules itself. */
  readonly bulkExportMaintenance: ReturnType<typeof createExportMaintenanceJob>;
  /** Executes one agent run. */
  readonly agentRun: AgentRunWorker["job"];
  /** Calls one ended run's webhook. */
  readonly webhookDelivery: JobDefinition<WebhookPayload>;
  /** Fires due crons; reschedules itself. */
  readonly agentCronTick: ReturnType<typeof createCronJobs>["tick"];
  /** Helps a tick fire a burst of due crons. */
  readonly agentCronFire: ReturnType<typeof createCronJobs>["fire"];
}

/** Builds the registry; the one place a new job type is added. */
export function createJobRegistry(deps: {
  sql: Sql;
  /** The graphs file's settings: the TTL sweeps' intervals come from `store.ttl` and `checkpointer.ttl`. */
  settings: GraphRegistry["settings"];
  /** The queue the jobs are registered with, for jobs that schedule their successor (built after). */
  queue: () => Pick<Queue, "enqueue">;
  /** What the bulk export jobs need: their limits, the key of destination credentials, the clock of schedules. */
  bulkExport: { settings: BulkExportSettings; secrets: SecretBox; clock: Clock; log: Logger };
  /** The agent run worker (built first: its job dispatches through the queue built after). */
  agentRuns: AgentRunWorker;
  /** The webhook job (built before the run worker, which sends it when a run ends). */
  webhookDelivery: JobDefinition<WebhookPayload>;
  /** How crons fire, and the clock that decides when. */
  crons: Omit<CronTickDeps, "sql" | "queue">;
  /** The trace ingest the orphan sweep stores spans through, and where it logs what it stored. */
  tracing: { ingest: IngestService; log: Logger };
}): JobRegistry {
  const bulkExportRun = createExportRunJob({ sql: deps.sql, queue: deps.queue, ...deps.bulkExport });
  const crons = createCronJobs({ sql: deps.sql, queue: deps.queue, ...deps.crons });
  return {
    agentRun: deps.agentRuns.job,
    webhookDelivery: deps.webhookDelivery,
    agentCronTick: crons.tick,
    agentCronFire: crons.fire,
    bulkExportRun,
    bulkExportMaintenance: createExportMaintenanceJob({
      sql: deps.sql,
      queue: deps.queue,
      runJob: () => bulkExportRun,
      settings: deps.bulkExport.settings,
      clock: deps.bulkExport.clock,
    }),
    workspacePurge: createWorkspacePurgeJob(deps.sql),
    threadTtlSweep: createThreadTtlSweepJob({
      sql: deps.sql,
      queue: deps.queue,
      intervalMinutes: deps.settings.checkpointer.ttl?.sweepIntervalMinutes,
    }),
    storeTtlSweep: createStoreTtlSweepJob({
      sql: deps.sql,
      queue: deps.queue,
      intervalMinutes: deps.settings.store.ttl?.sweepIntervalMinutes,
    }),
    otelOrphanSweep: createOtelOrphanSweepJob({ sql: deps.sql, queue: deps.queue, ...deps.tracing }),
  };
}

/** The registry as the list the queue creates queues and workers for. */
export function allJobs(registry: JobRegistry): JobDefinition[] {
  return Object.values(registry) as JobDefinition[];
}
