import type { GraphRegistry } from "../runtime/graph-registry.js";
import type { Sql } from "../store/db.js";
import type { JobDefinition } from "./job-definition.js";
import type { Queue } from "./queue.js";
import { createStoreTtlSweepJob } from "./store-ttl-sweep-job.js";
import { createThreadTtlSweepJob } from "./thread-ttl-sweep-job.js";
import { createWorkspacePurgeJob } from "./workspace-purge-job.js";

/** Every job of the product, with its handler bound to its dependencies. */
export interface JobRegistry {
  /** Deletes a workspace marked deleted. */
  readonly workspacePurge: ReturnType<typeof createWorkspacePurgeJob>;
  /** Applies expired thread TTLs; reschedules itself. */
  readonly threadTtlSweep: ReturnType<typeof createThreadTtlSweepJob>;
  /** Deletes expired store items; reschedules itself. */
  readonly storeTtlSweep: ReturnType<typeof createStoreTtlSweepJob>;
}

/** Builds the registry; the one place a new job type is added. */
export function createJobRegistry(deps: {
  sql: Sql;
  /** The graphs file's settings: the TTL sweeps' intervals come from `store.ttl` and `checkpointer.ttl`. */
  settings: GraphRegistry["settings"];
  /** The queue the jobs are registered with, for jobs that schedule their successor (built after). */
  queue: () => Pick<Queue, "enqueue">;
}): JobRegistry {
  return {
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
  };
}

/** The registry as the list the queue creates queues and workers for. */
export function allJobs(registry: JobRegistry): JobDefinition[] {
  return Object.values(registry) as JobDefinition[];
}
