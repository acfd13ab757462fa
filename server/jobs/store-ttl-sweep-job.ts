import { deleteExpiredStoreItems } from "../store/agents/store-item-store.js";
import type { Sql } from "../store/db.js";
import { enqueueOnce } from "./enqueue-once.js";
import { defineJob, type JobDefinition } from "./job-definition.js";
import type { Queue } from "./queue.js";

/** Payload of the store TTL sweep: none, a sweep covers every workspace. */
export type StoreTtlSweepPayload = Record<string, never>;

/** Dependencies of {@link createStoreTtlSweepJob}. */
export interface StoreTtlSweepJobDeps {
  sql: Sql;
  /** The queue the job schedules its next run on; a getter, as the queue is built from the job list. */
  queue: () => Pick<Queue, "enqueue">;
  /** Minutes between sweeps (the graphs file's `store.ttl.sweep_interval_minutes`); default 60. */
  intervalMinutes?: number | undefined;
  /** Expired items deleted per statement; default 1000. */
  batchSize?: number | undefined;
}

/**
 * Expired items are already invisible to every read, so sweeping only gives their space back; once
 * an hour keeps that cost negligible (the LangGraph server's default interval).
 */
const DEFAULT_INTERVAL_MINUTES = 60;
/** Rows per delete: short statements that hold few locks (the LangGraph server's `sweep_limit`). */
const DEFAULT_BATCH_SIZE = 1000;
/** The one key under which at most one sweep is queued across all processes (policy `short`). */
const SINGLETON_KEY = "store.ttl-sweep";

/**
 * Deletes expired store items of every workspace in batches, and keeps itself going: each run first
 * queues the next one, `intervalMinutes` later, so a failing sweep never breaks the chain. Seed the
 * chain with {@link scheduleStoreTtlSweep} at start-up; with policy `short` and one singleton key,
 * processes starting together queue only one sweep.
 */
export function createStoreTtlSweepJob(deps: StoreTtlSweepJobDeps): JobDefinition<StoreTtlSweepPayload> {
  const { sql, queue } = deps;
  const intervalMinutes = deps.intervalMinutes ?? DEFAULT_INTERVAL_MINUTES;
  const batchSize = deps.batchSize ?? DEFAULT_BATCH_SIZE;
  if (!(Number.isFinite(intervalMinutes) && intervalMinutes > 0))
    throw new Error(`store TTL sweep interval must be a positive number of minutes, got ${intervalMinutes}`);
  if (!(Number.isInteger(batchSize) && batchSize > 0))
    throw new Error(`store TTL sweep batch size must be a positive integer, got ${batchSize}`);
  // pg-boss schedules in whole seconds.
  const intervalSeconds = Math.max(1, Math.round(intervalMinutes * 60));

  const job: JobDefinition<StoreTtlSweepPayload> = defineJob<StoreTtlSweepPayload>({
    name: "store.ttl-sweep",
    version: 1,
    policy: "short",
    // A failed sweep is retried a few times; the next scheduled one covers anything left anyway.
    retryLimit: 3,
    retryDelaySeconds: 60,
    retryBackoff: true,
    // Thirty minutes deletes millions of rows at a thousand per statement.
    expireInSeconds: 30 * 60,
    async handler(_payload, { signal }) {
      await scheduleStoreTtlSweep(queue(), job, intervalSeconds);
      while ((await deleteExpiredStoreItems(sql, batchSize)) === batchSize) {
        signal.throwIfAborted();
      }
    },
  });
  return job;
}

/**
 * Queues a sweep `delaySeconds` from now unless one is queued already (then it does nothing). Call
 * it at start-up with a delay of 0 to sweep what expired while the server was down.
 */
export async function scheduleStoreTtlSweep(
  queue: Pick<Queue, "enqueue">,
  job: JobDefinition<StoreTtlSweepPayload>,
  delaySeconds: number,
): Promise<void> {
  await enqueueOnce(queue, job, {}, { delaySeconds, singletonKey: SINGLETON_KEY });
}
