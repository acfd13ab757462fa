import { chmod, mkdtemp, rename, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../logger.js";
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

const messages = (message: string) => lines.filter((line) => line.message === message);

describe("the embedded Postgres supervisor", () => {
  // Two waits of up to RESTART_MS each.
  it("retries a failing restart with growing waits, logging each attempt, until Postgres is back", {
    timeout: 70_000,
  }, async () => {
    const pid = pg.pid();
    expect(pid).toBeGreaterThan(0);
    // Without its configuration file Postgres refuses to start: every restart fails until it is back.
    const conf = join(root, "postgres", "postgresql.conf");
    await rename(conf, `${conf}.aside`);
    try {
      process.kill(pid!, "SIGKILL");
      await expect
        .poll(() => messages("restarting embedded Postgres failed").length, { timeout: RESTART_MS })
        .toBeGreaterThanOrEqual(3);
    } finally {
      await rename(`${conf}.aside`, conf);
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
    expect(JSON.stringify(failure.error)).toContain("postgresql.conf");

    const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
    try {
      expect(await sql`select 1 as one`).toEqual([{ one: 1 }]);
    } finally {
      await sql.end();
    }
    expect(pg.pid()).not.toBe(pid);
  });
});
