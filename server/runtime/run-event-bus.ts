import type { AgentRunRecord } from "../store/agents/agent-run-store.js";
import { parseRunEndAnnouncement, type RunEndAnnouncement } from "../store/agents/run-end-announcement.js";
import { RUN_EVENTS_CHANNEL, type RunEventRecord } from "../store/agents/run-event-store.js";
import type { Queryable, Sql } from "../store/db.js";
import { createRunEventFeed, feedEvents, type RunEventFeed, takeFedEvents } from "./run-event-feed.js";

/**
 * The NOTIFY channel of cancels; the payload is `<run_id> <action>`: `interrupt`, `rollback`, or
 * `orphaned` (its thread or assistant was deleted; migration 0011 sends it).
 */
export const RUN_CONTROL_CHANNEL = "agentplane_run_control";

/** A cancel asked of a run. */
export type CancelHandler = (action: string) => void;

/** What one stream or waiter watches: the run or thread it follows. */
export interface Watch {
  /** Increases whenever a notification for the key arrives. */
  version(): number;
  /**
   * Resolves once the version passed `seen`, or after `timeoutMs` (the safety net for a lost
   * notification), or when `signal` aborts.
   */
  changed(seen: number, timeoutMs: number, signal?: AbortSignal): Promise<void>;
  /**
   * The events of the watched run this process wrote and handed over ({@link RunEventBus.writing})
   * that follow seq `after` with none missing between (none when nothing waits), and the seq they
   * reach; undefined on a gap. `behind` says that events past `upTo` exist that were not handed
   * over here (another writer's, or dropped at the bound): read Postgres then. Only a watcher that
   * read Postgres since it started watching may rely on it: earlier events were never handed over.
   */
  take(after: number): { rows: RunEventRecord[]; upTo: number; behind: boolean } | undefined;
  /**
   * On a run's end key ({@link endKey}): the run as an attempt of this process ended it, handed
   * over as its end committed ({@link RunEventBus.writing}); undefined until then, and when the run
   * ended elsewhere (read Postgres then).
   */
  ended(): AgentRunRecord | undefined;
  /**
   * On a run's end key: what the end's NOTIFY announced of the run (run-end-announcement.ts), when
   * it was heard while this key was watched and carried it; undefined otherwise (read Postgres).
   */
  announced(): RunEndAnnouncement | undefined;
  /** Stops watching; call it in a `finally`. */
  close(): void;
}

/**
 * Fans run events and cancels out to this process: one LISTEN connection for all of them, and
 * per key (a run id or a thread id) a version counter and the waiters on it. Only keys someone
 * watches are kept, so memory follows the streams open in this process.
 */
export interface RunEventBus {
  /** Watches the notifications of a run id, a thread id, or a run's end ({@link endKey}). */
  watch(key: string): Watch;
  /** Calls `handler` when a cancel of `runId` is notified (by any process); returns the unsubscribe. */
  onCancel(runId: string, handler: CancelHandler): () => void;
  /** Notifies every process that `runId` must stop (inside `q`'s transaction when it is one). */
  notifyCancel(q: Queryable, runId: string, action: string): Promise<void>;
  /**
   * Notes that a writer here is storing events of `runId`; call what it returns once the write is
   * over, with the batch as stored, or nothing when it failed. The batch goes to the run's watchers
   * in this process, which are woken: a stream of a run executing here gets its events without a
   * NOTIFY and a read. Its `previousSeq` is the last seq the same writer stored before it (for its
   * first batch: 0 when these are the run's first events, else undefined): a watcher takes it only
   * when it has read up to there, so nothing is skipped. Until then the run's notifications wake
   * nobody: a write's own NOTIFY often arrives before its answer, and a stream woken by it would
   * read Postgres for events about to be handed over. With `threadId`, the batch also goes to the
   * thread's watchers (thread streams and the streaming protocol's event streams): one run writes
   * a thread's events at a time, so the batch follows the thread's previous one when it follows
   * the writer's own; an event another writer stored in between is announced by its NOTIFY, which
   * sends the thread's watchers to Postgres. A write that ends the run hands over the run as ended
   * (`ended`) to the waiters on its end key, which need not read it then; the end's own NOTIFY
   * wakes them only once the write is over.
   */
  writing(runId: string, threadId?: string): (stored?: StoredBatch, ended?: AgentRunRecord) => void;
  /**
   * Whether this process heard the end of `runId` announced (by any process) lately: a waiter
   * that started watching its end key after the run was created here, but may have missed the
   * announcement, reads the run only then. Remembers the last {@link RECENT_ENDS} ends.
   */
  endAnnounced(runId: string): boolean;
  /** Watches open now in this process: streams, joins and waiters following runs or threads. */
  watching(): number;
  /** Stops listening. */
  close(): Promise<void>;
}

