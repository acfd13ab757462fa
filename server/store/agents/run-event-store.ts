import { type Queryable, storedCipherOf } from "../db.js";

/**
 * The internal event that ends a run's stream, stored after its last event; its data is
 * {@link endEventData}. Run streams send it as an `end` event `{run_id, status}`.
 */
export const END_EVENT = "__end__";

/** How a run ended, as its end event stores it: its final status, or `rollback` when it was deleted. */
export type RunEndStatus = "success" | "error" | "timeout" | "interrupted" | "rollback";

/** The stored data of a run's end event. */
export function endEventData(status: RunEndStatus): string {
  return JSON.stringify({ status });
}

/**
 * The NOTIFY channel of new events; the payload is `<run_id> <thread_id> <more|end> <seq>`: `end`
 * when the batch ends the run's stream, and the newest seq the batch wrote (a process that already
 * handed those events to its own readers skips the notification).
 */
export const RUN_EVENTS_CHANNEL = "agentplane_run_events";

/** One event to append. */
export interface NewRunEvent {
  /** Milliseconds since the epoch when it was produced. */
  ms: number;
  event: string;
  /** The data, as JSON text. */
  data: string;
}

/** A stored event. */
export interface RunEventRecord {
  seq: number;
  runId: string;
  ms: number;
  event: string;
  data: string;
}

/** The id clients see: `<ms>-<seq>`. */
export function eventId(event: Pick<RunEventRecord, "ms" | "seq">): string {
  return `${event.ms}-${event.seq}`;
}

interface EventRow {
  seq: string;
  run_id: string;
  ms: string;
  event: string;
  data: string;
}

function toRecord(row: EventRow): RunEventRecord {
  return { seq: Number(row.seq), runId: row.run_id, ms: Number(row.ms), event: row.event, data: row.data };
}

/** The run events belong to. */
export interface EventRun {
  workspaceId: string;
  runId: string;
  threadId: string;
}

/**
 * Appends a run's events in one statement and notifies the processes streaming it, in the same
 * transaction when `q` is one; returns them as stored (with their seqs), in order. With encryption
 * at rest on, the data of events written through the pool is encrypted (a transaction carries no
 * cipher: only the constant end event is written through one); what is returned is the plain data.
 */
export async function appendRunEvents(
  q: Queryable,
  run: EventRun,
  events: readonly NewRunEvent[],
): Promise<RunEventRecord[]> {
  const [written] = await appendEventBatches(q, [{ run, events, first: false }]);
  return written?.rows ?? [];
}

/**
 * {@link appendRunEvents} for a writer's first batch, which also learns, in the same statement,
 * whether these are the run's first events (no event of the run was stored before them): a stream
 * in this process that has seen nothing of the run can then take them without reading Postgres.
 */
export async function appendFirstRunEvents(
  q: Queryable,
  run: EventRun,
  events: readonly NewRunEvent[],
): Promise<{ rows: RunEventRecord[]; fromStart: boolean }> {
  const [written] = await appendEventBatches(q, [{ run, events, first: true }]);
  return written ?? { rows: [], fromStart: false };
}

/** One run's events in {@link appendEventBatches}; `first` asks whether none of the run's were stored before. */
export interface EventBatch {
  run: EventRun;
  events: readonly NewRunEvent[];
  first: boolean;
}

/**
 * Appends the events of several runs in one statement (each run's in its order, their seqs rising
 * in it) and notifies each run once, with the newest seq the statement stored of it; returns, per
 * batch, the events as stored and, for a `first` batch, whether it holds the run's first events.
 * Encryption as {@link appendRunEvents}.
 */
