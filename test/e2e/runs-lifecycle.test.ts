/**
 * How runs end and where they start, through the official `@langchain/langgraph-sdk`: deleting a
 * thread or an assistant stops their runs, a run past its timeout ends in error, a run from an
 * earlier checkpoint of its thread forks from there, `interrupt_before: "*"`, and the body fields
 * every SDK sends (`durability`, the older `checkpoint_during`, `feedback_keys`, `langsmith_tracer`)
 * are taken.
 */
import type { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_RUN_SETTINGS, DEFAULT_WEBHOOK_SETTINGS } from "../../server/config.js";
import { langGraphFailure } from "../support/call-failures.js";
import { collect, type RunsApp, startRunsApp, waitFor } from "../support/runs-app.js";

let app: RunsApp;
let sdk: Client;

beforeAll(async () => {
  // Webhooks off: the webhook below is only stored (its host does not resolve offline); delivery is
  // tested in webhooks.test.ts.
  app = await startRunsApp({ webhooks: { ...DEFAULT_WEBHOOK_SETTINGS, enabled: false } });
  sdk = app.sdk;
});
afterAll(async () => {
  await app?.t.stop();
});

/** How long the runs that a deletion must stop sleep before they would write their mark. */
const MARK_AFTER_MS = 1_500;

/** A `sleepy` run on a new thread that puts `mark` in the store after MARK_AFTER_MS, waited until running. */
async function markingRun(mark: string, assistantId = "sleepy") {
  const thread = await sdk.threads.create();
  const run = await sdk.runs.create(thread.thread_id, assistantId, {
    input: { sleep_ms: MARK_AFTER_MS, mark },
  });
  await waitFor(
    () => sdk.runs.get(thread.thread_id, run.run_id),
    (r) => r.status === "running",
  );
  return { threadId: thread.thread_id, runId: run.run_id };
}

describe("deleting what a run runs on stops it", () => {
  it("a deleted thread's running run never finishes, while a run on another thread does", async () => {
    const doomed = await markingRun("thread-deleted");
    const control = await markingRun("thread-kept");
    await sdk.threads.delete(doomed.threadId);
    // The control started after the doomed run, so once it has finished the doomed one would have too.
    await sdk.runs.join(control.threadId, control.runId);
    expect(await sdk.store.getItem(["marks"], "thread-kept")).toMatchObject({
      value: { slept: MARK_AFTER_MS },
    });
    expect(await sdk.store.getItem(["marks"], "thread-deleted")).toBeNull();
    expect((await langGraphFailure(sdk.runs.get(doomed.threadId, doomed.runId))).status).toBe(404);
  });

  it("a deleted assistant's running run never finishes", async () => {
    const assistant = await sdk.assistants.create({ graphId: "sleepy" });
    const doomed = await markingRun("assistant-deleted", assistant.assistant_id);
    const control = await markingRun("assistant-kept");
    await sdk.assistants.delete(assistant.assistant_id);
    await sdk.runs.join(control.threadId, control.runId);
    expect(await sdk.store.getItem(["marks"], "assistant-kept")).not.toBeNull();
    expect(await sdk.store.getItem(["marks"], "assistant-deleted")).toBeNull();
    const after = await sdk.runs
      .get(doomed.threadId, doomed.runId)
      .catch((e: { status?: number }) => e.status);
    if (typeof after === "object") expect(after.status).not.toMatch(/^(running|success)$/);
    else expect(after).toBe(404);
  });
});

describe("run timeout", () => {
  it("a run past its timeout ends in error", async () => {
    const strict = await startRunsApp({ runs: { ...DEFAULT_RUN_SETTINGS, timeoutSeconds: 1 } });
    try {
      const thread = await strict.sdk.threads.create();
      const run = await strict.sdk.runs.create(thread.thread_id, "sleepy", {
        input: { sleep_ms: 30_000, mark: "timed-out" },
      });
      const result = (await strict.sdk.runs.join(thread.thread_id, run.run_id)) as { __error__?: unknown };
      expect(result.__error__).toBeDefined();
      expect((await strict.sdk.runs.get(thread.thread_id, run.run_id)).status).toBe("error");
      expect((await strict.sdk.threads.get(thread.thread_id)).status).toBe("error");
      expect(await strict.sdk.store.getItem(["marks"], "timed-out")).toBeNull();
    } finally {
      await strict.t.stop();
    }
  });
});

