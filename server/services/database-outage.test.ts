import { createServer } from "node:net";
import { Code } from "@connectrpc/connect";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../test/support/database.js";
import { explainDatabaseOutage } from "./database-outage.js";

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});

afterAll(async () => {
  await db?.drop();
});

/** The error a promise rejects with. */
async function failure(work: Promise<unknown>): Promise<unknown> {
  try {
    await work;
  } catch (error) {
    return error;
  }
  throw new Error("expected the work to fail");
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("explainDatabaseOutage, on errors of a real driver and server", () => {
  it("answers UNAVAILABLE when Postgres is not listening", async () => {
    const url = new URL(db.url);
    url.port = String(await closedPort());
    const sql = postgres(url.toString(), { max: 1, onnotice: () => {} });
    try {
      const error = await failure(sql`select 1`);
      expect(explainDatabaseOutage(error)).toMatchObject({
        code: Code.Unavailable,
        rawMessage: "the database is unreachable; retry in a few seconds",
      });
      // Wrapped by a caller (the job queue wraps its errors) it is still an outage.
      expect(explainDatabaseOutage(new Error("queue failed", { cause: error }))?.code).toBe(Code.Unavailable);
    } finally {
      await sql.end({ timeout: 0 });
    }
  });

  it("answers UNAVAILABLE when the server ends the session under a running query", async () => {
    const sql = postgres(db.url, { max: 1, onnotice: () => {} });
    try {
      const [{ pid }] = (await sql`select pg_backend_pid() as pid`) as unknown as [{ pid: number }];
      const sleeping = failure(sql`select pg_sleep(30)`);
      await expect
        .poll(
          async () =>
            (
              await db.sql`select count(*)::int as n from pg_stat_activity where pid = ${pid} and state = 'active'`
            )[0]!.n,
        )
        .toBe(1);
      await db.sql`select pg_terminate_backend(${pid})`;
      const error = await sleeping;
      // The driver reports the FATAL admin_shutdown, or the closed connection when that comes first.
      expect(["57P01", "CONNECTION_CLOSED"]).toContain((error as { code?: string }).code);
      expect(explainDatabaseOutage(error)?.code).toBe(Code.Unavailable);
    } finally {
      await sql.end({ timeout: 0 });
    }
  });

  it("leaves every other error alone", async () => {
    const error = await failure(db.sql`select * from no_such_table`);
    expect(explainDatabaseOutage(error)).toBeUndefined();
    expect(explainDatabaseOutage(new TypeError("a bug"))).toBeUndefined();
    expect(explainDatabaseOutage("not an error")).toBeUndefined();
  });
});
