import type PgBoss from "pg-boss";
import type { Queryable, Sql } from "../store/db.js";

/** The database interface pg-boss 10 accepts as its `db` option (and per call, e.g. on `send`). */
export type PgBossDb = PgBoss.Db;

/**
 * Prepare pg-boss's statements (porsager's `unsafe` does not by default): without it every
 * parameterised query costs two round trips, Parse/Describe and then Bind/Execute. pg-boss uses a
 * fixed set of texts, so each connection caches a few dozen statements at most.
 */
const PREPARE = { prepare: true } as const;

/** porsager refuses `undefined` parameters (UNDEFINED_VALUE); pg-boss passes them for unset options. */
function toParameters(values: readonly unknown[]): never[] {
  return values.map((value) => (value === undefined ? null : value)) as never[];
}

/**
 * pg-boss on our porsager pool, so the queue shares the pool, its limits and its settings.
 *
 * Parameterised statements run on the pool. Text without parameters is one of pg-boss's scripts
 * (install, migrate, maintenance), which carry their own `BEGIN`/`COMMIT`: a pooled connection refuses
 * those (UNSAFE_TRANSACTION), so they run as one simple-protocol query on a reserved connection.
 *
 * Limitation: porsager serialises json parameters itself, so a string meant as JSON text is encoded a
 * second time. pg-boss does that only in `insert()` (bulk send), which pg-boss's cron schedules also use
 * (`__pgboss__send-it`); neither works through this adapter. `send`, `fetch`, `complete`, `fail` and
 * queue management pass objects and work.
 */
export function createPgBossDb(sql: Sql): PgBossDb {
  return {
    async executeSql(text, values) {
      if (values !== undefined && values.length > 0) {
        return { rows: await sql.unsafe(text, toParameters(values), PREPARE) };
      }
      const connection = await sql.reserve();
      try {
        const result = await connection.unsafe(text).simple();
        // A multi-statement script answers one row list per statement; pg-boss reads the last one.
        const last = Array.isArray(result[0]) ? result.at(-1) : result;
        return { rows: last as unknown as unknown[] };
      } catch (error) {
        // Return no aborted transaction to the pool. If this rollback fails as well, the connection is
        // broken and porsager discards it; the script's own error is the one worth reporting.
        await connection.unsafe("rollback").catch(() => {});
        throw error;
      } finally {
        connection.release();
      }
    },
  };
}

/**
 * pg-boss on a caller's open transaction (or any other {@link Queryable}), for `send` inside the
 * transaction that writes the row the job is about: both commit, or neither does.
 */
export function createTransactionPgBossDb(tx: Queryable): PgBossDb {
  return {
    async executeSql(text, values) {
      return { rows: await tx.unsafe(text, toParameters(values ?? []), PREPARE) };
    },
  };
}
