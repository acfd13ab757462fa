/** How the worker loops of one queue are doing in this process. */
export interface WorkerLoopStatus {
  /** The queue (job name). */
  readonly queue: string;
  /** Milliseconds since its loops last made progress (a fetch or a batch ended); undefined before any. */
  readonly idleMs: number | undefined;
  /** Batches its loops are running now. */
  readonly batches: number;
  /** Whether its loops are alive: running a batch, or progressing within the stall limit. */
  readonly alive: boolean;
}

/**
 * Tracks the progress of pg-boss worker loops. A loop fetches, runs what it fetched (pg-boss bounds
 * a batch by its jobs' expiry), sleeps at most the poll interval, and fetches again; a loop that has
 * neither fetched nor finished a batch for longer than the stall limit is stuck: typically its fetch
 * waits for a pool connection that never frees up, or for a lock, while Postgres itself still
 * answers the health check's fresh connection.
 */
export interface WorkerLiveness {
  /** A loop of `queue` started: the stall limit counts from now until its first fetch. */
  started(queue: string): void;
  /** A fetch of `queue` returned (with or without jobs, or failed: pg-boss logs and goes on). */
  fetched(queue: string): void;
  /** A batch of `queue` starts running. */
  batchStarted(queue: string): void;
  /** A batch of `queue` ended, however it ended. */
  batchEnded(queue: string): void;
  /** Every started queue's status, by queue name. */
  status(): WorkerLoopStatus[];
}

/** Creates a {@link WorkerLiveness} whose loops count as stuck after `stallAfterMs` without progress. */
export function createWorkerLiveness(stallAfterMs: number): WorkerLiveness {
  const loops = new Map<string, { progressAt: number | undefined; startedAt: number; batches: number }>();
  const progress = (queue: string): void => {
    const loop = loops.get(queue);
    if (loop) loop.progressAt = performance.now();
  };
  return {
    started(queue) {
      if (!loops.has(queue))
        loops.set(queue, { progressAt: undefined, startedAt: performance.now(), batches: 0 });
    },
    fetched: progress,
    batchStarted(queue) {
      const loop = loops.get(queue);
      if (loop) loop.batches += 1;
    },
    batchEnded(queue) {
      const loop = loops.get(queue);
      if (!loop) return;
      loop.batches -= 1;
      progress(queue);
    },
    status() {
      const now = performance.now();
      return [...loops].map(([queue, loop]) => {
        const idleMs = loop.progressAt === undefined ? undefined : now - loop.progressAt;
        const quietMs = now - (loop.progressAt ?? loop.startedAt);
        return { queue, idleMs, batches: loop.batches, alive: loop.batches > 0 || quietMs <= stallAfterMs };
      });
    },
  };
}
