/**
 * The end of a run, in one statement: the run's final status and output, the events of its
 * attempt not written yet followed by its end event (announced on the events channel), the start
 * of its events' TTL, its thread's state (or, for a temporary thread, the thread's deletion), and
 * the thread's next run, which the caller dispatches in the same transaction.
 *
 * Call it with the thread's queue locked (lockThreadQueue, in an earlier statement of the same
 * transaction, so this statement's snapshot sees every run created on the thread before it). Every
 * part of the statement sees the tables as they were before it, so the run being ended still reads
 * as running there: the thread's other runs are the ones with another id.
 */

import type { StoredDataCipher } from "../crypto/stored-data-cipher.js";
import { pgErrorCode, type Queryable } from "../db.js";
import type { RunStatus } from "./agent-run-store.js";
import type { NewRunEvent, RunEventRecord } from "./run-event-store.js";
import type { JsonObject, JsonValue } from "./thread-store.js";

/** What becomes of the run's thread. */
export type ThreadAfterEnd =
  /** A stateless run's temporary thread: deleted with its checkpoints, unless another run is active on it. */
  | { kind: "delete" }
  /** A thread that stays: its cached state (when the run left one), status and error. */
  | {
      kind: "save";
      state: { values: JsonValue; interrupts: JsonObject } | undefined;
      status: "idle" | "interrupted" | "error";
      error: JsonValue | null;
    };

/** A run's end, as {@link endRunWithThread} writes it. */
export interface RunEndWrite {
  workspaceId: string;
  runId: string;
  threadId: string;
  leaseToken: string;
  status: RunStatus;
  output: JsonValue;
  eventTtlSeconds: number;
  /** Events of the attempt not written yet: stored, in order, before the end event. */
  events: readonly NewRunEvent[];
  /** The end event's name (store/agents/run-event-store.ts END_EVENT). */
  endEvent: string;
  /** The end event's data (the run's status, store/agents/run-event-store.ts endEventData). */
  endData: string;
  /** The events channel (store/agents/run-event-store.ts RUN_EVENTS_CHANNEL). */
  channel: string;
  thread: ThreadAfterEnd;
  /** Encryption at rest of the pool: the events' data is sealed with it (a transaction has none). */
  cipher: StoredDataCipher | undefined;
  /**
   * The statement goes out with COMMIT right behind it: when the end finds more to do in its
   * transaction (a next run to dispatch, its thread gone), the statement fails with
   * an error {@link isRunEndNeedsMore} recognises instead, and nothing is written.
   */
  alone: boolean;
}

/** SQLSTATE of an end sent `alone` that found more to do (migration 0032). */
const NEEDS_MORE_SQLSTATE = "AP001";

/** Whether `error` is the failure of an end sent `alone` that found more to do in its transaction. */
export function isRunEndNeedsMore(error: unknown): boolean {
  return pgErrorCode(error) === NEEDS_MORE_SQLSTATE;
}

/** What {@link endRunWithThread} wrote. */
export interface RunEndWritten {
  startedAt: Date | null;
  endedAt: Date;
  updatedAt: Date;
  /** The events stored (the attempt's last ones, then the end event), with their seqs. */
  events: RunEventRecord[];
  /** Whether the thread's state was saved (false: deleted, or gone). */
  threadSaved: boolean;
  /** Whether the temporary thread was deleted. */
  threadDeleted: boolean;
  /** The thread's next pending run, which may start once this transaction commits. */
  next: { runId: string; notBefore: Date } | undefined;
}

interface EndRow {
  started_at: Date | null;
  ended_at: Date;
  updated_at: Date;
  seqs: string[];
  saved: boolean;
  deleted: boolean;
  next_run_id: string | null;
  next_not_before: Date | null;
}

/**
 * Ends the attempt's run (see the module's comment), when the attempt still holds its lease;
 * undefined, and nothing written, when it does not.
 */
