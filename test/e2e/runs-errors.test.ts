/**
 * Failures: a graph that throws (the `error` event, run and thread status `error`, wait and join
 * answering the error), GraphRecursionError through `runs.wait`, and bad input on every run route
 * answered with a 4xx whose `detail` says what to fix, never a 500, and with nothing created.
 */
import type { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collect, type RunsApp, startRunsApp, withoutIds } from "../support/runs-app.js";

let app: RunsApp;
let sdk: Client;

beforeAll(async () => {
  app = await startRunsApp();
  sdk = app.sdk;
});
afterAll(async () => {
  await app?.t.stop();
});

/** POSTs `body` to `path`; returns the status and the `detail` of the JSON answer. */
async function post(path: string, body: unknown): Promise<{ status: number; detail: string }> {
  const res = await app.t.fetch(path, {
    method: "POST",
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let detail = "";
  try {
    detail = String((JSON.parse(text) as { detail?: unknown }).detail ?? "");
  } catch {
    detail = `<not JSON: ${text.slice(0, 200)}>`;
  }
  return { status: res.status, detail };
}

describe("a graph that throws", () => {
  it("stream ends with an error event {error, message}; run and thread turn error", async () => {
    const thread = await sdk.threads.create();
    let runId = "";
    const parts = await collect(
      sdk.runs.stream(thread.thread_id, "failing", {
        input: { value: "x" },
        onRunCreated: (meta) => {
          runId = meta.run_id;
        },
      }),
    );
    expect(withoutIds(parts)).toEqual([
      { event: "metadata", data: { run_id: runId, attempt: 1 } },
      { event: "values", data: { value: "x" } },
      { event: "error", data: { error: "CustomError", message: "Boo!" } },
    ]);
    expect((await sdk.runs.get(thread.thread_id, runId)).status).toBe("error");
    expect((await sdk.threads.get(thread.thread_id)).status).toBe("error");
  });

  it("create then join answers the error; joinStream of the finished run shows nothing more", async () => {
    const thread = await sdk.threads.create();
    const run = await sdk.runs.create(thread.thread_id, "failing", { input: {}, streamResumable: true });
    const result = await sdk.runs.join(thread.thread_id, run.run_id);
    expect(result).toEqual({ __error__: { error: "CustomError", message: "Boo!" } });
    expect((await sdk.runs.get(thread.thread_id, run.run_id)).status).toBe("error");
    const replay = await collect(sdk.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: "-1" }));
    expect(replay.at(-1)).toMatchObject({ event: "error", data: { error: "CustomError", message: "Boo!" } });
  });

  it("wait with a recursion limit that is hit: GraphRecursionError, run and thread error", async () => {
    const thread = await sdk.threads.create();
    let runId = "";
    await expect(
      sdk.runs.wait(thread.thread_id, "loop", {
        input: {},
        config: { recursion_limit: 5 },
        onRunCreated: (meta) => {
          runId = meta.run_id;
        },
      }),
    ).rejects.toThrow(/^GraphRecursionError: Recursion limit of 5 reached/);
    expect((await sdk.runs.get(thread.thread_id, runId)).status).toBe("error");
    expect((await sdk.threads.get(thread.thread_id)).status).toBe("error");

    const raw = (await sdk.runs.wait(thread.thread_id, "loop", {
      input: {},
      config: { recursion_limit: 3 },
      raiseError: false,
    })) as { __error__?: { error: string; message: string } };
    expect(raw.__error__?.error).toBe("GraphRecursionError");
    expect(raw.__error__?.message).toMatch(/Recursion limit of 3/);
  });

  it("a thread in error runs again and turns idle when that run succeeds", async () => {
    const thread = await sdk.threads.create();
    await sdk.runs.wait(thread.thread_id, "failing", { input: {}, raiseError: false });
    expect((await sdk.threads.get(thread.thread_id)).status).toBe("error");
    await sdk.runs.wait(thread.thread_id, "steps", { input: { topic: "retry" } });
    expect((await sdk.threads.get(thread.thread_id)).status).toBe("idle");
  });
});

