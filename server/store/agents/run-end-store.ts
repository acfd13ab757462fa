/**
 * The end of a run, in one statement (the function `agentplane_end_run` of migration 0035): the
 * thread's queue locked, then the run's final status and output, the events of its attempt not
 * written yet followed by its end event (announced on the events channel), the start of its events'
 * TTL, its thread's state (or, for a temporary thread, the thread's deletion), and the thread's next
 * run, which the caller dispatches in the same transaction.
 *
 * The function takes the queue's lock (lockThreadQueue's) before the end's snapshot, so the end sees
 * every run created on the thread before it: the statement needs no transaction around it, and
 * sent `alone` it is one (no BEGIN, no COMMIT).
 */

import type { StoredDataCipher } from "../crypto/stored-data-cipher.js";
import { pgErrorCode, type Queryable } from "../db.js";
import type { JsonObject, JsonValue } from "../json-value.js";
import type { RunStatus } from "./agent-run-store.js";
import type { NewRunEvent, RunEventRecord } from "./run-event-store.js";

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
   * The statement is its own transaction: when the end finds more to do (a next run to dispatch,
   * its thread gone), the statement fails with an error {@link isRunEndNeedsMore} recognises
   * instead, and nothing is written.
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
    select * from agentplane_end_run(
      ${workspaceId}::uuid, ${runId}::uuid, ${threadId}::uuid, ${end.leaseToken}::uuid, ${end.status},
      ${q.json(end.output)}::jsonb, ${ttl}::float8, ${events.map((e) => e.ms)}::bigint[],
      ${events.map((e) => e.event)}::text[], ${data}::text[], ${end.channel}, ${temporary},
      ${state !== undefined}, ${state ? q.json(state.values) : null}::jsonb,
      ${state ? q.json(state.interrupts) : null}::jsonb, ${threadStatus},
      ${threadError === null ? null : q.json(threadError)}::jsonb, ${end.alone})`;
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
