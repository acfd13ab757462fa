/**
 * Two patches of pg-boss 10's internal Manager class (src/manager.js), which the PgBoss facade
 * keeps in a private field, so both go on the class's prototype, once per process:
 *
 * - Completion writes. Its worker (`onFetch`) records a finished job with `this.complete()` or
 *   `this.fail()` without awaiting either, so when Postgres drops out at that moment the rejection
 *   is unhandled and Node ends the process. Each returned promise gets a handler that reports the
 *   failure to {@link reportCompletionWriteFailures}' listener (callers that await it still see the
 *   error). A job whose outcome could not be written stays active and is retried after its
 *   `expireInSeconds`, so nothing is lost.
 * - Fetches. Its worker loops (and their last fetch times) are not exposed; a loop fetches through
 *   the Manager's `fetch`, so every fetch is reported to the observer registered for the `db`
 *   object the Manager was built with ({@link observeManagerFetches}), which is how the queue's
 *   worker liveness sees a loop that stopped.
 */
import { createRequire } from "node:module";

/** What the patches read of the Manager class. */
interface ManagerClass {
  prototype: {
    complete: (...args: unknown[]) => Promise<unknown>;
    fail: (...args: unknown[]) => Promise<unknown>;
    fetch: (this: { db: object }, name: string, ...rest: unknown[]) => Promise<unknown>;
  };
}

/** The name start-up reports this patch by. */
export const PG_BOSS_MANAGER_PATCH = "pg-boss Manager complete/fail/fetch";

/** Where a failed completion write is reported: the queue's log, set when a queue is created. */
let completionFailed: (method: "complete" | "fail", queue: unknown, error: unknown) => void = () => {};
/** Where each pg-boss instance's fetches are reported, keyed by the `db` object it was built with. */
const fetchObservers = new WeakMap<object, (queue: string) => void>();
/** The prototype patched, so that applying again is a no-op. */
let patched: ManagerClass["prototype"] | undefined;

/**
 * Patches the Manager's prototype (idempotent). Throws, naming the patch, when the class no longer
 * has the methods it wraps: a pg-boss upgrade must be checked against these patches.
 */
export function applyPgBossManagerPatch(
  manager: ManagerClass = createRequire(import.meta.url)("pg-boss/src/manager.js") as ManagerClass,
): void {
  const prototype = manager.prototype;
  if (patched === prototype) return;
  for (const name of ["complete", "fail", "fetch"] as const)
    if (typeof prototype?.[name] !== "function")
      throw new Error(
        `dependency patch "${PG_BOSS_MANAGER_PATCH}" cannot apply: Manager.prototype.${name} is gone`,
      );
  for (const name of ["complete", "fail"] as const) {
    const original = prototype[name];
    prototype[name] = function (this: unknown, ...args: unknown[]) {
      const written = original.apply(this, args);
      written.catch((error: unknown) => completionFailed(name, args[0], error));
      return written;
    };
  }
  const fetch = prototype.fetch;
  prototype.fetch = async function (this: { db: object }, name: string, ...rest: unknown[]) {
    try {
      return await fetch.call(this, name, ...rest);
    } finally {
      fetchObservers.get(this.db)?.(name);
    }
  };
  patched = prototype;
}

/** Whether {@link applyPgBossManagerPatch} has patched the installed pg-boss. */
export function pgBossManagerPatched(): boolean {
  return patched !== undefined;
}

/** Sends failed completion writes to `listener` (the latest queue's log). */
export function reportCompletionWriteFailures(
  listener: (method: "complete" | "fail", queue: unknown, error: unknown) => void,
): void {
  completionFailed = listener;
}

/** Calls `onFetched(queue)` after every fetch of the pg-boss instance built with `db`. */
export function observeManagerFetches(db: object, onFetched: (queue: string) => void): void {
  fetchObservers.set(db, onFetched);
}