/** A batch of a run's events as its writer stored it (see {@link RunEventBus.writing}). */
export interface StoredBatch {
  previousSeq: number | undefined;
  rows: readonly RunEventRecord[];
}

/**
 * Run ends remembered by {@link RunEventBus.endAnnounced}: far more than a process's runs end in
 * the moments between a run's creation and its waiter's watch (about 40 bytes each).
 */
export const RECENT_ENDS = 10_000;

/** The key a waiter watches to learn that a run ended (not every event of it). */
export function endKey(runId: string): string {
  return `end:${runId}`;
}

interface KeyState {
  version: number;
  watchers: number;
  waiters: Set<() => void>;
  /** Events handed over by the run's writer here (run keys only). */
  feed: RunEventFeed;
  /** The newest seq a notification announced. */
  notifiedThrough: number;
  /** On an end key: the run as this process's attempt ended it. */
  ended: AgentRunRecord | undefined;
  /** On an end key: what the end's NOTIFY announced of the run. */
  announced: RunEndAnnouncement | undefined;
}

/** The JSON after `<run> <thread> end <seq> ` in an end's NOTIFY (migration 0038), if any. */
function announcementOf(payload: string): string | undefined {
  let at = -1;
  for (let spaces = 0; spaces < 4; spaces++) {
    at = payload.indexOf(" ", at + 1);
    if (at < 0) return undefined;
  }
  return payload.slice(at + 1);
}

