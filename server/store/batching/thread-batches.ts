import {
  findThreads,
  findVisibleThread,
  findVisibleThreads,
  insertThreads,
  type NewThread,
  type ThreadKey,
  type ThreadRecord,
  type VisibleThreadKey,
} from "../agents/thread-store.js";
import type { Sql } from "../db.js";
import { filterAlternatives } from "../filters/auth-filter-alternatives.js";
import type { AuthFilter } from "../filters/auth-filter-sql.js";
import { type Coalescer, createCoalescer } from "./coalescer.js";

/**
 * The single-thread reads and inserts of the API, each run together with the others of the same
 * turn of the event loop (see {@link createCoalescer}), on the pool: never inside a transaction.
 */
export interface ThreadBatches {
  /** The thread at `key`, if it exists. */
  readonly find: Coalescer<ThreadKey, ThreadRecord | undefined>;
  /** Inserts `thread`; undefined when its workspace already has a thread with its id. */
  readonly insert: Coalescer<NewThread, ThreadRecord | undefined>;
  /**
   * The thread at `key` when it passes a custom auth filter, batched with the other lookups of the
   * turn, whoever's filter they carry; a filter too big to go as data (see
   * {@link filterAlternatives}) goes as a query of its own.
   */
  findVisible(key: ThreadKey, auth: AuthFilter): Promise<ThreadRecord | undefined>;
}

/** One {@link ThreadBatches} per process, shared by every request. */
export function createThreadBatches(sql: Sql): ThreadBatches {
  const visible = createCoalescer<{ key: VisibleThreadKey; auth: AuthFilter }, ThreadRecord | undefined>({
    run: async (lookups) => {
      const [only] = lookups;
      // Alone (every call at low load), the filter as SQL text is the plainest plan.
      if (lookups.length === 1 && only) return [await findVisibleThread(sql, only.key, only.auth)];
      return findVisibleThreads(
        sql,
        lookups.map((l) => l.key),
      );
    },
  });
  return {
    find: createCoalescer({ run: (keys) => findThreads(sql, keys) }),
    insert: createCoalescer({ run: (threads) => insertThreads(sql, threads) }),
    findVisible: (key, auth) => {
      const alternatives = filterAlternatives(auth);
      return alternatives
        ? visible({ key: { ...key, alternatives }, auth })
        : findVisibleThread(sql, key, auth);
    },
  };
}
