import { deleteThreadCheckpoints, pruneThreadCheckpoints } from "../store/agents/checkpoint-thread-store.js";
import { deleteThreads, findExpiredThreads, renewThreadExpiry } from "../store/agents/thread-store.js";
import type { Sql } from "../store/db.js";
import { enqueueOnce } from "./enqueue-once.js";
import { defineJob, type JobDefinition } from "./job-definition.js";
import type { Queue } from "./queue.js";

/** Payload of the thread TTL sweep: none; every sweep looks at all workspaces. */
export type ThreadTtlSweepPayload = Record<string, never>;

/** Minutes between sweeps by default: the reference server's `sweep_interval_minutes` default. */
export const DEFAULT_THREAD_SWEEP_INTERVAL_MINUTES = 5;
/** Expired threads handled per batch: the reference's `sweep_limit` default; keeps each statement short. */
const SWEEP_BATCH = 1000;
/** Deduplicates scheduled sweeps: with the `short` policy at most one sweep waits in the queue. */
const SWEEP_SINGLETON_KEY = "thread-ttl-sweep";

/** Dependencies of {@link createThreadTtlSweepJob}. */
export interface ThreadTtlSweepDeps {
  sql: Sql;
  /**
   * The queue the next sweep is sent to. A getter, because the job registry is built before the
   * queue it registers with; it is only called from the handler, once the queue runs.
   */
  queue: () => Pick<Queue, "enqueue">;
  /** Minutes between sweeps; default {@link DEFAULT_THREAD_SWEEP_INTERVAL_MINUTES}. */
  intervalMinutes?: number;
}

/** What one sweep did. */
export interface ThreadSweepResult {
  /** Threads deleted with their checkpoints (strategy `delete`). */
  deleted: number;
  /** Threads whose older checkpoints were pruned (strategy `keep_latest`). */
  pruned: number;
}

/**
 * Applies the TTL of every expired thread, in batches until none is left: `delete` removes the
 * thread and its checkpoints; `keep_latest` keeps the thread and its latest state, prunes older
 * checkpoints, and pushes the expiry one period on (so what accumulates later is pruned too). Each
 * batch of one workspace and strategy is one transaction.
 */
export async function sweepExpiredThreads(sql: Sql, batch: number = SWEEP_BATCH): Promise<ThreadSweepResult> {
  const result: ThreadSweepResult = { deleted: 0, pruned: 0 };
  for (;;) {
    const expired = await findExpiredThreads(sql, batch);
    const groups = new Map<string, { workspaceId: string; strategy: string; ids: string[] }>();
    for (const t of expired) {
      const key = `${t.workspaceId}:${t.strategy}`;
      const group = groups.get(key) ?? { workspaceId: t.workspaceId, strategy: t.strategy, ids: [] };
      group.ids.push(t.threadId);
      groups.set(key, group);
    }
    for (const { workspaceId, strategy, ids } of groups.values()) {
      await sql.begin(async (tx) => {
        if (strategy === "delete") {
          await deleteThreadCheckpoints(tx, workspaceId, ids);
          result.deleted += (await deleteThreads(tx, workspaceId, ids)).length;
        } else {
          await pruneThreadCheckpoints(tx, workspaceId, ids, "keep_latest");
          await renewThreadExpiry(tx, workspaceId, ids);
          result.pruned += ids.length;
        }
      });
    }
    if (expired.length < batch) return result;
  }
}

/**
 * Schedules the next sweep `delaySeconds` from now, unless one is already waiting (pg-boss answers
 * ALREADY_EXISTS for the singleton key, which is fine). Called at start to seed the chain.
 */
export async function scheduleThreadTtlSweep(
  queue: Pick<Queue, "enqueue">,
  job: JobDefinition<ThreadTtlSweepPayload>,
  delaySeconds: number,
): Promise<void> {
  await enqueueOnce(queue, job, {}, { delaySeconds, singletonKey: SWEEP_SINGLETON_KEY });
}

/**
 * The periodic thread TTL sweeper. pg-boss cron schedules are not available on our db adapter, so
 * the job schedules its own successor first (the chain survives a failed sweep) and then sweeps.
 */
export function createThreadTtlSweepJob(deps: ThreadTtlSweepDeps): JobDefinition<ThreadTtlSweepPayload> {
  const intervalSeconds = (deps.intervalMinutes ?? DEFAULT_THREAD_SWEEP_INTERVAL_MINUTES) * 60;
  const job: JobDefinition<ThreadTtlSweepPayload> = defineJob<ThreadTtlSweepPayload>({
    name: "thread.ttl-sweep",
    version: 1,
    policy: "short",
    // A failed sweep is retried soon; the next scheduled sweep covers it anyway.
    retryLimit: 3,
    retryDelaySeconds: 30,
    retryBackoff: true,
    // Ten minutes covers sweeping hundreds of thousands of threads in batches.
    expireInSeconds: 10 * 60,
    async handler() {
      await scheduleThreadTtlSweep(deps.queue(), job, intervalSeconds);
      await sweepExpiredThreads(deps.sql);
    },
  });
  return job;
}
