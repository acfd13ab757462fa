/**
 * Runs across processes on one database, through the official `@langchain/langgraph-sdk`: two API
 * processes (`role: "api"`, which execute nothing) and one worker (`role: "worker"`). A run created on
 * one API process executes on the worker and streams through the first; wait, join and cancel work
 * from the other API process; and a stream dropped mid-run and resumed with `Last-Event-ID` through
 * the other API process shows every event exactly once.
 */
import type { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  collect,
  eventNames,
  RUNS_GRAPHS,
  type StreamPart,
  sdkClient,
  waitFor,
} from "../support/runs-app.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

let api1: TestApp;
let api2: TestApp;
let worker: TestApp;
let sdk1: Client;
let sdk2: Client;

beforeAll(async () => {
  // The first API process creates the database and the admin key; the others join them.
  api1 = await startTestApp({ graphConfigPath: RUNS_GRAPHS, role: "api" });
  const shared = {
    graphConfigPath: RUNS_GRAPHS,
    databaseUrl: api1.databaseUrl,
    bootstrapApiKey: api1.adminKey,
  };
  api2 = await startTestApp({ ...shared, role: "api" });
  worker = await startTestApp({ ...shared, role: "worker" });
  sdk1 = sdkClient(api1.baseUrl, api1.adminKey);
  sdk2 = sdkClient(api2.baseUrl, api1.adminKey);
});
afterAll(async () => {
  await worker?.stop();
  await api2?.stop();
  await api1?.stop();
});

describe("api and worker processes on one database", () => {
  it("a run created on an API process executes on the worker and streams through the API process", async () => {
    const thread = await sdk1.threads.create();
    const parts = await collect(
      sdk1.runs.stream(thread.thread_id, "steps", {
        input: { topic: "far" },
        streamMode: ["values", "updates"],
      }),
    );
    expect(eventNames(parts)).toEqual(["metadata", "values", "updates", "values", "updates", "values"]);
    expect(parts.at(-1)?.data).toEqual({
      topic: "far",
      text: "published: draft about far",
      log: ["draft", "publish"],
    });
    const runId = parts[0]?.data.run_id as string;
    expect((await sdk2.runs.get(thread.thread_id, runId)).status).toBe("success");
  });

  it("wait on one API process, join and list on the other", async () => {
    const thread = await sdk1.threads.create();
    const values = await sdk1.runs.wait(thread.thread_id, "sleepy", {
      input: { sleep_ms: 200, messages: ["w"] },
    });
    expect(values).toEqual({ sleep_ms: 200, messages: ["w", "slept 200 ms"] });
    const run = await sdk2.runs.create(thread.thread_id, "sleepy", {
      input: { sleep_ms: 300, messages: ["j"] },
    });
    expect(await sdk1.runs.join(thread.thread_id, run.run_id)).toEqual({
      sleep_ms: 300,
      messages: ["w", "slept 200 ms", "j", "slept 300 ms"],
    });
    expect((await sdk2.runs.list(thread.thread_id)).map((r) => r.status)).toEqual(["success", "success"]);
  });

  it("a cancel sent to the other API process stops the run on the worker", async () => {
    const thread = await sdk1.threads.create();
    const run = await sdk1.runs.create(thread.thread_id, "sleepy", { input: { sleep_ms: 600_000 } });
    await waitFor(
      () => sdk2.runs.get(thread.thread_id, run.run_id),
      (r) => r.status === "running",
    );
    await sdk2.runs.cancel(thread.thread_id, run.run_id, true, "interrupt");
    expect((await sdk1.runs.get(thread.thread_id, run.run_id)).status).toBe("interrupted");
    expect((await sdk1.threads.get(thread.thread_id)).status).not.toBe("busy");
  });

  it("a stream dropped mid-run and resumed through the other API process shows every event exactly once", async () => {
    const ticks = 20;
    const thread = await sdk1.threads.create();
    const controller = new AbortController();
    const before: StreamPart[] = [];
    const dropAfter = 6;
    try {
      for await (const part of sdk1.runs.stream(thread.thread_id, "ticker", {
        input: { ticks, interval_ms: 100 },
        streamMode: ["custom", "values"],
        streamResumable: true,
        signal: controller.signal,
      })) {
        before.push(part as StreamPart);
        if (before.length === dropAfter) controller.abort();
      }
    } catch (error) {
      if (!controller.signal.aborted) throw error;
    }
    expect(before).toHaveLength(dropAfter);
    const runId = before[0]?.data.run_id as string;
    // The client went away, but on_disconnect defaults to continue: the run goes on.
    expect((await sdk2.runs.get(thread.thread_id, runId)).status).toMatch(/^(running|success)$/);

    const after = await collect(
      sdk2.runs.joinStream(thread.thread_id, runId, { lastEventId: before.at(-1)?.id ?? "" }),
    );
    const all = [...before, ...after];
    const ids = all.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(eventNames(all).filter((e) => e === "metadata")).toHaveLength(1);
    expect(all.filter((p) => p.event === "custom").map((p) => p.data.tick)).toEqual(
      Array.from({ length: ticks }, (_, i) => i),
    );
    expect(all.at(-1)).toMatchObject({ event: "values", data: { done: ticks } });

    // The whole stream, replayed through either API process, is the same sequence.
    const replay1 = await collect(sdk1.runs.joinStream(thread.thread_id, runId, { lastEventId: "-1" }));
    const replay2 = await collect(sdk2.runs.joinStream(thread.thread_id, runId, { lastEventId: "-1" }));
    expect(replay1).toEqual(all);
    expect(replay2).toEqual(all);
  });

  it("on_disconnect=cancel: dropping the stream cancels the run", async () => {
    const thread = await sdk1.threads.create();
    const controller = new AbortController();
    let runId = "";
    try {
      for await (const part of sdk1.runs.stream(thread.thread_id, "ticker", {
        input: { ticks: 200, interval_ms: 100 },
        streamMode: "custom",
        onDisconnect: "cancel",
        signal: controller.signal,
      })) {
        const p = part as StreamPart;
        if (p.event === "metadata") runId = p.data.run_id;
        if (p.event === "custom") controller.abort();
      }
    } catch (error) {
      if (!controller.signal.aborted) throw error;
    }
    const ended = await waitFor(
      () => sdk2.runs.get(thread.thread_id, runId),
      (r) => r.status !== "running" && r.status !== "pending",
    );
    expect(ended.status).toBe("interrupted");
  });
});
