/**
 * Multitask strategies on a busy thread, through the official SDK: `reject` answers 409 and leaves
 * the running run alone; `interrupt` stops it (interrupted, its checkpoints kept) and runs the new
 * one; `rollback` stops it and deletes it (404 after); `enqueue` runs the new one after it, in order.
 */
import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GraphFixture, writeGraphFixture } from "../support/graph-fixture.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** Generous: a loaded 2-core machine runs several suites at once. */
const TIMEOUT = 60_000;

/** `slow`: sleeps `ms` (stopping when the run is cancelled), then appends `tag` to `log`. */
const SLOW_GRAPH = `
import { Annotation, START, StateGraph } from "@langchain/langgraph";
const State = Annotation.Root({
  ms: Annotation(),
  tag: Annotation(),
  log: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
});
export const graph = new StateGraph(State)
  .addNode("work", async (state, config) => {
    await new Promise((resolve, reject) => {
      const timer = setTimeout(resolve, state.ms ?? 0);
      config.signal?.addEventListener("abort", () => { clearTimeout(timer); reject(new Error("stopped")); });
    });
    return { log: [state.tag] };
  })
  .addEdge(START, "work")
  .compile();
`;

let fixture: GraphFixture;
let t: TestApp;
let sdk: Client;

beforeAll(async () => {
  fixture = await writeGraphFixture({ "slow.mjs": SLOW_GRAPH }, { graphs: { slow: "./slow.mjs:graph" } });
  t = await startTestApp({ graphConfigPath: fixture.configFile });
  sdk = new Client({ apiUrl: t.baseUrl, apiKey: t.adminKey, callerOptions: { maxRetries: 0 } });
}, TIMEOUT);
afterAll(async () => {
  await t?.stop();
  await fixture?.remove();
});

/** A thread with a `slow` run that is running (sleeping `ms`). */
async function busyThread(ms = 20_000) {
  const thread = await sdk.threads.create();
  const run = await sdk.runs.create(thread.thread_id, "slow", { input: { ms, tag: "first" } });
  const deadline = Date.now() + 30_000;
  while ((await sdk.runs.get(thread.thread_id, run.run_id)).status !== "running") {
    if (Date.now() > deadline) throw new Error("the first run never started");
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return { threadId: thread.thread_id, first: run.run_id };
}

describe("multitask strategies", () => {
  it(
    "reject: 409 with a detail; the running run goes on",
    async () => {
      const { threadId, first } = await busyThread();
      const res = await t.fetch(`/threads/${threadId}/runs`, {
        method: "POST",
        body: JSON.stringify({
          assistant_id: "slow",
          input: { ms: 0, tag: "second" },
          multitask_strategy: "reject",
        }),
      });
      expect(res.status).toBe(409);
      expect(((await res.json()) as { detail: string }).detail).toMatch(/busy/);
      expect((await sdk.runs.get(threadId, first)).status).toBe("running");
      expect((await sdk.threads.get(threadId)).status).toBe("busy");
      await sdk.runs.cancel(threadId, first, true);
    },
    TIMEOUT,
  );

  it(
    "interrupt: the running run ends interrupted, the new one runs",
    async () => {
      const { threadId, first } = await busyThread();
      const second = await sdk.runs.create(threadId, "slow", {
        input: { ms: 0, tag: "second" },
        multitaskStrategy: "interrupt",
      });
      const output = (await sdk.runs.join(threadId, second.run_id)) as { log: string[] };
      expect(output.log).toEqual(["second"]);
      expect((await sdk.runs.get(threadId, first)).status).toBe("interrupted");
      expect((await sdk.threads.get(threadId)).status).toBe("idle");
    },
    TIMEOUT,
  );

  it(
    "rollback: the running run is deleted (404), the new one runs",
    async () => {
      const { threadId, first } = await busyThread();
      const second = await sdk.runs.create(threadId, "slow", {
        input: { ms: 0, tag: "second" },
        multitaskStrategy: "rollback",
      });
      await sdk.runs.join(threadId, second.run_id);
      const res = await t.fetch(`/threads/${threadId}/runs/${first}`);
      expect(res.status).toBe(404);
      expect((await sdk.runs.list(threadId)).map((r) => r.run_id)).toEqual([second.run_id]);
    },
    TIMEOUT,
  );

  it(
    "enqueue (the default): runs one after another, in arrival order",
    async () => {
      const { threadId, first } = await busyThread(500);
      const second = await sdk.runs.create(threadId, "slow", { input: { ms: 0, tag: "second" } });
      const third = await sdk.runs.create(threadId, "slow", { input: { ms: 0, tag: "third" } });
      const output = (await sdk.runs.join(threadId, third.run_id)) as { log: string[] };
      expect(output.log).toEqual(["first", "second", "third"]);
      for (const id of [first, second.run_id, third.run_id])
        expect((await sdk.runs.get(threadId, id)).status).toBe("success");
    },
    TIMEOUT,
  );
});