export async function appendEventBatches(
  q: Queryable,
  batches: readonly EventBatch[],
): Promise<{ rows: RunEventRecord[]; fromStart: boolean }[]> {
  const flat = batches.flatMap((b) => b.events.map((e) => ({ run: b.run, e })));
  if (flat.length === 0) return batches.map(() => ({ rows: [], fromStart: false }));
  const cipher = storedCipherOf(q);
  const data = flat.map(({ e }) =>
    cipher && e.event !== END_EVENT ? cipher.encryptJsonText(e.data) : e.data,
  );
  const ends = new Set(flat.filter(({ e }) => e.event === END_EVENT).map(({ run }) => run.runId));
  const firsts = batches.filter((b) => b.first && b.events.length > 0).map((b) => b.run);
  // Every part of the statement sees the table as it was before the insert, so `earlier` finds
  // only events stored before these. Rows are inserted in the input's order, so their seqs (drawn
  // as each row is inserted) rise in it.
  const rows = await q<{ seq: string; earlier: string[] }[]>`
    with input as (
      select * from unnest(${flat.map(({ run }) => run.workspaceId)}::uuid[],
                           ${flat.map(({ run }) => run.runId)}::uuid[],
                           ${flat.map(({ run }) => run.threadId)}::uuid[],
                           ${flat.map(({ e }) => e.ms)}::bigint[], ${flat.map(({ e }) => e.event)}::text[],
                           ${data}::text[])
        with ordinality as e(workspace_id, run_id, thread_id, ms, event, data, n)
    ), added as (
      insert into agent_run_events (workspace_id, run_id, thread_id, ms, event, data)
      select workspace_id, run_id, thread_id, ms, event, data from input order by n
      returning seq, run_id, thread_id
    ), notified as (
      select pg_notify(${RUN_EVENTS_CHANNEL},
        run_id::text || ' ' || thread_id::text || ' ' ||
        case when run_id = any(${[...ends]}::uuid[]) then 'end' else 'more' end || ' ' || max(seq)::text)
      from added group by run_id, thread_id
    ), earlier as (
      select array(
        select f.run_id::text from unnest(${firsts.map((r) => r.runId)}::uuid[],
                                          ${firsts.map((r) => r.workspaceId)}::uuid[]) as f(run_id, workspace_id)
        where exists (select 1 from agent_run_events x
                      where x.run_id = f.run_id and x.workspace_id = f.workspace_id)) as runs
    )
    select seq, (select runs from earlier) as earlier, (select count(*) from notified) as notices
    from added order by seq`;
  const earlier = new Set(rows[0]?.earlier ?? []);
  let at = 0;
  return batches.map((b) => {
    const stored = b.events.map((e) => ({
      seq: Number(rows[at++]?.seq),
      runId: b.run.runId,
      ms: e.ms,
      event: e.event,
      data: e.data,
    }));
    return { rows: stored, fromStart: b.first && stored.length > 0 && !earlier.has(b.run.runId) };
  });
}

/** Events of a run (or of every run of a thread) after `afterSeq`, oldest first, at most `limit`. */
export async function eventsAfter(
  q: Queryable,
  workspaceId: string,
  of: { runId: string } | { threadId: string },
  afterSeq: number,
  limit: number,
): Promise<RunEventRecord[]> {
  const rows = await q<EventRow[]>`
    select seq, run_id, ms, event, data from agent_run_events
    where ${"runId" in of ? q`run_id = ${of.runId}` : q`thread_id = ${of.threadId}`}
      and workspace_id = ${workspaceId} and seq > ${afterSeq}
    order by seq limit ${limit}`;
  const cipher = storedCipherOf(q);
  if (cipher) for (const row of rows) row.data = cipher.decryptJsonText(row.data);
  return rows.map(toRecord);
}

/** The newest event's seq of a run (or of a thread), 0 when it has none. */
export async function lastEventSeq(
  q: Queryable,
  workspaceId: string,
  of: { runId: string } | { threadId: string },
): Promise<number> {
  const [row] = await q<{ seq: string | null }[]>`
    select max(seq) as seq from agent_run_events
    where workspace_id = ${workspaceId}
      and ${"runId" in of ? q`run_id = ${of.runId}` : q`thread_id = ${of.threadId}`}`;
  return row?.seq ? Number(row.seq) : 0;
}

/** Starts the TTL of a run's events: they are swept `ttlSeconds` from now. */
export async function expireRunEvents(q: Queryable, runId: string, ttlSeconds: number): Promise<void> {
  await q`
    update agent_run_events set expires_at = now() + make_interval(secs => ${ttlSeconds}::float8)
    where run_id = ${runId}`;
}

/** Deletes events whose TTL passed, at most `limit`; returns how many. */
export async function sweepRunEvents(q: Queryable, limit: number): Promise<number> {
  const rows = await q`
    delete from agent_run_events where seq in (
      select seq from agent_run_events where expires_at < now() order by expires_at limit ${limit})
    returning 1`;
  return rows.length;
}
