/**
 * kill -9 of a server started as `npm start` starts it, with embedded Postgres: its postmaster does
 * not outlive it (the parent-death signal), a postmaster that did outlive it (it could not act on the
 * signal) is stopped by the next start, and the next start on the same directory serves every write
 * acknowledged before the kill.
 */
import { chmod, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type EmbeddedServer,
  isAlive,
  postmasterPidOf,
  startEmbeddedServer,
} from "../support/embedded-server.js";

const API_KEY = "ap_pt_server_crash_test_key_01234";
/** Time a killed server's postmaster gets for its fast shutdown on a loaded machine. */
const POSTMASTER_EXIT_MS = 20_000;
/** How long writes go on before the kill: enough for dozens of acknowledged writes. */
const WRITING_MS = 1_500;

let dataDir: string;
let server: EmbeddedServer | undefined;
/** Ids of the threads and assistants whose creation was acknowledged, across every server. */
const acknowledged = { threads: new Set<string>(), assistants: new Set<string>() };

/** Creates threads and assistants one after another until `stop` resolves; records what was acknowledged. */
async function writeUntil(client: Client, stop: Promise<void>): Promise<void> {
  let stopped = false;
  void stop.then(() => {
    stopped = true;
  });
  for (let i = 0; !stopped; i++) {
    try {
      const thread = await client.threads.create({ metadata: { i } });
      acknowledged.threads.add(thread.thread_id);
      const assistant = await client.assistants.create({ graphId: "agent", name: `crash ${i}` });
      acknowledged.assistants.add(assistant.assistant_id);
    } catch {
      // The write the kill interrupted was not acknowledged: it may or may not exist.
      return;
    }
  }
}

/** Kills the server with SIGKILL while it is taking writes; resolves with its postmaster's pid. */
async function killWhileWriting(running: EmbeddedServer): Promise<number> {
  const pid = await postmasterPidOf(dataDir);
  const client = new Client({ apiUrl: running.baseUrl, apiKey: API_KEY, callerOptions: { maxRetries: 0 } });
  const killed = new Promise<void>((resolve) =>
    setTimeout(() => {
      running.child.kill("SIGKILL");
      resolve();
    }, WRITING_MS),
  );
  await Promise.all([writeUntil(client, killed), running.exited]);
  return pid;
}

/** Every acknowledged thread and assistant can be read from the server. */
async function expectAllAcknowledged(running: EmbeddedServer): Promise<void> {
  const client = new Client({ apiUrl: running.baseUrl, apiKey: API_KEY });
  const threads = await client.threads.search({ limit: 1000 });
  const assistants = await client.assistants.search({ graphId: "agent", limit: 1000 });
  const threadIds = new Set(threads.map((t) => t.thread_id));
  const assistantIds = new Set(assistants.map((a) => a.assistant_id));
  expect([...acknowledged.threads].filter((id) => !threadIds.has(id))).toEqual([]);
  expect([...acknowledged.assistants].filter((id) => !assistantIds.has(id))).toEqual([]);
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "agentplane-server-crash-"));
  // As root, embedded Postgres runs as the `postgres` user, which must be able to enter the directory.
  await chmod(dataDir, 0o711);
});

afterAll(async () => {
  if (server && server.child.exitCode === null) {
    server.child.kill("SIGTERM");
    await server.exited;
  }
  await rm(dataDir, { recursive: true, force: true });
});

describe("kill -9 of the server", () => {
  // Two server starts, a kill and a restart of Postgres: room for a loaded machine.
  it("takes its postmaster down with it, and the next start serves every acknowledged write", {
    timeout: 90_000,
  }, async () => {
    server = await startEmbeddedServer(dataDir, API_KEY);
    const pid = await killWhileWriting(server);
    expect(acknowledged.threads.size).toBeGreaterThan(0);
    console.log(
      `${acknowledged.threads.size} threads, ${acknowledged.assistants.size} assistants acknowledged before kill -9`,
    );

    const killedAt = performance.now();
    await expect.poll(() => isAlive(pid), { timeout: POSTMASTER_EXIT_MS, interval: 50 }).toBe(false);
    console.log(
      `postmaster exited ${Math.round(performance.now() - killedAt)} ms after its server's kill -9`,
    );

    server = await startEmbeddedServer(dataDir, API_KEY);
    await expectAllAcknowledged(server);
  });

  it("stops an orphaned postmaster on the next start, then serves every acknowledged write", {
    timeout: 90_000,
  }, async () => {
    const running = server ?? (await startEmbeddedServer(dataDir, API_KEY));
    // A frozen postmaster cannot act on the parent-death signal: it outlives the server, as any
    // postmaster does where that signal is unavailable.
    const orphan = await postmasterPidOf(dataDir);
    const serverPid = running.child.pid;
    const written = killWhileWriting(running);
    await new Promise((resolve) => setTimeout(resolve, WRITING_MS - 200));
    process.kill(orphan, "SIGSTOP");
    expect(await written).toBe(orphan);
    const stat = await readFile(`/proc/${orphan}/stat`, "utf8");
    expect(Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])).not.toBe(serverPid);
    expect(await isAlive(orphan)).toBe(true);

    const started = performance.now();
    server = await startEmbeddedServer(dataDir, API_KEY);
    console.log(`start over an orphaned postmaster took ${Math.round(performance.now() - started)} ms`);
    expect(await isAlive(orphan)).toBe(false);
    expect(server.logs()).toContainEqual(
      expect.objectContaining({
        level: "warn",
        message: "stopping the orphaned embedded Postgres left by a server that is gone",
        pid: orphan,
        server: serverPid,
      }),
    );
    await expectAllAcknowledged(server);
  });
});