describe("where a run starts", () => {
  it("checkpoint_id of an earlier checkpoint of the thread forks the run from there", async () => {
    const thread = await sdk.threads.create();
    await sdk.runs.wait(thread.thread_id, "steps", { input: { topic: "fork" } });
    const history = await sdk.threads.getHistory(thread.thread_id, { limit: 20 });
    const afterDraft = history.find((s) => s.next.length === 1 && s.next[0] === "publish");
    if (!afterDraft) throw new Error("no checkpoint before publish");
    const forked = await sdk.runs.wait(thread.thread_id, "steps", {
      input: null,
      checkpointId: afterDraft.checkpoint.checkpoint_id ?? undefined,
    });
    // From the checkpoint before publish: publish once more on top of the draft, not of the result.
    expect(forked).toEqual({ topic: "fork", text: "published: draft about fork", log: ["draft", "publish"] });
    const again = await sdk.runs.wait(thread.thread_id, "steps", {
      input: null,
      checkpoint: afterDraft.checkpoint,
    });
    expect(again).toEqual(forked);
  });

  it("a branch edit as useStream sends it (checkpoint without thread_id, messages-tuple) forks the chat", async () => {
    const thread = await sdk.threads.create();
    await sdk.runs.wait(thread.thread_id, "chat", {
      input: { messages: [{ role: "human", content: "one", id: "h1" }] },
    });
    await sdk.runs.wait(thread.thread_id, "chat", {
      input: { messages: [{ role: "human", content: "two", id: "h2" }] },
    });
    const history = await sdk.threads.getHistory(thread.thread_id, { limit: 20 });
    // The state after the first exchange: two messages and nothing left to run.
    const afterFirst = history.find(
      (s) => (s.values as { messages: unknown[] }).messages.length === 2 && s.next.length === 0,
    );
    if (!afterFirst) throw new Error("no checkpoint after the first exchange");
    const { thread_id: _dropped, ...checkpoint } = afterFirst.checkpoint;
    const parts = await collect(
      sdk.runs.stream(thread.thread_id, "chat", {
        input: { messages: [{ role: "human", content: "edited two", id: "h2b" }] },
        checkpoint,
        streamMode: ["values", "messages-tuple"],
        streamResumable: true,
        onDisconnect: "continue",
      }),
    );
    expect(parts.filter((p) => p.event === "error")).toEqual([]);
    const final = parts.filter((p) => p.event === "values").at(-1)?.data as {
      messages: { content: string }[];
    };
    expect(final.messages.map((m) => m.content)).toEqual(["one", "Hi!", "edited two", "Hi!"]);
    expect(parts.some((p) => p.event === "messages")).toBe(true);
  });

  it('interrupt_before "*" stops before the first node', async () => {
    const thread = await sdk.threads.create();
    await sdk.runs.wait(thread.thread_id, "steps", { input: { topic: "all" }, interruptBefore: "*" });
    const state = await sdk.threads.getState(thread.thread_id);
    expect(state.next).toEqual(["draft"]);
    expect(state.values).toEqual({ topic: "all", log: [] });
  });
});

describe("every body field the SDKs send is taken", () => {
  it("durability sync, async and exit, and the older checkpoint_during, all run to the same result", async () => {
    const expected = { topic: "d", text: "published: draft about d", log: ["draft", "publish"] };
    for (const durability of ["sync", "async", "exit"] as const) {
      const thread = await sdk.threads.create();
      expect(
        await sdk.runs.wait(thread.thread_id, "steps", { input: { topic: "d" }, durability }),
        durability,
      ).toEqual(expected);
    }
    for (const checkpointDuring of [true, false]) {
      const thread = await sdk.threads.create();
      expect(
        await sdk.runs.wait(thread.thread_id, "steps", { input: { topic: "d" }, checkpointDuring }),
      ).toEqual(expected);
    }
  });

  it("feedback_keys, langsmith_tracer, webhook and metadata are accepted and kept on the run", async () => {
    const thread = await sdk.threads.create();
    const run = await sdk.runs.create(thread.thread_id, "steps", {
      input: { topic: "f" },
      feedbackKeys: ["correctness"],
      // Typed as the langsmith tracer class, but the SDK only reads its projectName and exampleId.
      _langsmithTracer: { projectName: "bench-project" } as never,
      webhook: "https://example.com/hook",
      metadata: { tag: "kept" },
    });
    await sdk.runs.join(thread.thread_id, run.run_id);
    const got = await sdk.runs.get(thread.thread_id, run.run_id);
    expect(got.status).toBe("success");
    expect(got.metadata).toMatchObject({ tag: "kept" });
    expect((got as unknown as { kwargs: Record<string, unknown> }).kwargs).toMatchObject({
      webhook: "https://example.com/hook",
      feedback_keys: ["correctness"],
    });
  });
});
