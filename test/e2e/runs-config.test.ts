/**
 * What a run carries and how it is listed, through the official `@langchain/langgraph-sdk`: the Run
 * resource (get, list with limit/offset/status/select, delete), run metadata and thread metadata,
 * `config` and `context` reaching the graph, run `configurable` values not copied into the thread's
 * config, request headers reaching `configurable` only through `http.configurable_headers`, and
 * `FF_RICH_THREADS=false`.
 */
import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_RUN_SETTINGS } from "../../server/config.js";
import { systemAssistantId } from "../../server/runtime/system-assistant-id.js";
import { langGraphFailure } from "../support/call-failures.js";
import { type RunsApp, startRunsApp } from "../support/runs-app.js";

let app: RunsApp;
let sdk: Client;

beforeAll(async () => {
  app = await startRunsApp();
  sdk = app.sdk;
});
afterAll(async () => {
  await app?.t.stop();
});

/** What the echo graph reports. */
interface Echo {
  context: unknown;
  configurable: Record<string, unknown>;
}

/** The final values of an echo run. */
async function echoed(result: Promise<unknown>): Promise<Echo> {
  return (await result) as Echo;
}

describe("the Run resource", () => {
  it("get answers the run as the SDK types it, with kwargs and a UUIDv7 id", async () => {
    const thread = await sdk.threads.create();
    const run = await sdk.runs.create(thread.thread_id, "steps", {
      input: { topic: "shape" },
      metadata: { origin: "test" },
      streamMode: ["values", "updates"],
    });
    expect(run).toMatchObject({
      thread_id: thread.thread_id,
      assistant_id: systemAssistantId("steps"),
      status: "pending",
      multitask_strategy: "enqueue",
      metadata: expect.objectContaining({ origin: "test" }),
    });
    expect(run.run_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(run.created_at).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(run.updated_at).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect((run as unknown as { kwargs: Record<string, unknown> }).kwargs).toMatchObject({
      input: { topic: "shape" },
      stream_mode: ["values", "updates"],
    });
    await sdk.runs.join(thread.thread_id, run.run_id);
    const done = await sdk.runs.get(thread.thread_id, run.run_id);
    expect(done).toMatchObject({ run_id: run.run_id, status: "success", created_at: run.created_at });
    expect(new Date(done.updated_at).getTime()).toBeGreaterThanOrEqual(new Date(run.created_at).getTime());
  });

  it("list pages newest first and filters by status; select returns only the fields asked", async () => {
    const thread = await sdk.threads.create();
    const ids: string[] = [];
    for (const topic of ["a", "b", "c"]) {
      const run = await sdk.runs.create(thread.thread_id, "steps", { input: { topic } });
      ids.push(run.run_id);
    }
    const pending = await sdk.runs.create(thread.thread_id, "steps", {
      input: { topic: "d" },
      afterSeconds: 3_600,
    });
    const [, , last] = ids;
    if (!last) throw new Error("no runs");
    await sdk.runs.join(thread.thread_id, last);

    const all = await sdk.runs.list(thread.thread_id);
    expect(all.map((r) => r.run_id)).toEqual([pending.run_id, ...[...ids].reverse()]);
    const page = await sdk.runs.list(thread.thread_id, { limit: 2, offset: 1 });
    expect(page.map((r) => r.run_id)).toEqual([ids[2], ids[1]]);
    const successes = await sdk.runs.list(thread.thread_id, { status: "success" });
    expect(successes.map((r) => r.run_id).sort()).toEqual([...ids].sort());
    expect((await sdk.runs.list(thread.thread_id, { status: "pending" })).map((r) => r.run_id)).toEqual([
      pending.run_id,
    ]);
    const selected = await sdk.runs.list(thread.thread_id, { select: ["run_id", "status"], limit: 1 });
    expect(selected).toEqual([{ run_id: pending.run_id, status: "pending" }]);
    await sdk.runs.cancel(thread.thread_id, pending.run_id, true);
  });

  it("delete removes a finished run (then 404) and refuses an unknown one", async () => {
    const thread = await sdk.threads.create();
    const run = await sdk.runs.create(thread.thread_id, "steps", { input: { topic: "gone" } });
    await sdk.runs.join(thread.thread_id, run.run_id);
    await sdk.runs.delete(thread.thread_id, run.run_id);
    expect((await langGraphFailure(sdk.runs.get(thread.thread_id, run.run_id))).status).toBe(404);
    expect(await sdk.runs.list(thread.thread_id)).toEqual([]);
    expect((await langGraphFailure(sdk.runs.delete(thread.thread_id, run.run_id))).status).toBe(404);
  });
});

describe("config, context and metadata reach the graph", () => {
  it("context, run config and the ids in configurable arrive; configurable is not copied into the thread", async () => {
    const thread = await sdk.threads.create({ metadata: { owner: "ann" } });
    let runId = "";
    const values = await echoed(
      sdk.runs.wait(thread.thread_id, "echo", {
        input: {},
        context: { tone: "dry" },
        config: { configurable: { model: "small", secret_token: "s3" } },
        metadata: { purpose: "echo" },
        onRunCreated: (meta) => {
          runId = meta.run_id;
        },
      }),
    );
    expect(values.context).toEqual({ tone: "dry" });
    expect(values.configurable).toMatchObject({
      model: "small",
      secret_token: "s3",
      run_id: runId,
      thread_id: thread.thread_id,
      graph_id: "echo",
      assistant_id: systemAssistantId("echo"),
    });
    const after = await sdk.threads.get(thread.thread_id);
    expect(after.metadata).toMatchObject({
      owner: "ann",
      graph_id: "echo",
      assistant_id: systemAssistantId("echo"),
    });
    expect(JSON.stringify(after.config ?? {})).not.toContain("secret_token");
    expect((await sdk.runs.get(thread.thread_id, runId)).metadata).toMatchObject({ purpose: "echo" });
  });

  it("an assistant's context is the default a run's own context overrides key by key", async () => {
    const assistant = await sdk.assistants.create({ graphId: "echo", context: { tone: "warm", lang: "en" } });
    const values = await echoed(
      sdk.runs.wait(null, assistant.assistant_id, {
        input: {},
        context: { tone: "cold" },
      }),
    );
    expect(values.context).toEqual({ tone: "cold", lang: "en" });
    expect(values.configurable.assistant_id).toBe(assistant.assistant_id);
  });

  it("request headers reach configurable only as http.configurable_headers allows", async () => {
    const client = new Client({
      apiUrl: app.t.baseUrl,
      apiKey: app.t.adminKey,
      defaultHeaders: { "x-team-name": "blue", "x-team-secret": "hidden", "x-other": "nope" },
      callerOptions: { maxRetries: 0 },
    });
    const values = await echoed(client.runs.wait(null, "echo", { input: {} }));
    expect(values.configurable["x-team-name"]).toBe("blue");
    expect(values.configurable).not.toHaveProperty("x-team-secret");
    expect(values.configurable).not.toHaveProperty("x-other");
    expect(values.configurable).not.toHaveProperty("x-api-key");
  });
});

describe("FF_RICH_THREADS=false", () => {
  it("creating a run leaves the thread's metadata alone", async () => {
    const plain = await startRunsApp({ runs: { ...DEFAULT_RUN_SETTINGS, richThreads: false } });
    try {
      const thread = await plain.sdk.threads.create({ metadata: { owner: "bo" } });
      await plain.sdk.runs.wait(thread.thread_id, "steps", { input: { topic: "plain" } });
      expect((await plain.sdk.threads.get(thread.thread_id)).metadata).toEqual({ owner: "bo" });
    } finally {
      await plain.t.stop();
    }
  });
});
