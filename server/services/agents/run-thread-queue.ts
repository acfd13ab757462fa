/**
 * A thread's queue of runs as a run's creation reads it: locked first (lockThreadQueue, held until
 * the creation's transaction ends), then the thread and its active runs, all three sent together.
 * Postgres takes the lock before it runs the reads, so each read sees every run created on the
 * thread before the lock was granted.
 */
import {
  type AgentRunRecord,
  activeRunsOfThread,
  lockThreadQueue,
} from "../../store/agents/agent-run-store.js";
import { findThreads, findVisibleThread, type ThreadRecord } from "../../store/agents/thread-store.js";
import type { Queryable } from "../../store/db.js";
import type { AuthFilter } from "../../store/filters/auth-filter-sql.js";
import { invalid } from "../request-validation.js";
import type { RunRequest } from "./run-requests.js";

/** A thread's queue as read under its lock: the thread (undefined when missing or hidden) and its active runs. */
export interface ThreadQueue {
  thread: ThreadRecord | undefined;
  active: AgentRunRecord[];
}

/**
 * Locks the thread's queue ({@link lockThreadQueue}) and reads the thread (through custom auth's
 * filter when given) and its active runs (see the module's comment).
 */
export async function readThreadQueue(
  tx: Queryable,
  workspaceId: string,
  threadId: string,
  auth: AuthFilter | undefined,
): Promise<ThreadQueue> {
  const [, thread, active] = await Promise.all([
    lockThreadQueue(tx, workspaceId, threadId),
    auth
      ? findVisibleThread(tx, { workspaceId, threadId }, auth)
      : findThreads(tx, [{ workspaceId, threadId }]).then(([found]) => found),
    activeRunsOfThread(tx, workspaceId, threadId),
  ]);
  return { thread, active };
}

/** InvalidArgument when the request's checkpoint names another thread than the run's. */
export function checkCheckpointThread(request: RunRequest, threadId: string): void {
  if (request.checkpoint?.thread_id !== undefined && request.checkpoint.thread_id.toLowerCase() !== threadId)
    throw invalid(
      `checkpoint.thread_id ${request.checkpoint.thread_id} is another thread's: the run is on ${threadId}`,
    );
}
