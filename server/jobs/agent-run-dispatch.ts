import { headOfThreadQueue } from "../store/agents/agent-run-store.js";
import type { Queryable } from "../store/db.js";
import type { JobDefinition } from "./job-definition.js";
import type { Queue } from "./queue.js";

/** The payload of a run's job: which run to try to start. */
export interface AgentRunPayload {
  workspaceId: string;
  threadId: string;
  runId: string;
}

/** What dispatching needs: the queue and the run job (both built after their users). */
export interface RunDispatchDeps {
  queue: () => Pick<Queue, "enqueue">;
  runJob: () => JobDefinition<AgentRunPayload>;
}

/**
 * Queues a job that tries to start `run`, inside `q`'s transaction when it is one, so the job exists
 * only if the change that made the run startable commits. A job for a run that cannot start yet is
 * harmless: its worker leaves it, and whoever ends the run before it dispatches it again.
 */
export async function dispatchRun(
  q: Queryable,
  deps: RunDispatchDeps,
  run: AgentRunPayload,
  startAfterSeconds = 0,
): Promise<void> {
  await deps.queue().enqueue(deps.runJob(), run, {
    tx: q,
    ...(startAfterSeconds > 0 ? { startAfterSeconds: Math.ceil(startAfterSeconds) } : {}),
  });
}

/** Dispatches the run that may start next on a thread, if there is one. */
export async function dispatchThreadQueue(
  q: Queryable,
  deps: RunDispatchDeps,
  workspaceId: string,
  threadId: string,
): Promise<void> {
  const head = await headOfThreadQueue(q, workspaceId, threadId);
  if (!head) return;
  const wait = (head.notBefore.getTime() - Date.now()) / 1000;
  await dispatchRun(q, deps, { workspaceId, threadId, runId: head.runId }, wait);
}
