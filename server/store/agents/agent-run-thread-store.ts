import type { Queryable } from "../db.js";
import type { JsonObject, JsonValue } from "./thread-store.js";

// The thread side of runs: what a run's start, end and cancel do to its thread and checkpoints.

/** True when the workspace still has the thread. */
export async function threadExists(q: Queryable, workspaceId: string, threadId: string): Promise<boolean> {
  const rows = await q`select 1 from threads where workspace_id = ${workspaceId} and thread_id = ${threadId}`;
  return rows.length > 0;
}

/**
 * Records a thread's state after a run: its cached values and interrupts (when the run left a
 * state), its status and the run's error. The status stays busy while another run is queued.
 * False when the thread no longer exists.
 */
export async function saveThreadAfterRun(
  q: Queryable,
  workspaceId: string,
  threadId: string,
  after: {
    state?: { values: JsonValue; interrupts: JsonObject };
    status: "idle" | "interrupted" | "error";
    error: JsonValue | null;
  },
): Promise<boolean> {
  const { state } = after;
  const rows = await q`
    update threads t set
      "values" = ${state ? q`${q.json(state.values)}` : q`t."values"`},
      interrupts = ${state ? q`${q.json(state.interrupts)}` : q`t.interrupts`},
      state_updated_at = ${state ? q`now()` : q`t.state_updated_at`},
      status = case when exists (
        select 1 from agent_runs r where r.workspace_id = ${workspaceId} and r.thread_id = ${threadId}
          and r.status in ('pending', 'running')) then 'busy' else ${after.status} end,
      error = ${after.error === null ? null : q.json(after.error)},
      updated_at = now(),
      expires_at = case when ttl_minutes is null then null
        else now() + make_interval(secs => ttl_minutes * 60) end
    where workspace_id = ${workspaceId} and thread_id = ${threadId}
    returning 1`;
  return rows.length > 0;
}

/**
 * Deletes the checkpoints a run wrote (a rollback): those whose metadata names the run, with
 * their pending writes. Channel values stay: other checkpoints may share them.
 */
export async function deleteRunCheckpoints(
  q: Queryable,
  workspaceId: string,
  threadId: string,
  runId: string,
): Promise<void> {
  await q`
    with doomed as (
      delete from checkpoints
      where workspace_id = ${workspaceId} and thread_id = ${threadId} and metadata ->> 'run_id' = ${runId}
      returning checkpoint_ns, checkpoint_id
    )
    delete from checkpoint_writes w using doomed d
    where w.workspace_id = ${workspaceId} and w.thread_id = ${threadId}
      and w.checkpoint_ns = d.checkpoint_ns and w.checkpoint_id = d.checkpoint_id`;
}

/** A busy thread with no pending or running run left becomes idle. */
export async function settleThreadStatus(q: Queryable, workspaceId: string, threadId: string): Promise<void> {
  await q`
    update threads t set status = 'idle', updated_at = now()
    where t.workspace_id = ${workspaceId} and t.thread_id = ${threadId} and t.status = 'busy'
      and not exists (select 1 from agent_runs r where r.workspace_id = t.workspace_id
                      and r.thread_id = t.thread_id and r.status in ('pending', 'running'))`;
}

/** True when the thread has a checkpoint with this id in this namespace. */
export async function checkpointExists(
  q: Queryable,
  workspaceId: string,
  threadId: string,
  checkpoint: { checkpoint_ns: string; checkpoint_id: string },
): Promise<boolean> {
  const rows = await q`
    select 1 from checkpoints
    where workspace_id = ${workspaceId} and thread_id = ${threadId}
      and checkpoint_ns = ${checkpoint.checkpoint_ns} and checkpoint_id = ${checkpoint.checkpoint_id}`;
  return rows.length > 0;
}

/**
 * Deletes a stateless run's thread with its checkpoints, in one statement, unless a run is still
 * pending or running on it (a client may queue runs on it by id); true when it was deleted.
 */
export async function deleteTemporaryThread(
  q: Queryable,
  workspaceId: string,
  threadId: string,
): Promise<boolean> {
  const [row] = await q<{ deleted: boolean }[]>`
    with doomed as (
      delete from threads t
      where t.workspace_id = ${workspaceId} and t.thread_id = ${threadId}
        and not exists (select 1 from agent_runs r where r.workspace_id = t.workspace_id
                        and r.thread_id = t.thread_id and r.status in ('pending', 'running'))
      returning thread_id
    ), blobs as (
      delete from checkpoint_blobs
      where workspace_id = ${workspaceId} and thread_id = ${threadId}::text and exists (select 1 from doomed)
    ), writes as (
      delete from checkpoint_writes
      where workspace_id = ${workspaceId} and thread_id = ${threadId}::text and exists (select 1 from doomed)
    ), checkpoints as (
      delete from checkpoints
      where workspace_id = ${workspaceId} and thread_id = ${threadId}::text and exists (select 1 from doomed)
    )
    select exists (select 1 from doomed) as deleted`;
  return row?.deleted ?? false;
}
