/**
 * Thread-run creation under concurrent creators, through the official `@langchain/langgraph-sdk`,
 * on two processes (both `role: "all"`, so each starts runs in its own slots) on one database: the
 * pipelined creation transaction keeps one run at a time per thread in arrival order, loses and
 * doubles nothing, lets exactly one of many simultaneous `reject` creations through, and leaves
 * nothing behind when it refuses a run after taking the thread's lock.
 */
import type { Client, Run } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { langGraphFailure } from "../support/call-failures.js";
import { RUNS_GRAPHS, sdkClient, waitFor } from "../support/runs-app.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

let first: TestApp;
let second: TestApp;
let sdks: Client[];

beforeAll(async () => {
  first = await startTestApp({ graphConfigPath: RUNS_GRAPHS });
  second = await startTestApp({
    graphConfigPath: RUNS_GRAPHS,
    databaseUrl: first.databaseUrl,
    bootstrapApiKey: first.adminKey,
  });
  sdks = [sdkClient(first.baseUrl, first.adminKey), sdkClient(second.baseUrl, first.adminKey)];
});
afterAll(async () => {
  await second?.stop();
  await first?.stop();
});

function sdkAt(index: number): Client {
  const sdk = sdks[index % sdks.length];
  if (!sdk) throw new Error("no SDK client");
  return sdk;
}

/** The thread's `messages` channel. */
async function messagesOf(threadId: string): Promise<string[]> {
  return ((await sdkAt(0).threads.getState(threadId)).values as { messages: string[] }).messages;
}

/** Creators per process, each creating its runs one after another. */
const CREATORS_PER_PROCESS = 4;
/** Runs each creator creates. */
const RUNS_PER_CREATOR = 5;
/** Each run's sleep: long enough that runs queue up behind each other while creators go on. */
const RUN_SLEEP_MS = 20;

describe("thread-run creation from two processes at once", () => {
  it("runs every run once, one at a time, each creator's runs in the order it created them", async () => {
    const thread = await sdkAt(0).threads.create();
    const creators = Array.from({ length: 2 * CREATORS_PER_PROCESS }, async (_, creator) => {
      const runs: Run[] = [];
      for (let k = 0; k < RUNS_PER_CREATOR; k++)
        runs.push(
          await sdkAt(creator).runs.create(thread.thread_id, "sleepy", {
            input: { sleep_ms: RUN_SLEEP_MS, messages: [`c${creator}r${k}`] },
            multitaskStrategy: "enqueue",
          }),
        );
      return runs;
    });
    const runs = (await Promise.all(creators)).flat();
    for (const run of runs) await sdkAt(0).runs.join(thread.thread_id, run.run_id);

    const messages = await messagesOf(thread.thread_id);
    // Strict alternation of a run's name and its sleep: no run started before the one before it ended.
    const names = messages.filter((_, i) => i % 2 === 0);
    expect(messages.filter((_, i) => i % 2 === 1)).toEqual(names.map(() => `slept ${RUN_SLEEP_MS} ms`));
    // Every run once: none lost, none twice.
    const expected = runs.map((_, i) => {
      const creator = Math.floor(i / RUNS_PER_CREATOR);
      return `c${creator}r${i % RUNS_PER_CREATOR}`;
    });
    expect([...names].sort()).toEqual([...expected].sort());
    // A creator's run created after another's answer executes after it.
    for (let creator = 0; creator < 2 * CREATORS_PER_PROCESS; creator++) {
      const own = names.filter((name) => name.startsWith(`c${creator}r`));
      expect(own).toEqual(Array.from({ length: RUNS_PER_CREATOR }, (_, k) => `c${creator}r${k}`));
    }
    const listed = await sdkAt(1).runs.list(thread.thread_id, { limit: 100 });
    expect(listed).toHaveLength(runs.length);
    expect(new Set(listed.map((r) => r.status))).toEqual(new Set(["success"]));
    expect((await sdkAt(1).threads.get(thread.thread_id)).status).toBe("idle");
  });

  it("lets exactly one of many simultaneous reject creations on an idle thread through", async () => {
    const thread = await sdkAt(0).threads.create();
    const attempts = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        sdkAt(i)
          .runs.create(thread.thread_id, "sleepy", {
            input: { sleep_ms: 1_000, messages: [`r${i}`] },
            multitaskStrategy: "reject",
          })
          .then(
            (run) => ({ run, status: 200 }),
            async (error: unknown) => ({
              run: undefined,
              status: (await langGraphFailure(Promise.reject(error))).status,
            }),
          ),
      ),
    );
    const created = attempts.flatMap((a) => (a.run ? [a.run] : []));
    expect(created).toHaveLength(1);
    expect(attempts.filter((a) => !a.run).map((a) => a.status)).toEqual(Array(11).fill(409));
    const [only] = created;
    if (!only) throw new Error("no run created");
    await sdkAt(1).runs.join(thread.thread_id, only.run_id);
    expect(await sdkAt(0).runs.list(thread.thread_id)).toHaveLength(1);
    expect((await messagesOf(thread.thread_id)).length).toBe(2);
  });

  it("leaves no run and an idle thread when it refuses a run after locking the thread's queue", async () => {
    const thread = await sdkAt(0).threads.create();
    const failure = await langGraphFailure(
      sdkAt(1).runs.create(thread.thread_id, "00000000-0000-4000-8000-000000000000", {
        input: { sleep_ms: 0, messages: ["never"] },
      }),
    );
    expect(failure.status).toBe(404);
    expect(failure.detail).toMatch(/assistant .* not found/);
    expect(await sdkAt(0).runs.list(thread.thread_id)).toHaveLength(0);
    expect((await sdkAt(0).threads.get(thread.thread_id)).status).toBe("idle");
    // Every connection went back to the pool outside a transaction: creations on both processes work.
    for (const index of [0, 1, 1, 0]) {
      const run = await sdkAt(index).runs.create(thread.thread_id, "sleepy", {
        input: { sleep_ms: 0, messages: [`after${index}`] },
      });
      await sdkAt(index).runs.join(thread.thread_id, run.run_id);
    }
    await waitFor(
      () => sdkAt(0).threads.get(thread.thread_id),
      (t) => t.status === "idle",
    );
    expect(await messagesOf(thread.thread_id)).toEqual([
      "after0",
      "slept 0 ms",
      "after1",
      "slept 0 ms",
      "after1",
      "slept 0 ms",
      "after0",
      "slept 0 ms",
    ]);
  });
});