describe("bad input answers a clear 4xx, never 500", () => {
  it("an unknown assistant or graph is 404 naming it", async () => {
    const thread = await sdk.threads.create();
    const unknownGraph = await post(`/threads/${thread.thread_id}/runs`, {
      assistant_id: "no_such_graph",
      input: {},
    });
    expect(unknownGraph.status).toBe(404);
    expect(unknownGraph.detail).toMatch(/no_such_graph/);
    const unknownId = "01900000-0000-7000-8000-0000000000aa";
    for (const path of ["/runs/wait", "/runs/stream", "/runs", `/threads/${thread.thread_id}/runs/wait`]) {
      const answer = await post(path, { assistant_id: unknownId, input: {} });
      expect(answer, path).toEqual({ status: 404, detail: expect.stringContaining(unknownId) });
    }
    expect(await sdk.runs.list(thread.thread_id)).toEqual([]);
  });

  it("an assistant id shaped like a UUID but not one is 404 naming it, not a database error", async () => {
    const thread = await sdk.threads.create();
    const notUuid = "-".repeat(36);
    for (const path of ["/runs/wait", "/runs/stream", "/runs", `/threads/${thread.thread_id}/runs/wait`]) {
      const answer = await post(path, { assistant_id: notUuid, input: {} });
      expect(answer, path).toEqual({ status: 404, detail: expect.stringContaining(notUuid) });
    }
    const cron = await post("/runs/crons", { assistant_id: notUuid, schedule: "* * * * *" });
    expect(cron).toEqual({ status: 404, detail: expect.stringContaining(notUuid) });
    const search = await post("/runs/crons/search", { assistant_id: notUuid });
    expect(search).toEqual({ status: 422, detail: expect.stringContaining(notUuid) });
    expect(await sdk.runs.list(thread.thread_id)).toEqual([]);
  });

  it("an unknown thread is 404 unless if_not_exists=create, which creates it", async () => {
    const missing = "01900000-0000-7000-8000-0000000000bb";
    const answer = await post(`/threads/${missing}/runs/wait`, {
      assistant_id: "steps",
      input: { topic: "x" },
    });
    expect(answer.status).toBe(404);
    expect(answer.detail).toMatch(new RegExp(`[Tt]hread.*${missing}|${missing}.*[Tt]hread`));
    const created = await sdk.runs.wait(missing, "steps", {
      input: { topic: "made" },
      ifNotExists: "create",
    });
    expect(created).toMatchObject({ text: "published: draft about made" });
    expect((await sdk.threads.get(missing)).thread_id).toBe(missing);
  });

  it("a bad stream mode, strategy, enum value or field type is 422 naming the field", async () => {
    const thread = await sdk.threads.create();
    const path = `/threads/${thread.thread_id}/runs`;
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ stream_mode: "shouting" }, /shouting/],
      [{ stream_mode: ["values", "nope"] }, /nope/],
      [{ multitask_strategy: "smash" }, /multitask_strategy|smash/],
      [{ if_not_exists: "maybe" }, /if_not_exists|maybe/],
      [{ on_disconnect: "explode" }, /on_disconnect|explode/],
      [{ durability: "forever" }, /durability|forever/],
      [{ after_seconds: -5 }, /after_seconds/],
      [{ interrupt_before: 7 }, /interrupt_before/],
      [{ input: {}, command: { resume: "x" }, checkpoint_id: "not-a-checkpoint" }, /checkpoint/],
    ];
    for (const [fields, detail] of cases) {
      const answer = await post(path, { assistant_id: "steps", input: {}, ...fields });
      expect(answer.status, JSON.stringify(fields)).toBeGreaterThanOrEqual(400);
      expect(answer.status, JSON.stringify(fields)).toBeLessThan(500);
      expect(answer.detail, JSON.stringify(fields)).toMatch(detail);
    }
    for (const mode of ["shouting"]) {
      const streamed = await post(`/threads/${thread.thread_id}/runs/stream`, {
        assistant_id: "chat",
        stream_mode: mode,
      });
      expect(streamed.status).toBe(422);
      expect(streamed.detail).toMatch(/shouting/);
    }
    expect(await sdk.runs.list(thread.thread_id)).toEqual([]);
  });

  it("a bad command is 422 saying what is wrong with it", async () => {
    const thread = await sdk.threads.create();
    for (const command of ["resume", { goto: 42 }, { update: "not an object or list" }]) {
      const answer = await post(`/threads/${thread.thread_id}/runs`, { assistant_id: "steps", command });
      expect(answer.status, JSON.stringify(command)).toBe(422);
      expect(answer.detail, JSON.stringify(command)).toMatch(/command|goto|update/);
    }
    const gotoUnknown = await post(`/threads/${thread.thread_id}/runs/wait`, {
      assistant_id: "steps",
      command: { goto: "no_such_node" },
    });
    expect(gotoUnknown.status).toBeLessThan(500);
    expect(await sdk.runs.list(thread.thread_id, { limit: 100 })).toHaveLength(
      gotoUnknown.status === 200 ? 1 : 0,
    );
  });

  it("a checkpoint of another thread is refused with 4xx naming the checkpoint", async () => {
    const a = await sdk.threads.create();
    await sdk.runs.wait(a.thread_id, "steps", { input: { topic: "a" }, interruptBefore: ["publish"] });
    const checkpointOfA = (await sdk.threads.getState(a.thread_id)).checkpoint;
    const b = await sdk.threads.create();
    for (const body of [
      { assistant_id: "steps", input: null, checkpoint_id: checkpointOfA.checkpoint_id },
      { assistant_id: "steps", input: null, checkpoint: { ...checkpointOfA, thread_id: a.thread_id } },
    ]) {
      const answer = await post(`/threads/${b.thread_id}/runs/wait`, body);
      expect(answer.status, JSON.stringify(body)).toBeGreaterThanOrEqual(400);
      expect(answer.status, JSON.stringify(body)).toBeLessThan(500);
      expect(answer.detail).toMatch(/checkpoint/i);
    }
    expect((await sdk.threads.getState(b.thread_id)).values).toEqual({});
  });

  it("malformed ids and bodies are 4xx", async () => {
    const notUuid = await post("/threads/not-a-uuid/runs", { assistant_id: "steps", input: {} });
    expect(notUuid.status).toBeGreaterThanOrEqual(400);
    expect(notUuid.status).toBeLessThan(500);
    expect(notUuid.detail).toMatch(/thread_id|uuid|not-a-uuid/i);
    const notJson = await post("/runs/wait", "{not json");
    expect(notJson.status).toBe(400);
    const noAssistant = await post("/runs/wait", { input: {} });
    expect(noAssistant.status).toBe(422);
    expect(noAssistant.detail).toMatch(/assistant_id/);
    const thread = await sdk.threads.create();
    const badRun = await app.t.fetch(`/threads/${thread.thread_id}/runs/not-a-run`);
    expect(badRun.status).toBeGreaterThanOrEqual(400);
    expect(badRun.status).toBeLessThan(500);
    const badList = await app.t.fetch(`/threads/${thread.thread_id}/runs?status=sleeping`);
    expect(badList.status).toBe(422);
    expect(((await badList.json()) as { detail: string }).detail).toMatch(/sleeping|status/);
  });
});
