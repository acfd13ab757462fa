/**
 * Crash recovery of embedded Postgres under a server started as `npm start` starts it: a postmaster
 * killed with SIGKILL is restarted by the server's supervisor and the server recovers unaided; while
 * Postgres is down or frozen, API calls answer 503 with a `detail` within seconds instead of 500 or
 * hanging; SIGTERM during an outage still exits within the grace.
 */
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, createClient } from "../../sdk/index.js";
import { FLUSH_AFTER_MS } from "../../server/stderr-lines.js";
import {
  childrenOf,
  type EmbeddedServer,
  isAlive,
  postmasterPidOf,
  startEmbeddedServer,
  type TimedAnswer,
  timedFetch,
} from "../support/embedded-server.js";

const API_KEY = "ap_pt_postgres_crash_test_key_0123";
/** The bound on an API call during an outage. */
const OUTAGE_ANSWER_MS = 5_000;
/** The bound on recovery after the postmaster is killed. */
const RECOVERY_MS = 60_000;
/** Grace given to the server; SIGTERM must end it within this plus the documented 3 s margin. */
const GRACE_MS = 2_000;
/** The app's shutdown margin (SHUTDOWN_MARGIN_MS) and slack for process exit on a loaded machine. */
const EXIT_SLACK_MS = 3_000 + 2_000;
/**
 * Bound on a call already waiting on a frozen Postgres: the monitor's check interval (2 s) and two
 * check attempts that time out (3 s each), with room for a loaded machine.
 */
const FROZEN_ANSWER_MS = 15_000;
/** A refusal needs no database: only a loaded machine's scheduling delays it. */
const REFUSED_AT_ONCE_MS = 2_000;
/** Pause between requests while waiting for an outage to end. */
const POLL_MS = 200;

let dataDir: string;
let server: EmbeddedServer;
let client: Client;

const headers = { "x-api-key": API_KEY, "content-type": "application/json" };
const searchThreads = () =>
  timedFetch(`${server.baseUrl}/threads/search`, { method: "POST", headers, body: "{}" }, OUTAGE_ANSWER_MS);
// A health probe waits for its check (6 s at most when Postgres is frozen): not bound by the 5 s.
const checkDb = () => timedFetch(`${server.baseUrl}/ok?check_db=1`, {}, FROZEN_ANSWER_MS);

/** Calls the API every POLL_MS until `/ok?check_db=1` answers 200; returns every answer and the time. */
async function callUntilRecovered(): Promise<{ answers: TimedAnswer[]; recoveredMs: number }> {
  const started = performance.now();
  const answers: TimedAnswer[] = [];
  for (;;) {
    answers.push(await searchThreads());
    if ((await checkDb()).status === 200) return { answers, recoveredMs: performance.now() - started };
    if (performance.now() - started > RECOVERY_MS) throw new Error("Postgres did not come back within 60 s");
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "agentplane-pg-crash-"));
  // As root, embedded Postgres runs as the `postgres` user, which must be able to enter the directory.
  await chmod(dataDir, 0o711);
  server = await startEmbeddedServer(dataDir, API_KEY, { AGENTPLANE_SHUTDOWN_GRACE_MS: String(GRACE_MS) });
  client = new Client({ apiUrl: server.baseUrl, apiKey: API_KEY });
});

afterAll(async () => {
  if (server && server.child.exitCode === null) {
    server.child.kill("SIGKILL");
    await server.exited;
  }
  // The killed server's postmaster shuts down on its own (parent-death signal) and writes its
  // statistics as it goes: wait for it, or the directory changes under the removal.
  const postmaster = await postmasterPidOf(dataDir).catch(() => undefined);
  const deadline = Date.now() + 20_000;
  while (postmaster !== undefined && (await isAlive(postmaster)) && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 100));
  await rm(dataDir, { recursive: true, force: true });
});

