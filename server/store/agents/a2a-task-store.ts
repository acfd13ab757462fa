import type { Queryable } from "../db.js";

/**
 * An A2A task is a run, and the runs that answered it when it asked for input: each such run carries
 * the task's id (its first run's id) in its metadata under this key.
 */
export const A2A_TASK_METADATA_KEY = "a2a_task_id";

/**
 * The id of the newest run of an A2A task on its thread: the run the task began with, or the latest
 * run that resumed it. Undefined when the thread holds neither.
 */
export async function latestRunOfTask(
  q: Queryable,
  workspaceId: string,
  threadId: string,
  taskId: string,
): Promise<string | undefined> {
  const [row] = await q<{ run_id: string }[]>`
    select run_id from agent_runs
    where workspace_id = ${workspaceId} and thread_id = ${threadId}
      and (run_id = ${taskId} or metadata ->> ${A2A_TASK_METADATA_KEY} = ${taskId})
    order by run_id desc
    limit 1`;
  return row?.run_id;
}

/** Whether the thread holds a run created after `runId` (run ids are UUIDv7: time ordered). */
export async function hasLaterRun(
  q: Queryable,
  workspaceId: string,
  threadId: string,
  runId: string,
): Promise<boolean> {
  const [row] = await q<{ later: boolean }[]>`
    select exists (
      select 1 from agent_runs
      where workspace_id = ${workspaceId} and thread_id = ${threadId} and run_id > ${runId}
    ) as later`;
  return row?.later ?? false;
}

/** Which of an assistant's task runs {@link listTaskRuns} keeps. */
export interface TaskRunFilter {
  /** Only this context's (thread's). */
  threadId?: string | undefined;
  /** Only runs with one of these statuses; every status when undefined. */
  statuses?: readonly string[] | undefined;
}

/**
 * One page of the runs that begin an assistant's A2A tasks (runs that answered a task's question
 * carry its id and are left out), newest first, and how many match in all.
 */
export async function listTaskRuns(
  q: Queryable,
  workspaceId: string,
  assistantId: string,
  filter: TaskRunFilter,
  page: { offset: number; limit: number },
): Promise<{ runIds: string[]; total: number }> {
  const where = q`
    workspace_id = ${workspaceId} and assistant_id = ${assistantId}
    and not (metadata ? ${A2A_TASK_METADATA_KEY})
    ${filter.threadId === undefined ? q`` : q`and thread_id = ${filter.threadId}`}
    ${filter.statuses === undefined ? q`` : q`and status = any(${filter.statuses as string[]})`}`;
  const [rows, [count]] = await Promise.all([
    q<{ run_id: string }[]>`
      select run_id from agent_runs where ${where}
      order by run_id desc offset ${page.offset} limit ${page.limit}`,
    q<{ total: number }[]>`select count(*)::int as total from agent_runs where ${where}`,
  ]);
  return { runIds: rows.map((r) => r.run_id), total: count?.total ?? 0 };
}
