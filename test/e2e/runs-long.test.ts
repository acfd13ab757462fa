/**
 * Long background runs through the official `@langchain/langgraph-sdk`: graphs sleeping 1 s, 8 s and
 * 12 s at the same time, each awaited with `runs.join` (which the SDK sends with no client timeout
 * and the server holds open until the result), then checked for status and state.
 */
import type { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, expect, it } from "vitest";
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

/** The sleeps the reference servers' own suite uses for long runs. */
const SLEEPS_MS = [1_000, 8_000, 12_000];

// Concurrent runs on their own threads: the file takes as long as the longest sleep, not the sum.
it.concurrent.for(SLEEPS_MS)(
  "a run sleeping %i ms is awaited with join",
  { timeout: 60_000 },
  async (sleepMs) => {
    const thread = await sdk.threads.create();
    const started = Date.now();
    const run = await sdk.runs.create(thread.thread_id, "sleepy", {
      input: { sleep_ms: sleepMs, messages: ["go"] },
    });
    expect(["pending", "running"]).toContain(run.status);
    const values = await sdk.runs.join(thread.thread_id, run.run_id);
    expect(Date.now() - started).toBeGreaterThanOrEqual(sleepMs);
    expect(values).toEqual({ sleep_ms: sleepMs, messages: ["go", `slept ${sleepMs} ms`] });
    expect((await sdk.runs.get(thread.thread_id, run.run_id)).status).toBe("success");
    const state = await sdk.threads.getState(thread.thread_id);
    expect(state.values).toEqual(values);
    expect(state.next).toEqual([]);
    expect((await sdk.threads.get(thread.thread_id)).status).toBe("idle");
  },
);
