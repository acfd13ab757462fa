/**
 * Cancelling runs through the official `@langchain/langgraph-sdk`: `runs.cancel` with both actions
 * (interrupt keeps the run and its checkpoints, rollback deletes them), with and without `wait`, on
 * a pending and on a running run; bulk cancel (`runs.cancelMany`) by run ids and by status;
 * `after_seconds`; and a cancel that comes after the run finished, which answers 409.
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

/** Far longer than any test: a run that only ends when cancelled. */
const ENDLESS_MS = 600_000;
/** A delay no test reaches: a run that stays pending until cancelled. */
const FAR_FUTURE_S = 3_600;

/** A `sleepy` run on a new thread, waited until `running`. */
async function runningRun(): Promise<Run> {
  const thread = await sdk.threads.create();
  const run = await sdk.runs.create(thread.thread_id, "sleepy", {
    input: { sleep_ms: ENDLESS_MS, messages: ["A"] },
  });
  return waitFor(
    () => sdk.runs.get(thread.thread_id, run.run_id),
    (r) => r.status === "running",
  );
}

describe("runs.cancel", () => {
  it("interrupt (the default) without wait: 202, then the run ends interrupted with its checkpoints kept", async () => {
    const run = await runningRun();
    const res = await app.t.fetch(`/threads/${run.thread_id}/runs/${run.run_id}/cancel`, { method: "POST" });
    expect(res.status).toBe(202);
    const ended = await waitFor(
      () => sdk.runs.get(run.thread_id, run.run_id),
      (r) => r.status !== "running",
    );
    expect(ended.status).toBe("interrupted");
    const state = await sdk.threads.getState(run.thread_id);
    expect(state.values).toMatchObject({ sleep_ms: ENDLESS_MS, messages: ["A"] });
    expect(state.next).toEqual(["sleep"]);
    expect((await sdk.threads.get(run.thread_id)).status).not.toBe("busy");
  });

  it("interrupt with wait: returns once the run has stopped", async () => {
    const run = await runningRun();
    await sdk.runs.cancel(run.thread_id, run.run_id, true, "interrupt");
    expect((await sdk.runs.get(run.thread_id, run.run_id)).status).toBe("interrupted");
    expect((await sdk.threads.get(run.thread_id)).status).not.toBe("busy");
  });

  it("rollback with wait: the run and its checkpoints are gone", async () => {
    const run = await runningRun();
    await sdk.runs.cancel(run.thread_id, run.run_id, true, "rollback");
    expect((await langGraphFailure(sdk.runs.get(run.thread_id, run.run_id))).status).toBe(404);
    expect(await sdk.runs.list(run.thread_id)).toEqual([]);
    const state = await sdk.threads.getState(run.thread_id);
    expect(state.values).toEqual({});
    expect((await sdk.threads.get(run.thread_id)).status).toBe("idle");
  });

  it("a pending run (after_seconds) cancelled is interrupted and never runs", async () => {
    const thread = await sdk.threads.create();
    const run = await sdk.runs.create(thread.thread_id, "sleepy", {
      input: { sleep_ms: 0, messages: ["never"] },
      afterSeconds: FAR_FUTURE_S,
    });
    expect(run.status).toBe("pending");
    expect((await sdk.threads.get(thread.thread_id)).status).toBe("busy");
    await sdk.runs.cancel(thread.thread_id, run.run_id, true);
    expect((await sdk.runs.get(thread.thread_id, run.run_id)).status).toBe("interrupted");
    expect((await sdk.threads.get(thread.thread_id)).status).toBe("idle");
    expect((await sdk.threads.getState(thread.thread_id)).values).toEqual({});
  });

  it("a cancel that comes after the run finished answers 409, not 500", async () => {
    const thread = await sdk.threads.create();
    const run = await sdk.runs.create(thread.thread_id, "sleepy", { input: { sleep_ms: 0 } });
    await sdk.runs.join(thread.thread_id, run.run_id);
    const failure = await langGraphFailure(sdk.runs.cancel(thread.thread_id, run.run_id));
    expect(failure.status).toBe(409);
    expect(failure.detail).toMatch(/success|finished|already|not (pending|running)/i);
    expect((await sdk.runs.get(thread.thread_id, run.run_id)).status).toBe("success");
  });

  it("cancelling a run of another thread or an unknown run is 404", async () => {
    const run = await runningRun();
    const other = await sdk.threads.create();
    expect((await langGraphFailure(sdk.runs.cancel(other.thread_id, run.run_id))).status).toBe(404);
    const unknown = "01900000-0000-7000-8000-000000000000";
    expect((await langGraphFailure(sdk.runs.cancel(run.thread_id, unknown))).status).toBe(404);
    await sdk.runs.cancel(run.thread_id, run.run_id, true);
  });

  it("rejects an unknown action with 422 naming the allowed ones", async () => {
    const run = await runningRun();
    const res = await app.t.fetch(`/threads/${run.thread_id}/runs/${run.run_id}/cancel?action=explode`, {
      method: "POST",
    });
    expect(res.status).toBe(422);
    expect(((await res.json()) as { detail: string }).detail).toMatch(
      /interrupt.*rollback|rollback.*interrupt/,
    );
    expect((await sdk.runs.get(run.thread_id, run.run_id)).status).toBe("running");
    await sdk.runs.cancel(run.thread_id, run.run_id, true);
  });
});

