import { type Coalescer, createCoalescer } from "./coalescer.js";
import type { Sql } from "./db.js";
import {
  findThreads,
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
}

/** One {@link ThreadBatches} per process, shared by every request. */
export function createThreadBatches(sql: Sql): ThreadBatches {
  return {
    find: createCoalescer({ run: (keys) => findThreads(sql, keys) }),
    insert: createCoalescer({ run: (threads) => insertThreads(sql, threads) }),
  };
}
