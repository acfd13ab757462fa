import { randomBytes } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import postgres from "postgres";
import { afterAll, beforeAll, inject } from "vitest";
import { createSql, type Sql } from "../../server/store/db.js";

/** Pool size of a test database: a test's own queries plus a server under test sharing the pool. */
const POOL_MAX = 5;
/** Seconds the file's own pool gets to finish its queries when the database is dropped. */
const POOL_END_SECONDS = 5;
/** How long a file waits for its database to be dropped: well inside vitest's 60 s hook timeout. */
const DROP_WAIT_MS = 20_000;

/** A database of its own for one test file. */
export interface TestDatabase {
  /** Its name, `agentplane_test_<random>`. */
  name: string;
  /** Connection URL (superuser of the test cluster). */
  url: string;
  /** A pool on it. */
  sql: Sql;
  /** Closes the pool and drops the database, disconnecting anyone still connected. */
  drop(): Promise<void>;
}

/** Options of {@link createTestDatabase}. */
export interface TestDatabaseOptions {
  /** Clone the migrated template (the default), or start from an empty database when false. */
  migrated?: boolean;
}

/**
 * Creates a database for the calling test file by cloning the template that global setup migrated
 * (a file copy, much faster than migrating), or an empty one, and opens a pool on it.
 */
export async function createTestDatabase(options: TestDatabaseOptions = {}): Promise<TestDatabase> {
  const template = options.migrated === false ? "template0" : inject("postgresTemplateDatabase");
  const name = `agentplane_test_${randomBytes(6).toString("hex")}`;
  await withAdmin((admin) => admin`create database ${admin(name)} template ${admin(template)}`);
  const url = new URL(inject("postgresAdminUrl"));
  url.pathname = `/${name}`;
  const sql = createSql(url.toString(), {
    max: POOL_MAX,
    statementTimeoutMs: 0,
    applicationName: "agentplane-test",
  });
  return {
    name,
    url: url.toString(),
    sql,
    async drop() {
      await sql.end({ timeout: POOL_END_SECONDS });
      const dropped = withAdmin((admin) => admin`drop database if exists ${admin(name)} with (force)`).then(
        () => true,
        (error: unknown) => {
          console.warn(`could not drop test database ${name}:`, error);
          return true;
        },
      );
      // The cluster is thrown away after the run: a drop that lags behind a loaded full run (seen
      // once in CI, a minute) is left to finish in the background rather than failing the file.
      if (!(await Promise.race([dropped, delay(DROP_WAIT_MS).then(() => false)])))
        console.warn(`dropping test database ${name} took over ${DROP_WAIT_MS} ms; left to finish`);
    },
  };
}

/**
 * The usual pattern: a database created before the file's tests and dropped after them. Returns a
 * getter, since the database exists only once `beforeAll` has run.
 */
export function useTestDatabase(options: TestDatabaseOptions = {}): () => TestDatabase {
  let database: TestDatabase | undefined;
  beforeAll(async () => {
    database = await createTestDatabase(options);
  });
  afterAll(async () => {
    await database?.drop();
  });
  return () => {
    if (!database) throw new Error("useTestDatabase(): the database exists only inside tests and hooks");
    return database;
  };
}

/** Runs statements on the cluster's maintenance database over a short-lived connection. */
async function withAdmin(run: (admin: postgres.Sql) => Promise<unknown>): Promise<void> {
  const admin = postgres(inject("postgresAdminUrl"), { max: 1, onnotice: () => {} });
  try {
    await run(admin);
  } finally {
    await admin.end();
  }
}
