import { chmod, mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../logger.js";
import { type EmbeddedPostgresServer, startEmbeddedPostgres } from "./embedded-postgres.js";

/** How long a restart may take on a loaded machine (crash recovery replays the WAL). */
const RESTART_MS = 30_000;

let root: string;
let pg: EmbeddedPostgresServer;
const lines: Record<string, unknown>[] = [];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "agentplane-supervisor-"));
  // mkdtemp makes the directory 0700; as root, Postgres runs as the `postgres` user and must enter it.
  await chmod(root, 0o711);
  const lifecycle = createLogger("debug", (line) => lines.push(JSON.parse(line) as Record<string, unknown>));
  pg = await startEmbeddedPostgres({
    dataDir: join(root, "postgres"),
    log: () => {},
    durable: false,
    lifecycle,
  });
});

afterAll(async () => {
  await pg?.stop();
  await rm(root, { recursive: true, force: true });
});

/** Listens on the port, retrying while the killed postmaster's socket is still being torn down. */
async function occupy(port: number): Promise<Server> {
  for (;;) {
    const server = createServer();
    const bound = await new Promise<boolean>((resolve) => {
      server.once("error", () => resolve(false));
      server.listen(port, "127.0.0.1", () => resolve(true));
    });
    if (bound) return server;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const messages = (message: string) => lines.filter((line) => line.message === message);

describe("the embedded Postgres supervisor", () => {
  // Two waits of up to RESTART_MS each.
  it("retries a failing restart with growing waits, logging each attempt, until Postgres is back", {
    timeout: 70_000,
  }, async () => {
    const port = Number(new URL(pg.url).port);
    const pid = pg.pid();
    expect(pid).toBeGreaterThan(0);
    process.kill(pid!, "SIGKILL");
    // Something else holds the port: every restart fails until it is released.
    const squatter = await occupy(port);
    try {
      await expect
        .poll(() => messages("restarting embedded Postgres failed").length, { timeout: RESTART_MS })
        .toBeGreaterThanOrEqual(3);
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
    }
    await expect.poll(() => messages("embedded Postgres restarted").length, { timeout: RESTART_MS }).toBe(1);

    expect(messages("embedded Postgres exited unexpectedly; restarting it")).toEqual([
      expect.objectContaining({ level: "error", pid, signal: "SIGKILL" }),
    ]);
    const attempts = messages("restarting embedded Postgres");
    expect(attempts.map((a) => a.attempt)).toEqual(attempts.map((_, i) => i + 1));
    expect(attempts.map((a) => a.afterMs)).toEqual(attempts.map((_, i) => Math.min(250 * 2 ** i, 8_000)));
    expect(attempts.every((a) => a.level === "warn" && a.maxAttempts === 10)).toBe(true);
    const failure = messages("restarting embedded Postgres failed")[0]!;
    expect(JSON.stringify(failure.error)).toContain("Address already in use");

    const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
    try {
      expect(await sql`select 1 as one`).toEqual([{ one: 1 }]);
    } finally {
      await sql.end();
    }
    expect(pg.pid()).not.toBe(pid);
  });
});
