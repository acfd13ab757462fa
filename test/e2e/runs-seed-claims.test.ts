/**
 * Claims of the Agent Server seed that no other test pins down, through the official
 * `@langchain/langgraph-sdk`: `runs/wait` honours `on_disconnect`; a deadlock while cancelling a
 * run answers 409; a stream event larger than the 128 MB ceiling is skipped while the run and its
 * other events go on.
 */
import { Client } from "@langchain/langgraph-sdk";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_EVENT_BYTES } from "../../server/runtime/run-event-writer.js";
import { type GraphFixture, writeGraphFixture } from "../support/graph-fixture.js";
import { untilAdvisoryLockWaited } from "../support/lock-waits.js";
import { waitFor } from "../support/runs-app.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const GRAPHS = `
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";

const Sleepy = Annotation.Root({ sleep_ms: Annotation(), mark: Annotation() });
/** Sleeps sleep_ms (stopping early when cancelled), then puts ["marks", mark] in the store. */
export const sleepy = new StateGraph(Sleepy)
  .addNode("sleep", async (state, config) => {
    await new Promise((resolve, reject) => {
      const timer = setTimeout(resolve, state.sleep_ms ?? 0);
      config.signal?.addEventListener("abort", () => {
        clearTimeout(timer);
        reject(config.signal.reason ?? new Error("aborted"));
      });
    });
    await config.store?.put(["marks"], state.mark ?? "none", { slept: true });
    return {};
  })
  .addEdge(START, "sleep")
  .addEdge("sleep", END)
  .compile();

const Huge = Annotation.Root({ bytes: Annotation(), done: Annotation() });
/** Writes a custom event of about \`bytes\` characters, then a small one, then ends. */
export const huge = new StateGraph(Huge)
  .addNode("emit", async (state, config) => {
    config.writer?.({ big: "x".repeat(state.bytes) });
    config.writer?.({ small: "after" });
    return { done: true };
  })
  .addEdge(START, "emit")
  .addEdge("emit", END)
  .compile();
