import type { AuthFilter } from "./auth-filter-sql.js";
import { type Coalescer, createCoalescer } from "./coalescer.js";
import type { Sql } from "./db.js";
import {
  findThreads,
  findVisibleThread,
  insertThreads,
  type NewThread,
  type ThreadKey,
  type ThreadRecord,
} from "./thread-store.js";

/**
 * The single-thread reads and inserts of the API, each run together with the others of the same
 * turn of the event loop (see {@link createCoalescer}), on the pool: never inside a transaction.
 */
export interface ThreadBatches {
  /** The thread at `key`, if it exists. */
  readonly find: Coalescer<ThreadKey, ThreadRecord | undefined>;
  /** Inserts `thread`; undefined when its workspace already has a thread with its id. */
  readonly insert: Coalescer<NewThread, ThreadRecord | undefined>;
  /** The thread at `key` when it passes a custom auth filter: a query of its own, never batched. */
  findVisible(key: ThreadKey, auth: AuthFilter): Promise<ThreadRecord | undefined>;
}

/** One {@link ThreadBatches} per process, shared by every request. */
export function createThreadBatches(sql: Sql): ThreadBatches {
  return {
    find: createCoalescer({ run: (keys) => findThreads(sql, keys) }),
    insert: createCoalescer({ run: (threads) => insertThreads(sql, threads) }),
    findVisible: (key, auth) => findVisibleThread(sql, key, auth),
  };
}
