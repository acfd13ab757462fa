/**
 * The postgres.js driver as `npm install` leaves it (server/patches/postgres-driver-repair.mjs): a connection
 * whose backend dies must fail its queries with CONNECTION_CLOSED, never throw from a timer and take
 * the process down. Run in a child process, since the unrepaired driver kills the process it is in.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database.js";

const run = promisify(execFile);

/**
 * Reserves a connection, has another session terminate its backend, then queries the reserved
 * connection twice (the second query is the one the unrepaired driver crashes on) and the pool once.
 */
const SCRIPT = `
import postgres from "postgres";
const url = process.argv[1];
const sql = postgres(url, { max: 2, onnotice: () => {} });
const killer = postgres(url, { max: 1, onnotice: () => {} });
const reserved = await sql.reserve();
const [{ pid }] = await reserved\`select pg_backend_pid() as pid\`;
await killer\`select pg_terminate_backend(\${pid})\`;
const outcome = (query) => query.then(() => "answered", (error) => error.code);
const first = await outcome(reserved\`select 1\`);
const second = await outcome(reserved\`select 1\`);
reserved.release();
const [{ one }] = await sql\`select 1 as one\`;
console.log(JSON.stringify({ first, second, one }));
await Promise.all([sql.end(), killer.end()]);
`;

let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase({ migrated: false });
});

afterAll(async () => {
  await database?.drop();
});

describe("the installed postgres.js driver", () => {
  it("rejects queries on a connection whose backend died, and the pool goes on", async () => {
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e", SCRIPT, database.url], {
      cwd: process.cwd(),
      timeout: 20_000,
    });
    const outcome = JSON.parse(stdout) as { first: string; second: string; one: number };
    // The first query meets the dying socket: its error, or the close that follows it.
    expect(["CONNECTION_CLOSED", "ECONNRESET"]).toContain(outcome.first);
    expect(outcome).toMatchObject({ second: "CONNECTION_CLOSED", one: 1 });
  });
});
