/**
 * Stateless runs through the official `@langchain/langgraph-sdk`: `runs.wait`, `runs.stream` and
 * `runs.create` with no thread (a temporary thread, deleted after with `on_completion=delete`, the
 * default, kept with `keep`), `runs.createBatch` (`POST /runs/batch`), and a graph factory that
 * receives the run's config.
 */
import type { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  collect,
  eventNames,
  human,
  humanOut,
  type RunsApp,
  startRunsApp,
  waitFor,
  withoutIds,
} from "../support/runs-app.js";

let app: RunsApp;
let sdk: Client;

beforeAll(async () => {
  app = await startRunsApp();
  sdk = app.sdk;
});
afterAll(async () => {
  await app?.t.stop();
});

/** The SDK types `onCompletion` wrongly ("complete" | "continue"); the wire values are delete | keep. */
const KEEP = "keep" as unknown as "complete";

/** A stateless run as the server describes it in JSON. */
interface RunJson {
  run_id: string;
  thread_id: string;
  status: string;
}

describe("stateless runs", () => {
  it("wait answers the final values and leaves no thread behind (on_completion=delete by default)", async () => {
    const before = await sdk.threads.count();
    let created: { run_id: string; thread_id?: string } | undefined;
    const values = await sdk.runs.wait(null, "steps", {
      input: { topic: "air" },
      onRunCreated: (meta) => {
        created = meta;
      },
    });
    expect(values).toEqual({ topic: "air", text: "published: draft about air", log: ["draft", "publish"] });
    expect(created?.run_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(created?.thread_id).toBeUndefined();
    await waitFor(
      () => sdk.threads.count(),
      (n) => n === before,
    );
  });

  it("stream sends metadata then the values, and Content-Location names /runs/{run_id}", async () => {
    const res = await app.t.fetch("/runs/stream", {
      method: "POST",
      body: JSON.stringify({ assistant_id: "chat", input: { messages: [human("hello", "m1")] } }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    expect(res.headers.get("content-location")).toMatch(/^\/runs\/[0-9a-f-]{36}$/);
    await res.body?.cancel();

    const parts = await collect(
      sdk.runs.stream(null, "chat", { input: { messages: [human("hello", "m1")] } }),
    );
    expect(eventNames(parts)).toEqual(["metadata", "values", "values"]);
    expect(withoutIds(parts)[1]).toEqual({ event: "values", data: { messages: [humanOut("hello", "m1")] } });
  });

  it("create with on_completion=keep: the run's thread stays with the run's state", async () => {
    const run = await sdk.runs.create(null, "steps", { input: { topic: "sea" }, onCompletion: KEEP });
    expect(run.thread_id).toMatch(/^[0-9a-f-]{36}$/);
    const values = await sdk.runs.join(run.thread_id, run.run_id);
    expect(values).toMatchObject({ text: "published: draft about sea" });
    const thread = await sdk.threads.get(run.thread_id);
    expect(thread.status).toBe("idle");
    expect(thread.values).toEqual(values);
    expect((await sdk.runs.get(run.thread_id, run.run_id)).status).toBe("success");
  });

  it("create with the default on_completion: the thread is deleted once the run ends", async () => {
    const run = await sdk.runs.create(null, "steps", { input: { topic: "sky" } });
    await waitFor(
      () =>
        sdk.threads.get(run.thread_id).then(
          () => "present",
          (e: { status?: number }) => String(e.status),
        ),
      (s) => s === "404",
    );
  });

  it("an error of a stateless wait reaches the SDK as the graph's error", async () => {
    await expect(sdk.runs.wait(null, "failing", { input: {} })).rejects.toThrow("CustomError: Boo!");
  });
});

describe("runs.createBatch (POST /runs/batch)", () => {
  it("creates every run through the SDK, each on a thread of its own", async () => {
    const runs = (await sdk.runs.createBatch([
      { assistantId: "steps", input: { topic: "one" } },
      { assistantId: "steps", input: { topic: "two" } },
      { assistantId: "sleepy", input: { sleep_ms: 0 } },
    ])) as unknown as RunJson[];
    expect(runs).toHaveLength(3);
    expect(new Set(runs.map((r) => r.thread_id)).size).toBe(3);
    expect(new Set(runs.map((r) => r.run_id)).size).toBe(3);
    for (const run of runs) expect(["pending", "running", "success"]).toContain(run.status);
    // on_completion=delete is the default: each temporary thread goes once its run has finished.
    for (const run of runs)
      await waitFor(
        () =>
          sdk.threads.get(run.thread_id).then(
            () => "present",
            (e: { status?: number }) => String(e.status),
          ),
        (s) => s === "404",
      );
  });

  it("with on_completion=keep every run's result can be joined", async () => {
    const res = await app.t.fetch("/runs/batch", {
      method: "POST",
      body: JSON.stringify([
        { assistant_id: "steps", input: { topic: "red" }, on_completion: "keep" },
        {
          assistant_id: "factory",
          input: {},
          config: { configurable: { persona: "bob" } },
          on_completion: "keep",
        },
      ]),
    });
    expect(res.status).toBe(200);
    const [red, bob] = (await res.json()) as RunJson[];
    if (!red || !bob) throw new Error("batch answered fewer runs");
    expect(await sdk.runs.join(red.thread_id, red.run_id)).toMatchObject({
      text: "published: draft about red",
    });
    expect(await sdk.runs.join(bob.thread_id, bob.run_id)).toEqual({ greeting: "hello from bob" });
  });

  it("an empty batch or one bad item answers 422 and creates nothing", async () => {
    const before = await sdk.threads.count();
    const empty = await app.t.fetch("/runs/batch", { method: "POST", body: "[]" });
    expect(empty.status).toBe(422);
    const bad = await app.t.fetch("/runs/batch", {
      method: "POST",
      body: JSON.stringify([
        { assistant_id: "steps", input: { topic: "fine" } },
        { assistant_id: "steps", stream_mode: "shouting" },
      ]),
    });
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as { detail: string }).detail).toMatch(/shouting/);
    expect(await sdk.threads.count()).toBe(before);
  });
});

describe("graph factories", () => {
  it("a factory export is built with the run's config", async () => {
    expect(
      await sdk.runs.wait(null, "factory", { input: {}, config: { configurable: { persona: "ann" } } }),
    ).toEqual({
      greeting: "hello from ann",
    });
    const thread = await sdk.threads.create();
    expect(
      await sdk.runs.wait(thread.thread_id, "factory", {
        input: {},
        config: { configurable: { persona: "cy" } },
      }),
    ).toEqual({ greeting: "hello from cy" });
  });

  it("an assistant's configurable reaches the factory, and the run's config overrides it", async () => {
    const assistant = await sdk.assistants.create({
      graphId: "factory",
      config: { configurable: { persona: "dee" } },
    });
    expect(await sdk.runs.wait(null, assistant.assistant_id, { input: {} })).toEqual({
      greeting: "hello from dee",
    });
    expect(
      await sdk.runs.wait(null, assistant.assistant_id, {
        input: {},
        config: { configurable: { persona: "eve" } },
      }),
    ).toEqual({ greeting: "hello from eve" });
  });
});