`;

let fixture: GraphFixture;
let t: TestApp;
let sdk: Client;
let sql: postgres.Sql;

beforeAll(async () => {
  fixture = await writeGraphFixture(
    { "graphs.mjs": GRAPHS },
    { graphs: { sleepy: "./graphs.mjs:sleepy", huge: "./graphs.mjs:huge" } },
  );
  t = await startTestApp({ graphConfigPath: fixture.configFile });
  sdk = new Client({ apiUrl: t.baseUrl, apiKey: t.adminKey, callerOptions: { maxRetries: 0 } });
  sql = postgres(t.databaseUrl, { max: 3, onnotice: () => {} });
});
afterAll(async () => {
  await sql?.end();
  await t?.stop();
  await fixture?.remove();
});

/** Waits for `threadId`'s only run to be running; answers its id. */
async function runningRun(threadId: string): Promise<string> {
  const [run] = await waitFor(
    () => sdk.runs.list(threadId),
    (runs) => runs[0]?.status === "running",
  );
  return run?.run_id ?? "";
}

/** Status and message of a rejected SDK call (200 when it succeeded). */
async function outcomeOf(call: Promise<unknown>): Promise<{ status: number | undefined; message: string }> {
  try {
    await call;
    return { status: 200, message: "" };
  } catch (error) {
    return { status: (error as { status?: number }).status, message: String((error as Error).message) };
  }
}

describe("runs/wait", () => {
  it("honours on_disconnect: cancel stops the run when the waiting client goes, continue lets it finish", async () => {
    const waitAndLeave = async (onDisconnect: "cancel" | "continue", mark: string) => {
      const thread = await sdk.threads.create();
      const controller = new AbortController();
      const waiting = sdk.runs.wait(thread.thread_id, "sleepy", {
        input: { sleep_ms: 3_000, mark },
        onDisconnect,
        signal: controller.signal,
      });
      const runId = await runningRun(thread.thread_id);
      controller.abort();
      await expect(waiting).rejects.toThrow();
      return waitFor(
        () => sdk.runs.get(thread.thread_id, runId),
        (r) => r.status !== "running" && r.status !== "pending",
      );
    };
    expect((await waitAndLeave("cancel", "cancelled")).status).toBe("interrupted");
    expect(await sdk.store.getItem(["marks"], "cancelled")).toBeNull();
    expect((await waitAndLeave("continue", "continued")).status).toBe("success");
    expect((await sdk.store.getItem(["marks"], "continued"))?.value).toEqual({ slept: true });
  });
});

describe("cancelling a run", () => {
  it("answers 409 when the cancel deadlocks with a concurrent transaction", async () => {
    const thread = await sdk.threads.create();
    // Pending for an hour: no worker touches it meanwhile.
    const run = await sdk.runs.create(thread.thread_id, "sleepy", { input: {}, afterSeconds: 3600 });
    const workspaceId = (await t.client().iam.identity.whoami({})).workspace?.id ?? "";
    const holder = await sql.reserve();
    const other = await sql.reserve();
    try {
      // A cycle the cancel closes, so that Postgres fails the cancel. Postgres looks for a cycle
      // once per wait, deadlock_timeout after it began, in the waiting session; so the cancel's
      // wait for the run's row must begin after the other side of the cycle already waits:
      // 1. `holder` holds the thread's queue lock; `other` holds the run's row;
      // 2. the cancel waits for the queue lock behind `holder`, then `other` queues behind it;
      // 3. `holder` lets go: the cancel takes the queue lock and waits for the row, which closes the
      //    cycle. `other` never looks for it (deadlock_timeout of a minute), the cancel does.
      await holder`begin`;
      await holder`select agentplane_lock_thread_queue(${workspaceId}::uuid, ${thread.thread_id}::uuid)`;
      await other`set deadlock_timeout = '60s'`;
      await other`begin`;
      await other`select 1 from agent_runs where run_id = ${run.run_id} for update`;
      const cancelling = outcomeOf(sdk.runs.cancel(thread.thread_id, run.run_id));
      await untilAdvisoryLockWaited(sql, 1);
      const queueLock = outcomeOf(
        other`select agentplane_lock_thread_queue(${workspaceId}::uuid, ${thread.thread_id}::uuid)`.execute(),
      );
      await untilAdvisoryLockWaited(sql, 2);
      await holder`rollback`;
      const refused = await cancelling;
      expect(refused.status).toBe(409);
      expect(refused.message).toContain(
        "the run changed while this request ran (a race with its end); retry",
      );
      expect((await queueLock).status).toBe(200);
    } finally {
      await holder`rollback`;
      await other`rollback`;
      holder.release();
      other.release();
    }
    // Nothing was changed by the failed cancel; cancelling again succeeds.
    expect((await sdk.runs.get(thread.thread_id, run.run_id)).status).toBe("pending");
    await sdk.runs.cancel(thread.thread_id, run.run_id);
    expect((await sdk.runs.get(thread.thread_id, run.run_id)).status).toBe("interrupted");
  });
});

describe("the 128 MB event ceiling", () => {
  it("skips a stream event larger than 128 MB; the run and its other events go on", async () => {
    const parts: { event: string; data: unknown }[] = [];
    for await (const part of sdk.runs.stream(null, "huge", {
      input: { bytes: MAX_EVENT_BYTES },
      streamMode: ["custom", "values"],
    }))
      parts.push({ event: part.event, data: part.data });
    const custom = parts.filter((p) => p.event === "custom").map((p) => p.data);
    // The big event's JSON (`{"big":"xx…"}`) is past the ceiling; the small one is delivered.
    expect(custom).toEqual([{ small: "after" }]);
    expect(parts.at(-2)).toMatchObject({ event: "values", data: { done: true } });
    expect(parts.at(-1)).toMatchObject({ event: "end", data: { status: "success" } });
    expect(parts.map((p) => p.event)).not.toContain("error");
  }, 60_000);
});