/** Starts listening on the run channels of `sql`. */
export async function createRunEventBus(sql: Sql): Promise<RunEventBus> {
  const keys = new Map<string, KeyState>();
  const cancels = new Map<string, Set<CancelHandler>>();
  // Runs with a write of their events in flight in this process, and how many.
  const writes = new Map<string, number>();
  // Runs whose end was announced while a write of theirs was in flight here: woken when it is over.
  const heldEnds = new Set<string>();
  // Runs whose end was announced lately, oldest first (a Set keeps insertion order).
  const recentEnds = new Set<string>();
  let open = 0;

  const bump = (key: string): void => {
    const state = keys.get(key);
    if (!state) return;
    state.version += 1;
    for (const wake of state.waiters) wake();
    state.waiters.clear();
  };
  const deliver = (key: string, previousSeq: number | undefined, rows: readonly RunEventRecord[]): void => {
    const state = keys.get(key);
    if (!state || rows.length === 0) return;
    feedEvents(state.feed, previousSeq, rows);
    bump(key);
  };
  /** After a reconnect notifications may have been missed: wake every waiter to re-read. */
  const bumpAll = (): void => {
    for (const key of keys.keys()) bump(key);
  };

  const events = await sql.listen(
    RUN_EVENTS_CHANNEL,
    (payload) => {
      const [runId, threadId, end, seqText] = payload.split(" ", 4);
      const seq = Number(seqText);
      const run = runId ? keys.get(runId) : undefined;
      const thread = threadId ? keys.get(threadId) : undefined;
      if (run && Number.isFinite(seq)) run.notifiedThrough = Math.max(run.notifiedThrough, seq);
      if (thread && Number.isFinite(seq)) thread.notifiedThrough = Math.max(thread.notifiedThrough, seq);
      // Events this process already handed to its watchers wake nobody a second time, and those
      // of a write still in flight here wake them when it hands them over.
      const inFlight = runId !== undefined && writes.has(runId);
      if (runId && !(run && seq <= run.feed.through) && !inFlight) bump(runId);
      if (threadId && !(thread && seq <= thread.feed.through) && !inFlight) bump(threadId);
      if (runId && end === "end") {
        recentEnds.add(runId);
        if (recentEnds.size > RECENT_ENDS) recentEnds.delete(recentEnds.values().next().value ?? runId);
        const ending = keys.get(endKey(runId));
        if (ending) ending.announced = parseRunEndAnnouncement(announcementOf(payload));
        // The end written here hands the run over once its write is over: that wakes the waiters.
        if (inFlight) heldEnds.add(runId);
        else bump(endKey(runId));
      }
    },
    bumpAll,
  );
  const control = await sql.listen(RUN_CONTROL_CHANNEL, (payload) => {
    const [runId, action] = payload.split(" ");
    if (!runId || !action) return;
    for (const handler of cancels.get(runId) ?? []) handler(action);
  });

  return {
    watch(key) {
      let state = keys.get(key);
      if (!state) {
        state = {
          version: 0,
          watchers: 0,
          waiters: new Set(),
          feed: createRunEventFeed(),
          notifiedThrough: 0,
          ended: undefined,
          announced: undefined,
        };
        keys.set(key, state);
      }
      state.watchers += 1;
      open += 1;
      const own = state;
      let closed = false;
      return {
        version: () => own.version,
        changed(seen, timeoutMs, signal) {
          if (own.version > seen || signal?.aborted) return Promise.resolve();
          return new Promise<void>((resolve) => {
            const done = (): void => {
              clearTimeout(timer);
              own.waiters.delete(done);
              signal?.removeEventListener("abort", done);
              resolve();
            };
            const timer = setTimeout(done, timeoutMs);
            own.waiters.add(done);
            signal?.addEventListener("abort", done, { once: true });
          });
        },
        take(after) {
          const taken = takeFedEvents(own.feed, after);
          // Handed-over events dropped at the bound, or announced by another writer: read Postgres.
          const known = Math.max(own.notifiedThrough, own.feed.through);
          return taken && { ...taken, behind: known > taken.upTo };
        },
        ended: () => own.ended,
        announced: () => own.announced,
        close() {
          if (closed) return;
          closed = true;
          open -= 1;
          own.watchers -= 1;
          if (own.watchers === 0 && keys.get(key) === own) {
            for (const wake of own.waiters) wake();
            keys.delete(key);
          }
        },
      };
    },

    onCancel(runId, handler) {
      let set = cancels.get(runId);
      if (!set) {
        set = new Set();
        cancels.set(runId, set);
      }
      set.add(handler);
      return () => {
        set.delete(handler);
        if (set.size === 0) cancels.delete(runId);
      };
    },

    writing(runId, threadId) {
      writes.set(runId, (writes.get(runId) ?? 0) + 1);
      let over = false;
      return (stored, ended) => {
        if (over) return;
        over = true;
        const left = (writes.get(runId) ?? 1) - 1;
        if (left > 0) writes.set(runId, left);
        else writes.delete(runId);
        const endState = keys.get(endKey(runId));
        if (ended && endState) endState.ended = ended;
        const held = left === 0 && heldEnds.delete(runId);
        if (ended || held) bump(endKey(runId));
        for (const key of threadId === undefined ? [runId] : [runId, threadId]) {
          // A run's first batch may say nothing of the run came before it (0); of the thread,
          // earlier runs' events did: the thread's watchers read Postgres before taking it.
          const previous = key === threadId && stored?.previousSeq === 0 ? undefined : stored?.previousSeq;
          if (stored && stored.rows.length > 0) deliver(key, previous, stored.rows);
          else {
            // A failed write: wake the watchers if a notification was held back meanwhile.
            const state = keys.get(key);
            if (state && state.notifiedThrough > state.feed.through) bump(key);
          }
        }
      };
    },

    async notifyCancel(q, runId, action) {
      await q`select pg_notify(${RUN_CONTROL_CHANNEL}, ${`${runId} ${action}`})`;
    },

    endAnnounced: (runId) => recentEnds.has(runId),

    watching: () => open,

    async close() {
      await events.unlisten();
      await control.unlisten();
    },
  };
}
