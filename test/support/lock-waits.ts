/**
 * Waiting, in a test, until a statement sent on another connection is blocked on an advisory lock
 * (a thread's queue, lockThreadQueue) in the test's own database.
 */
import type { Sql } from "../../server/store/db.js";

/** How often the lock table is read while nothing waits yet. */
const POLL_MS = 5;

/**
 * Resolves once `sessions` sessions (one unless told) of `sql`'s database wait for an advisory lock
 * they were not granted.
 */
export async function untilAdvisoryLockWaited(sql: Sql, sessions = 1): Promise<void> {
  for (;;) {
    const [waiting] = await sql<{ n: number }[]>`
      select count(*)::int as n from pg_locks
      where locktype = 'advisory' and not granted
        and database = (select oid from pg_database where datname = current_database())`;
    if ((waiting?.n ?? 0) >= sessions) return;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