describe("embedded Postgres under a running server", () => {
  // The recovery bound (60 s) plus the calls around it.
  it("is restarted after SIGKILL; calls meanwhile answer 503 with a detail within 5 s", {
    timeout: 90_000,
  }, async () => {
    const before = await client.threads.create({ metadata: { written: "before the crash" } });
    const pid = await postmasterPidOf(dataDir);

    process.kill(pid, "SIGKILL");
    const { answers, recoveredMs } = await callUntilRecovered().catch((error: unknown) => {
      throw new Error(`${String(error)}; the server's log ends with:\n${server.stderr().slice(-4000)}`);
    });
    console.log(`postmaster SIGKILL: /ok?check_db=1 answered 200 again after ${Math.round(recoveredMs)} ms`);

    for (const answer of answers) {
      expect([200, 503]).toContain(answer.status);
      expect(answer.ms).toBeLessThan(OUTAGE_ANSWER_MS);
      if (answer.status === 503)
        expect(answer.detail).toBe("the database is unreachable; retry in a few seconds");
    }
    expect(answers.some((a) => a.status === 503)).toBe(true);
    expect(recoveredMs).toBeLessThan(RECOVERY_MS);

    // The restart is logged as JSON lines, and the server works on the new postmaster. Lines reach
    // stderr in batches (up to FLUSH_AFTER_MS late), so the last of them may still be on its way.
    const logged = () => expect.poll(() => server.logs(), { timeout: FLUSH_AFTER_MS * 20 });
    await logged().toContainEqual(
      expect.objectContaining({
        level: "error",
        message: "embedded Postgres exited unexpectedly; restarting it",
        pid,
      }),
    );
    await logged().toContainEqual(
      expect.objectContaining({ level: "warn", message: "restarting embedded Postgres", attempt: 1 }),
    );
    await logged().toContainEqual(expect.objectContaining({ message: "embedded Postgres restarted" }));
    expect(await postmasterPidOf(dataDir)).not.toBe(pid);
    expect((await client.threads.get(before.thread_id)).metadata).toMatchObject({
      written: "before the crash",
    });
    const after = await client.threads.create({ metadata: { written: "after the crash" } });
    expect((await client.threads.get(after.thread_id)).thread_id).toBe(after.thread_id);
    expect(server.logs().filter((line) => line.message === "request failed")).toEqual([]);
  });

  it("answers 503 instead of hanging while Postgres is frozen, and recovers when it resumes", {
    timeout: 90_000,
  }, async () => {
    // The postmaster and every backend: queries on open connections hang too, not only new ones.
    const pid = await postmasterPidOf(dataDir);
    // The postmaster first: stopped, it forks no backend after its children are listed.
    process.kill(pid, "SIGSTOP");
    const cluster = [pid, ...(await childrenOf(pid))];
    for (const p of cluster.slice(1)) process.kill(p, "SIGSTOP");
    try {
      // A call made as Postgres freezes ends once the monitor notices (a check every 2 s, failing
      // after two attempts that time out after 3 s each).
      const first = await timedFetch(
        `${server.baseUrl}/threads`,
        { method: "POST", headers, body: "{}" },
        FROZEN_ANSWER_MS,
      );
      console.log(`a call made as Postgres froze answered ${first.status} after ${Math.round(first.ms)} ms`);
      expect(first.status).toBe(503);
      await expect
        .poll(async () => (await checkDb()).status, { timeout: 20_000, interval: POLL_MS })
        .toBe(503);
      // Once the outage is known, every call is refused at once, the REST-only adapters included.
      const search = await searchThreads();
      expect(search).toMatchObject({
        status: 503,
        detail: "the database is unreachable; retry in a few seconds",
      });
      expect(search.ms).toBeLessThan(REFUSED_AT_ONCE_MS);
      const ingest = await timedFetch(
        `${server.baseUrl}/api/v1/runs/batch`,
        { method: "POST", headers, body: JSON.stringify({ post: [] }) },
        OUTAGE_ANSWER_MS,
      );
      expect(ingest.status).toBe(503);
      expect(ingest.ms).toBeLessThan(REFUSED_AT_ONCE_MS);
      // The same over the Connect protocol, through our SDK.
      const sdk = createClient({ baseUrl: server.baseUrl, apiKey: API_KEY });
      await expect(sdk.agents.threads.searchThreads({})).rejects.toMatchObject({
        code: Code.Unavailable,
        rawMessage: "the database is unreachable; retry in a few seconds",
      });
    } finally {
      for (const p of cluster) process.kill(p, "SIGCONT");
    }
    const { recoveredMs } = await callUntilRecovered();
    console.log(`Postgres continued: /ok?check_db=1 answered 200 again after ${Math.round(recoveredMs)} ms`);
    expect((await searchThreads()).status).toBe(200);
  });

  // A server start on a loaded machine is part of it.
  it("exits within its grace on SIGTERM while Postgres is frozen, and stops Postgres", {
    timeout: 90_000,
  }, async () => {
    const pid = await postmasterPidOf(dataDir);
    // The postmaster first: stopped, it forks no backend after its children are listed.
    process.kill(pid, "SIGSTOP");
    const cluster = [pid, ...(await childrenOf(pid))];
    for (const p of cluster.slice(1)) process.kill(p, "SIGSTOP");
    await expect.poll(async () => (await checkDb()).status, { timeout: 20_000, interval: POLL_MS }).toBe(503);

    const started = performance.now();
    server.child.kill("SIGTERM");
    const how = await server.exited;
    const tookMs = performance.now() - started;
    console.log(`SIGTERM with Postgres frozen: exited after ${Math.round(tookMs)} ms (grace ${GRACE_MS} ms)`);
    expect(tookMs).toBeLessThan(GRACE_MS + EXIT_SLACK_MS);
    expect(how).toMatch(/^exit/);
    // Postgres was continued and shut down: no process of the cluster is left, frozen or not.
    await expect
      .poll(async () => (await Promise.all(cluster.map(isAlive))).some(Boolean), { timeout: 15_000 })
      .toBe(false);

    // The next start on the same directory finds every acknowledged write.
    server = await startEmbeddedServer(dataDir, API_KEY);
    client = new Client({ apiUrl: server.baseUrl, apiKey: API_KEY });
    const threads = await client.threads.search({ limit: 100 });
    const written = threads.map((t) => t.metadata?.written).filter((w) => w !== undefined);
    expect(written.sort()).toEqual(["after the crash", "before the crash"]);
  });
});
