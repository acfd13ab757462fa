import postgres from "postgres";
import type { StoredDataCipher } from "./crypto/stored-data-cipher.js";
import { noDelaySocketFactory } from "./postgres/pg-socket.js";

/** A Postgres connection pool (porsager `postgres`). */
export type Sql = postgres.Sql;

/** Anything a store function can run queries on: the pool, a reserved connection or an open transaction. */
export type Queryable = postgres.ISql;

/** An open transaction. */
export type Transaction = postgres.TransactionSql;

/** Options of {@link createSql}. */
export interface SqlOptions {
  /** Largest number of connections in the pool. */
  max: number;
  /** Server-side `statement_timeout` of every connection, in milliseconds (0 disables it). */
  statementTimeoutMs: number;
  /** Shown in `pg_stat_activity.application_name`. */
  applicationName: string;
  /** Encryption at rest of JSON parameters and results; none when undefined (no per-row work). */
  cipher?: StoredDataCipher | undefined;
}

/** The cipher each pool was opened with; transactions and reserved connections are not listed. */
const ciphers = new WeakMap<object, StoredDataCipher>();

/**
 * The encryption at rest of the pool `q` (undefined when off, or when `q` is a transaction: pass the
 * pool where a store function encrypts by hand, as the run event and checkpoint stores do).
 */
export function storedCipherOf(q: Queryable): StoredDataCipher | undefined {
  return ciphers.get(q);
}

/** porsager's type table entry for json/jsonb (OIDs 114, 3802) that encrypts and decrypts with `cipher`. */
function encryptingJsonType(cipher: StoredDataCipher) {
  return {
    to: 3802,
    from: [114, 3802],
    serialize: (value: unknown) => cipher.stringifyEncrypted(value),
    parse: (text: string) => {
      const value: unknown = JSON.parse(text);
      return text.includes(cipher.sealedPrefix) ? cipher.decryptJson(value) : value;
    },
  };
}

/** Seconds an idle pooled connection lives; long enough to reuse under load, short enough to shrink. */
const IDLE_TIMEOUT_SECONDS = 30;
/** Seconds to wait for a new connection before a query fails with UNAVAILABLE. */
const CONNECT_TIMEOUT_SECONDS = 10;

/**
 * Opens a pool. Connections are made lazily, so this never fails; a query fails when Postgres is
 * unreachable, and the pool reconnects by itself when it comes back.
 */
export function createSql(url: string, options: SqlOptions): Sql {
  const sql = postgres(url, {
    ...(options.cipher ? { types: { json: encryptingJsonType(options.cipher) } } : {}),
    max: options.max,
    idle_timeout: IDLE_TIMEOUT_SECONDS,
    connect_timeout: CONNECT_TIMEOUT_SECONDS,
    onnotice: () => {},
    // Not in the driver's typings, though its connection reads it (see pg-socket.ts).
    ...({ socket: noDelaySocketFactory() } as object),
    connection: {
      application_name: options.applicationName,
      statement_timeout: options.statementTimeoutMs,
    },
  });
  if (options.cipher) ciphers.set(sql, options.cipher);
  return sql as Sql;
}

/** Seconds a health check waits for a fresh connection: the caller's own check timeout is shorter. */
const CHECK_CONNECT_TIMEOUT_SECONDS = 5;

/**
 * Opens a new connection, runs `select 1` and closes it. Unlike a query on a pooled connection, it
 * fails when Postgres cannot take new connections (a frozen postmaster) even while the backends of
 * existing connections still answer; the dependency monitor uses it every few seconds.
 */
export async function checkConnectable(url: string): Promise<void> {
  const sql = postgres(url, {
    max: 1,
    connect_timeout: CHECK_CONNECT_TIMEOUT_SECONDS,
    onnotice: () => {},
    connection: { application_name: "agentplane-health" },
  });
  try {
    await sql`select 1`;
  } finally {
    void sql.end({ timeout: 0 });
  }
}

/** SQLSTATE codes this code base reacts to. */
export const PgCode = {
  uniqueViolation: "23505",
  foreignKeyViolation: "23503",
  checkViolation: "23514",
  invalidTextRepresentation: "22P02",
} as const;

/** The SQLSTATE of a Postgres error, or undefined for anything else. */
export function pgErrorCode(error: unknown): string | undefined {
  return error instanceof postgres.PostgresError ? error.code : undefined;
}
