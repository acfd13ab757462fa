import type { Queryable, Sql } from "../store/db.js";
import { RUN_EVENTS_CHANNEL } from "../store/run-event-store.js";

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
  /** Watches open now in this process: streams, joins and waiters following runs or threads. */
  watching(): number;
  /** Stops listening. */
  close(): Promise<void>;
}

/** The key a waiter watches to learn that a run ended (not every event of it). */
export function endKey(runId: string): string {
  return `end:${runId}`;
}

interface KeyState {
  version: number;
  watchers: number;
  waiters: Set<() => void>;
}

/** Starts listening on the run channels of `sql`. */
export async function createRunEventBus(sql: Sql): Promise<RunEventBus> {
  const keys = new Map<string, KeyState>();
  const cancels = new Map<string, Set<CancelHandler>>();
  let open = 0;

  const bump = (key: string): void => {
    const state = keys.get(key);
    if (!state) return;
    state.version += 1;
    for (const wake of state.waiters) wake();
    state.waiters.clear();
  };
  /** After a reconnect notifications may have been missed: wake every waiter to re-read. */
  const bumpAll = (): void => {
    for (const key of keys.keys()) bump(key);
  };

  const events = await sql.listen(
    RUN_EVENTS_CHANNEL,
    (payload) => {
      const [runId, threadId, end] = payload.split(" ");
      if (runId) bump(runId);
      if (threadId) bump(threadId);
      if (runId && end === "end") bump(endKey(runId));
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
        state = { version: 0, watchers: 0, waiters: new Set() };
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

    async notifyCancel(q, runId, action) {
      await q`select pg_notify(${RUN_CONTROL_CHANNEL}, ${`${runId} ${action}`})`;
    },

    watching: () => open,

    async close() {
      await events.unlisten();
      await control.unlisten();
    },
  };
}