export async function endRunWithThread(q: Queryable, end: RunEndWrite): Promise<RunEndWritten | undefined> {
  const { workspaceId, runId, threadId, thread } = end;
  const ttl = end.eventTtlSeconds;
  const ms = Date.now();
  const events: NewRunEvent[] = [...end.events, { ms, event: end.endEvent, data: end.endData }];
  const data = events.map((e) =>
    end.cipher && e.event !== end.endEvent ? end.cipher.encryptJsonText(e.data) : e.data,
  );
  const temporary = thread.kind === "delete";
  const state = thread.kind === "save" ? thread.state : undefined;
  const threadStatus = thread.kind === "save" ? thread.status : "idle";
  const threadError = thread.kind === "save" ? thread.error : null;
  const [row] = await q<EndRow[]>`
    with finished as (
      update agent_runs set status = ${end.status}, output = ${q.json(end.output)}, ended_at = now(),
        updated_at = now(), lease_owner = null, lease_token = null, lease_expires_at = null
      where run_id = ${runId} and lease_token = ${end.leaseToken} and status = 'running'
      returning started_at, ended_at, updated_at
    ), expired as (
      update agent_run_events set expires_at = now() + make_interval(secs => ${ttl}::float8)
      where run_id = ${runId} and exists (select 1 from finished)
    ), added as (
      insert into agent_run_events (workspace_id, run_id, thread_id, ms, event, data, expires_at)
      select ${workspaceId}, ${runId}, ${threadId}, e.ms, e.event, e.data,
        now() + make_interval(secs => ${ttl}::float8)
      from unnest(${events.map((e) => e.ms)}::bigint[], ${events.map((e) => e.event)}::text[],
                  ${data}::text[]) with ordinality as e(ms, event, data, n)
      where exists (select 1 from finished)
      order by e.n
      returning seq
    ), notified as (
      select pg_notify(${end.channel}, ${`${runId} ${threadId} end `} || max(seq)::text) from added
      having count(*) > 0
    ), others as (
      select exists (
        select 1 from agent_runs o
        where o.workspace_id = ${workspaceId} and o.thread_id = ${threadId} and o.run_id <> ${runId}
          and o.status in ('pending', 'running')) as active
    ), saved as (
      update threads t set
        "values" = ${state ? q`${q.json(state.values)}` : q`t."values"`},
        interrupts = ${state ? q`${q.json(state.interrupts)}` : q`t.interrupts`},
        state_updated_at = ${state ? q`now()` : q`t.state_updated_at`},
        status = case when (select active from others) then 'busy' else ${threadStatus} end,
        error = ${threadError === null ? null : q.json(threadError)},
        updated_at = now(),
        expires_at = case when ttl_minutes is null then null
          else now() + make_interval(secs => ttl_minutes * 60) end
      where t.workspace_id = ${workspaceId} and t.thread_id = ${threadId} and exists (select 1 from finished)
        and (not ${temporary}::boolean or (select active from others))
      returning 1
    ), deleted as (
      delete from threads t
      where ${temporary}::boolean and t.workspace_id = ${workspaceId} and t.thread_id = ${threadId}
        and exists (select 1 from finished) and not (select active from others)
      returning 1
    ), deleted_blobs as (
      delete from checkpoint_blobs
      where workspace_id = ${workspaceId} and thread_id = ${threadId}::text and exists (select 1 from deleted)
    ), deleted_writes as (
      delete from checkpoint_writes
      where workspace_id = ${workspaceId} and thread_id = ${threadId}::text and exists (select 1 from deleted)
    ), deleted_checkpoints as (
      delete from checkpoints
      where workspace_id = ${workspaceId} and thread_id = ${threadId}::text and exists (select 1 from deleted)
    ), next as (
      select run_id, not_before from agent_runs
      where workspace_id = ${workspaceId} and thread_id = ${threadId} and status = 'pending'
        and exists (select 1 from finished)
        and not exists (
          select 1 from agent_runs o
          where o.workspace_id = ${workspaceId} and o.thread_id = ${threadId} and o.run_id <> ${runId}
            and o.status = 'running')
      order by (not_before > now()), run_id
      limit 1
    )
    select f.started_at, f.ended_at, f.updated_at,
      array(select seq::text from added order by seq) as seqs,
      exists (select 1 from saved) as saved,
      exists (select 1 from deleted) as deleted,
      (select run_id from next) as next_run_id, (select not_before from next) as next_not_before,
      (select count(*) from notified) as notices,
      case when ${end.alone}::boolean
             and (exists (select 1 from next) or not (exists (select 1 from saved) or exists (select 1 from deleted)))
           then agentplane_run_end_needs_more() end as needs_more
    from finished f`;
  if (!row) return undefined;
  return {
    startedAt: row.started_at,
    endedAt: row.ended_at,
    updatedAt: row.updated_at,
    events: events.map((e, i) => ({
      seq: Number(row.seqs[i]),
      runId,
      ms: e.ms,
      event: e.event,
      data: e.data,
    })),
    threadSaved: row.saved,
    threadDeleted: row.deleted,
    next:
      row.next_run_id && row.next_not_before
        ? { runId: row.next_run_id, notBefore: row.next_not_before }
        : undefined,
  };
}