describe("bulk cancel (runs.cancelMany)", () => {
  it("by thread and run ids: those runs end interrupted, the others go on", async () => {
    const thread = await sdk.threads.create();
    const pending: Run[] = [];
    for (const name of ["A", "B", "C"])
      pending.push(
        await sdk.runs.create(thread.thread_id, "sleepy", {
          input: { sleep_ms: 0, messages: [name] },
          afterSeconds: FAR_FUTURE_S,
        }),
      );
    const [a, b, c] = pending;
    if (!a || !b || !c) throw new Error("runs missing");
    await sdk.runs.cancelMany({ threadId: thread.thread_id, runIds: [a.run_id, b.run_id] });
    const statuses = await waitFor(
      () => Promise.all(pending.map((r) => sdk.runs.get(thread.thread_id, r.run_id).then((x) => x.status))),
      (s) => s[0] !== "pending" && s[1] !== "pending",
    );
    expect(statuses).toEqual(["interrupted", "interrupted", "pending"]);
    await sdk.runs.cancel(thread.thread_id, c.run_id, true);
  });

  it("by status: every pending run of the workspace is cancelled, running ones are not", async () => {
    const running = await runningRun();
    const threads = await Promise.all([sdk.threads.create(), sdk.threads.create()]);
    const pending = await Promise.all(
      threads.map((t) =>
        sdk.runs.create(t.thread_id, "sleepy", { input: { sleep_ms: 0 }, afterSeconds: FAR_FUTURE_S }),
      ),
    );
    await sdk.runs.cancelMany({ status: "pending" });
    for (const run of pending)
      await waitFor(
        () => sdk.runs.get(run.thread_id, run.run_id),
        (r) => r.status === "interrupted",
      );
    expect((await sdk.runs.get(running.thread_id, running.run_id)).status).toBe("running");

    await sdk.runs.cancelMany({ status: "running", action: "interrupt" });
    await waitFor(
      () => sdk.runs.get(running.thread_id, running.run_id),
      (r) => r.status === "interrupted",
    );
  });

  it("rejects a body with both run ids and status, or neither, with 422", async () => {
    const thread = await sdk.threads.create();
    const both = await app.t.fetch("/runs/cancel", {
      method: "POST",
      body: JSON.stringify({ thread_id: thread.thread_id, run_ids: [], status: "all" }),
    });
    expect(both.status).toBe(422);
    expect(((await both.json()) as { detail: string }).detail).toMatch(/status|run_ids/);
    const neither = await app.t.fetch("/runs/cancel", { method: "POST", body: "{}" });
    expect(neither.status).toBe(422);
    const badStatus = await app.t.fetch("/runs/cancel", {
      method: "POST",
      body: JSON.stringify({ status: "done" }),
    });
    expect(badStatus.status).toBe(422);
    expect(((await badStatus.json()) as { detail: string }).detail).toMatch(/pending|running|all/);
  });
});

describe("after_seconds", () => {
  it("a delayed run stays pending until its time, then runs", async () => {
    const thread = await sdk.threads.create();
    const started = Date.now();
    const run = await sdk.runs.create(thread.thread_id, "sleepy", {
      input: { sleep_ms: 0, messages: ["later"] },
      afterSeconds: 2,
    });
    expect(run.status).toBe("pending");
    expect((await sdk.runs.get(thread.thread_id, run.run_id)).status).toBe("pending");
    const values = await sdk.runs.join(thread.thread_id, run.run_id);
    // The run may not start before its delay; 1.9 s allows for clocks rounding to milliseconds.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_900);
    expect(values).toEqual({ sleep_ms: 0, messages: ["later", "slept 0 ms"] });
    expect((await sdk.runs.get(thread.thread_id, run.run_id)).status).toBe("success");
  });
});
