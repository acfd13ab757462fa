/**
 * A busy thread through the official `@langchain/langgraph-sdk`: the four multitask strategies
 * (`reject` 409, `interrupt` keeps the first run's checkpoints, `rollback` deletes the first run and
 * its checkpoints, `enqueue` the default runs after it), one run at a time per thread in arrival
 * order, other threads' runs at the same time, thread status following its runs, and state updates
 * on a busy thread refused with 409.
 */
import type { Client, Run } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { langGraphFailure } from "../support/call-failures.js";
import { type RunsApp, startRunsApp, waitFor } from "../support/runs-app.js";

let app: RunsApp;
let sdk: Client;

beforeAll(async () => {
  app = await startRunsApp();
  sdk = app.sdk;
});
afterAll(async () => {
  await app?.t.stop();
});

/** Long enough that the first run is still sleeping while the test acts on it, even on a loaded machine. */
const LONG_SLEEP_MS = 20_000;

/** A new thread with a `sleepy` run that is already running (input message "A"). */
async function busyThread(sleepMs = LONG_SLEEP_MS): Promise<{ threadId: string; first: Run }> {
  const thread = await sdk.threads.create();
  const first = await sdk.runs.create(thread.thread_id, "sleepy", {
    input: { sleep_ms: sleepMs, messages: ["A"] },
  });
  await waitFor(
    () => sdk.runs.get(thread.thread_id, first.run_id),
    (run) => run.status === "running",
  );
  return { threadId: thread.thread_id, first };
}

/** The thread's `messages` channel. */
async function messagesOf(threadId: string): Promise<string[]> {
  return ((await sdk.threads.getState(threadId)).values as { messages: string[] }).messages;
}

describe("multitask strategies", () => {
  it("reject: a second run on a busy thread answers 409 and the first goes on", async () => {
    const { threadId, first } = await busyThread(3_000);
    expect((await sdk.threads.get(threadId)).status).toBe("busy");
    const failure = await langGraphFailure(
      sdk.runs.create(threadId, "sleepy", {
        input: { sleep_ms: 0, messages: ["B"] },
        multitaskStrategy: "reject",
      }),
    );
    expect(failure.status).toBe(409);
    expect(failure.detail).toMatch(/busy|running|in progress|multitask/i);
    await sdk.runs.join(threadId, first.run_id);
    expect((await sdk.runs.get(threadId, first.run_id)).status).toBe("success");
    expect(await messagesOf(threadId)).toEqual(["A", "slept 3000 ms"]);
    expect(await sdk.runs.list(threadId)).toHaveLength(1);
  });

  it("interrupt: the running run stops as interrupted, keeping its checkpoints, and the new one runs", async () => {
    const { threadId, first } = await busyThread();
    const second = await sdk.runs.create(threadId, "sleepy", {
      input: { sleep_ms: 0, messages: ["B"] },
      multitaskStrategy: "interrupt",
    });
    expect(second.multitask_strategy).toBe("interrupt");
    await sdk.runs.join(threadId, second.run_id);
    expect((await sdk.runs.get(threadId, first.run_id)).status).toBe("interrupted");
    expect((await sdk.runs.get(threadId, second.run_id)).status).toBe("success");
    expect(await messagesOf(threadId)).toEqual(["A", "B", "slept 0 ms"]);
    expect((await sdk.threads.get(threadId)).status).toBe("idle");
  });

  it("rollback: the running run and its checkpoints are deleted (GET is 404), and the new one runs", async () => {
    const { threadId, first } = await busyThread();
    const second = await sdk.runs.create(threadId, "sleepy", {
      input: { sleep_ms: 0, messages: ["B"] },
      multitaskStrategy: "rollback",
    });
    await sdk.runs.join(threadId, second.run_id);
    const gone = await langGraphFailure(sdk.runs.get(threadId, first.run_id));
    expect(gone.status).toBe(404);
    expect(await messagesOf(threadId)).toEqual(["B", "slept 0 ms"]);
    const runs = await sdk.runs.list(threadId);
    expect(runs.map((r) => r.run_id)).toEqual([second.run_id]);
    const history = await sdk.threads.getHistory(threadId, { limit: 100 });
    for (const checkpoint of history) expect(checkpoint.metadata?.run_id).not.toBe(first.run_id);
  });

  it("enqueue is the default: the second run waits as pending, then runs on the first one's result", async () => {
    const { threadId, first } = await busyThread(2_000);
    const second = await sdk.runs.create(threadId, "sleepy", { input: { sleep_ms: 0, messages: ["B"] } });
    expect(second.multitask_strategy).toBe("enqueue");
    expect((await sdk.runs.get(threadId, second.run_id)).status).toBe("pending");
    await sdk.runs.join(threadId, second.run_id);
    expect((await sdk.runs.get(threadId, first.run_id)).status).toBe("success");
    expect(await messagesOf(threadId)).toEqual(["A", "slept 2000 ms", "B", "slept 0 ms"]);
  });
});

describe("one run at a time per thread", () => {
  it("runs queued on one thread execute one by one in arrival order", async () => {
    const { threadId, first } = await busyThread(500);
    const queued: Run[] = [];
    for (const name of ["B", "C", "D"])
      queued.push(
        await sdk.runs.create(threadId, "sleepy", {
          input: { sleep_ms: 50, messages: [name] },
          multitaskStrategy: "enqueue",
        }),
      );
    const last = queued.at(-1);
    if (!last) throw new Error("no queued run");
    await sdk.runs.join(threadId, last.run_id);
    expect(await messagesOf(threadId)).toEqual([
      "A",
      "slept 500 ms",
      "B",
      "slept 50 ms",
      "C",
      "slept 50 ms",
      "D",
      "slept 50 ms",
    ]);
    const statuses = await Promise.all([first, ...queued].map((r) => sdk.runs.get(threadId, r.run_id)));
    expect(statuses.map((r) => r.status)).toEqual(["success", "success", "success", "success"]);
  });

  it("runs on different threads run at the same time", async () => {
    const [a, b] = await Promise.all([busyThread(), busyThread()]);
    if (!a || !b) throw new Error("no threads");
    // Both were seen running, so neither waited for the other; stop them to free the workers.
    const runA = await sdk.runs.get(a.threadId, a.first.run_id);
    const runB = await sdk.runs.get(b.threadId, b.first.run_id);
    expect([runA.status, runB.status]).toEqual(["running", "running"]);
    await sdk.runs.cancel(a.threadId, a.first.run_id, true);
    await sdk.runs.cancel(b.threadId, b.first.run_id, true);
  });
});

describe("thread status follows its runs", () => {
  it("busy while a run is pending or running; a state update then answers 409; idle after", async () => {
    const { threadId, first } = await busyThread(3_000);
    expect((await sdk.threads.get(threadId)).status).toBe("busy");
    const failure = await langGraphFailure(
      sdk.threads.updateState(threadId, { values: { messages: ["edit"] } }),
    );
    expect(failure.status).toBe(409);
    expect(failure.detail).toMatch(/busy|running|in progress/i);
    await sdk.runs.join(threadId, first.run_id);
    expect((await sdk.threads.get(threadId)).status).toBe("idle");
    await sdk.threads.updateState(threadId, { values: { messages: ["edit"] } });
    expect(await messagesOf(threadId)).toEqual(["A", "slept 3000 ms", "edit"]);
  });
});
