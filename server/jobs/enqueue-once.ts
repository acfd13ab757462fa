import { Code, ConnectError } from "@connectrpc/connect";
import type { JobDefinition } from "./job-definition.js";
import type { Queue } from "./queue.js";

/**
 * Queues `job` `delaySeconds` from now under `singletonKey`, unless one with that key is already
 * queued (then it does nothing). Self-rescheduling sweepers use it, with the `short` policy, so that
 * processes starting together and a sweep queueing its successor never stack up duplicates.
 */
export async function enqueueOnce<P extends object>(
  queue: Pick<Queue, "enqueue">,
  job: JobDefinition<P>,
  payload: P,
  options: { delaySeconds: number; singletonKey: string },
): Promise<void> {
  try {
    await queue.enqueue(job, payload, {
      startAfterSeconds: options.delaySeconds,
      singletonKey: options.singletonKey,
    });
  } catch (error) {
    if (error instanceof ConnectError && error.code === Code.AlreadyExists) return;
    throw error;
  }
}
