/**
 * Durability across a crash: an API process (in-process, role `api`) and a worker process (a child
 * process, role `worker`) on one database. The worker is killed with SIGKILL in the middle of a
 * three-step run; a worker started afterwards takes the run over once its lease lapses, resumes it
 * from the last checkpoint (the finished step does not run again) and completes it exactly once.
 * A SIGTERM'd worker hands its run back and loses nothing; given a background grace, it lets a run
 * that ends within it finish first.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AgentplaneProcess, startAgentplaneProcess } from "../support/agentplane-process.js";
import { type GraphFixture, writeGraphFixture } from "../support/graph-fixture.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** Generous: two processes and a lease to lapse on a loaded 2-core machine. */
const TIMEOUT = 120_000;

/**
 * `steps`: a → b → c, each sleeping `pause_ms` and appending its name, so a checkpoint exists after
 * each step and a repeated step would show twice.
 */
const STEPS_GRAPH = `
import { Annotation, START, StateGraph } from "@langchain/langgraph";
const State = Annotation.Root({
  done: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
  pause_ms: Annotation(),
});
const step = (name) => async (state) => {
  await new Promise((resolve) => setTimeout(resolve, state.pause_ms ?? 0));
  return { done: [name] };
};
export const graph = new StateGraph(State)
  .addNode("a", step("a"))
  .addNode("b", step("b"))
  .addNode("c", step("c"))
  .addEdge(START, "a")
  .addEdge("a", "b")
  .addEdge("b", "c")
  .compile();
`;

let fixture: GraphFixture;
let api: TestApp;
let sdk: Client;
let dataDir: string;
const workers: AgentplaneProcess[] = [];

/**
 * Starts a worker process on the test database with a short lease (quick takeover) and, unless
 * given, no background grace (a stopping worker hands its runs back at once).
 */
function startWorker(graceSeconds = 0): Promise<AgentplaneProcess> {
  return startAgentplaneProcess({
    AGENTPLANE_ROLE: "worker",
    AGENTPLANE_CONFIG: fixture.configFile,
    DATABASE_URL: api.databaseUrl,
    AGENTPLANE_DATA_DIR: dataDir,
    AGENTPLANE_RUN_LEASE_SECONDS: "2",
    BG_JOB_SHUTDOWN_GRACE_PERIOD_SECS: String(graceSeconds),
  }).then((worker) => {
    workers.push(worker);
    return worker;
  });
}

/** Reads `read` until `done` holds, with a deadline (states change within seconds). */
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`not reached in ${ms} ms; last: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

beforeAll(async () => {
  fixture = await writeGraphFixture({ "steps.mjs": STEPS_GRAPH }, { graphs: { steps: "./steps.mjs:graph" } });
  dataDir = await mkdtemp(join(tmpdir(), "agentplane-run-crash-"));
  api = await startTestApp({ role: "api", graphConfigPath: fixture.configFile });
  sdk = new Client({ apiUrl: api.baseUrl, apiKey: api.adminKey, callerOptions: { maxRetries: 0 } });
}, TIMEOUT);

afterAll(async () => {
  for (const w of workers)
    if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill("SIGKILL");
  await api?.stop();
  await fixture?.remove();
  await rm(dataDir, { recursive: true, force: true });
});

describe("a worker stopped within its background grace", () => {
  it(
    "lets a run that ends inside the grace period finish there, once, and then exits",
    async () => {
      // Only this worker may take the run: stop any left from another test.
      for (const w of workers.filter((w) => w.child.exitCode === null && w.child.signalCode === null)) {
        w.child.kill("SIGTERM");
        await w.exited;
      }
      const worker = await startWorker(60);
      const thread = await sdk.threads.create();
      const run = await sdk.runs.create(thread.thread_id, "steps", {
        input: { pause_ms: 700 },
        streamResumable: true,
      });
      await until(
        () => sdk.runs.get(thread.thread_id, run.run_id),
        (r) => r.status === "running",
      );
      worker.child.kill("SIGTERM");
      // It exits only once the run has ended, well inside the 60 s grace.
      expect(await worker.exited).toBe("exit 0");
      const ended = await sdk.runs.get(thread.thread_id, run.run_id);
      expect(ended.status).toBe("success");
      expect(((await sdk.threads.getState(thread.thread_id)).values as { done: string[] }).done).toEqual([
        "a",
        "b",
        "c",
      ]);
      // One attempt: the run was neither handed back nor started again.
      const attempts: (number | undefined)[] = [];
      for await (const part of sdk.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: "-1" }))
        if (part.event === "metadata") attempts.push((part.data as { attempt?: number }).attempt);
      expect(attempts).toEqual([1]);
    },
    TIMEOUT,
  );
});

describe("a worker killed mid-run", () => {
  it(
    "a restarted worker resumes the run from its last checkpoint and completes it exactly once",
    async () => {
      const first = await startWorker();
      const thread = await sdk.threads.create();
      const run = await sdk.runs.create(thread.thread_id, "steps", {
        input: { pause_ms: 1500 },
        streamResumable: true,
      });
      // Step a has its checkpoint: kill the worker while b sleeps.
      await until(
        () => sdk.threads.getState(thread.thread_id),
        (s) => ((s.values as { done?: string[] }).done ?? []).includes("a"),
      );
      first.child.kill("SIGKILL");
      await first.exited;
      expect((await sdk.runs.get(thread.thread_id, run.run_id)).status).toBe("running");

      await startWorker();
      const output = (await sdk.runs.join(thread.thread_id, run.run_id)) as { done: string[] };
      expect(output.done).toEqual(["a", "b", "c"]);
      const runs = await sdk.runs.list(thread.thread_id);
      expect(runs.map((r) => [r.run_id, r.status])).toEqual([[run.run_id, "success"]]);
      expect((await sdk.threads.get(thread.thread_id)).status).toBe("idle");

      // The resumable stream shows both attempts, each opened by its metadata event, and ends once.
      const events: { event: string; data: { attempt?: number } }[] = [];
      for await (const part of sdk.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: "-1" }))
        events.push(part as never);
      const attempts = events.filter((e) => e.event === "metadata").map((e) => e.data.attempt);
      expect(attempts).toEqual([1, 2]);
      expect(events.filter((e) => e.event === "error")).toEqual([]);
    },
    TIMEOUT,
  );

  it(
    "a worker stopped with SIGTERM hands its run back, and another completes it",
    async () => {
      const worker =
        workers.find((w) => w.child.exitCode === null && w.child.signalCode === null) ??
        (await startWorker());
      const thread = await sdk.threads.create();
      const run = await sdk.runs.create(thread.thread_id, "steps", { input: { pause_ms: 1500 } });
      await until(
        () => sdk.runs.get(thread.thread_id, run.run_id),
        (r) => r.status === "running",
      );
      worker.child.kill("SIGTERM");
      expect(await worker.exited).toBe("exit 0");
      // Handed back at once (grace 0): pending again, not lost and not failed.
      expect((await sdk.runs.get(thread.thread_id, run.run_id)).status).toBe("pending");
      await startWorker();
      const output = (await sdk.runs.join(thread.thread_id, run.run_id)) as { done: string[] };
      expect(output.done).toContain("c");
      expect((await sdk.runs.get(thread.thread_id, run.run_id)).status).toBe("success");
    },
    TIMEOUT,
  );
});
