/**
 * Waiting for runs and rejoining their streams through the official `@langchain/langgraph-sdk`:
 * `runs.join` (before, during and after the run), `runs.joinStream` live and resumed with
 * `Last-Event-ID` (header, `last-event-id` parameter, `-1` for everything, the older integer form),
 * the `Location` a stream answers for reconnects, and the thread stream (`threads.joinStream`) across
 * two runs.
 */
import type { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  collect,
  eventNames,
  type RunsApp,
  type StreamPart,
  startRunsApp,
  waitFor,
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

/** A ticker run's input: `ticks` custom events `interval_ms` apart. */
function ticker(ticks: number, intervalMs: number) {
  return { ticks, interval_ms: intervalMs };
}

describe("runs.join", () => {
  it("answers the final values whether joined during or after the run", async () => {
    const thread = await sdk.threads.create();
    const run = await sdk.runs.create(thread.thread_id, "sleepy", {
      input: { sleep_ms: 500, messages: ["j"] },
    });
    const during = await sdk.runs.join(thread.thread_id, run.run_id);
    expect(during).toEqual({ sleep_ms: 500, messages: ["j", "slept 500 ms"] });
    expect(await sdk.runs.join(thread.thread_id, run.run_id)).toEqual(during);
    expect((await sdk.runs.get(thread.thread_id, run.run_id)).status).toBe("success");
  });

  it("several joins of one run all get the result", async () => {
    const thread = await sdk.threads.create();
    const run = await sdk.runs.create(thread.thread_id, "sleepy", { input: { sleep_ms: 300 } });
    const results = await Promise.all([1, 2, 3].map(() => sdk.runs.join(thread.thread_id, run.run_id)));
    for (const result of results) expect(result).toEqual({ sleep_ms: 300, messages: ["slept 300 ms"] });
  });

  it("a run of another thread is 404", async () => {
    const thread = await sdk.threads.create();
    const run = await sdk.runs.create(thread.thread_id, "sleepy", { input: { sleep_ms: 0 } });
    const other = await sdk.threads.create();
    await expect(sdk.runs.join(other.thread_id, run.run_id)).rejects.toMatchObject({ status: 404 });
    await sdk.runs.join(thread.thread_id, run.run_id);
  });
});

describe("runs.joinStream", () => {
  it("a live join sees the run's events from when it attached, to the end", async () => {
    const thread = await sdk.threads.create();
    const run = await sdk.runs.create(thread.thread_id, "ticker", {
      input: ticker(10, 200),
      streamMode: ["custom", "values"],
    });
    const parts = await collect(sdk.runs.joinStream(thread.thread_id, run.run_id));
    const ticks = parts.filter((p) => p.event === "custom").map((p) => p.data.tick as number);
    // Attached while the run was going: the ticks seen are the last ones, in order.
    expect(ticks.length).toBeGreaterThan(0);
    expect(ticks).toEqual(ticks.map((_, i) => 10 - ticks.length + i));
    expect(parts.at(-1)).toMatchObject({ event: "values", data: { done: 10 } });
  });

  it("a resumable run replays everything with Last-Event-ID -1, and exactly what follows a given id", async () => {
    const thread = await sdk.threads.create();
    const original = await collect(
      sdk.runs.stream(thread.thread_id, "ticker", {
        input: ticker(4, 20),
        streamMode: ["custom", "values", "updates"],
        streamResumable: true,
      }),
    );
    expect(eventNames(original)).toEqual([
      "metadata",
      "values",
      "custom",
      "custom",
      "custom",
      "custom",
      "updates",
      "values",
    ]);
    const runId = original[0]?.data.run_id as string;

    const replay = await collect(sdk.runs.joinStream(thread.thread_id, runId, { lastEventId: "-1" }));
    expect(replay).toEqual(original);

    for (const cut of [0, 3, original.length - 2]) {
      const lastSeen = original[cut]?.id ?? "";
      const rest = await collect(sdk.runs.joinStream(thread.thread_id, runId, { lastEventId: lastSeen }));
      expect(rest, `after event ${cut}`).toEqual(original.slice(cut + 1));
    }
    const afterLast = await collect(
      sdk.runs.joinStream(thread.thread_id, runId, { lastEventId: original.at(-1)?.id ?? "" }),
    );
    expect(afterLast).toEqual([]);
  });

  it("stream_mode on a join keeps only those modes (metadata always first)", async () => {
    const thread = await sdk.threads.create();
    const original = await collect(
      sdk.runs.stream(thread.thread_id, "ticker", {
        input: ticker(2, 10),
        streamMode: ["custom", "values", "updates"],
        streamResumable: true,
      }),
    );
    const runId = original[0]?.data.run_id as string;
    const onlyCustom = await collect(
      sdk.runs.joinStream(thread.thread_id, runId, { lastEventId: "-1", streamMode: ["custom"] }),
    );
    expect(onlyCustom).toEqual(original.filter((p) => p.event === "metadata" || p.event === "custom"));
  });

  it("cancel_on_disconnect: a join that goes away cancels the run", async () => {
    const thread = await sdk.threads.create();
    const run = await sdk.runs.create(thread.thread_id, "ticker", {
      input: ticker(600, 100),
      streamMode: "custom",
    });
    const controller = new AbortController();
    try {
      for await (const part of sdk.runs.joinStream(thread.thread_id, run.run_id, {
        cancelOnDisconnect: true,
        signal: controller.signal,
      }))
        if ((part as StreamPart).event === "custom") controller.abort();
    } catch (error) {
      if (!controller.signal.aborted) throw error;
    }
    const ended = await waitFor(
      () => sdk.runs.get(thread.thread_id, run.run_id),
      (r) => r.status !== "running" && r.status !== "pending",
    );
    expect(ended.status).toBe("interrupted");
  });

  it("takes the last-event-id query parameter too, and the older integer form", async () => {
    const thread = await sdk.threads.create();
    const original = await collect(
      sdk.runs.stream(thread.thread_id, "steps", { input: { topic: "ids" }, streamResumable: true }),
    );
    const runId = original[0]?.data.run_id as string;
    const cutId = original[1]?.id ?? "";
    const res = await app.t.fetch(
      `/threads/${thread.thread_id}/runs/${runId}/stream?last-event-id=${encodeURIComponent(cutId)}`,
    );
    expect(res.status).toBe(200);
    const ids = [...(await res.text()).matchAll(/^id: ?(.*)$/gm)].map((m) => m[1]);
    // The rest of the events, then the run's end.
    expect(ids.slice(0, -1)).toEqual(original.slice(2).map((p) => p.id));
    expect(ids).toHaveLength(original.length - 1);

    const legacy = await collect(sdk.runs.joinStream(thread.thread_id, runId, { lastEventId: "0" }));
    // The integer form counts events of the run: whatever it maps to, the answer is a tail of the stream.
    expect(original.slice(original.length - legacy.length)).toEqual(legacy);
  });

  it("POST …/runs/stream answers Location for reconnects and Content-Location for the run", async () => {
    const thread = await sdk.threads.create();
    const res = await app.t.fetch(`/threads/${thread.thread_id}/runs/stream`, {
      method: "POST",
      body: JSON.stringify({ assistant_id: "steps", input: { topic: "where" }, stream_resumable: true }),
    });
    expect(res.status).toBe(200);
    const location = res.headers.get("content-location") ?? "";
    expect(location).toMatch(new RegExp(`^/threads/${thread.thread_id}/runs/[0-9a-f-]{36}$`));
    expect(res.headers.get("location")).toBe(`${location}/stream`);
    await res.text();
  });
});

describe("thread stream (threads.joinStream)", () => {
  /**
   * Reads the thread stream of `threadId` (with `options`) until `enough` holds for what was seen;
   * fails after 20 s.
   */
  async function readThreadStream(
    threadId: string,
    options: { lastEventId?: string; streamMode?: "run_modes" | "lifecycle" | "state_update" },
    enough: (seen: StreamPart[]) => boolean,
  ): Promise<StreamPart[]> {
    const controller = new AbortController();
    const timeout = setTimeout(() => controller.abort(), 20_000);
    const seen: StreamPart[] = [];
    try {
      for await (const part of sdk.threads.joinStream(threadId, { ...options, signal: controller.signal })) {
        seen.push(part as StreamPart);
        if (enough(seen)) break;
      }
    } finally {
      clearTimeout(timeout);
    }
    return seen;
  }

  /** Whether both ticker runs' final values were seen. */
  const bothDone = (seen: StreamPart[]) =>
    seen.filter((p) => p.event === "values" && p.data?.done === 2).length >= 2;

  it("shows the events of two runs of the thread, one run after the other, and resumes after an event", async () => {
    const thread = await sdk.threads.create();
    const reading = readThreadStream(thread.thread_id, {}, bothDone);
    // The first run starts two seconds from now, well after the stream above has attached.
    const first = await sdk.runs.create(thread.thread_id, "ticker", {
      input: ticker(2, 10),
      afterSeconds: 2,
      streamResumable: true,
    });
    const second = await sdk.runs.create(thread.thread_id, "ticker", {
      input: ticker(2, 10),
      streamResumable: true,
    });
    await sdk.runs.join(thread.thread_id, second.run_id);
    const seen = await reading;

    const metadata = seen.filter((p) => p.event === "metadata").map((p) => p.data.run_id);
    expect(metadata).toEqual([first.run_id, second.run_id]);
    const secondStart = seen.findIndex((p) => p.event === "metadata" && p.data.run_id === second.run_id);
    const firstEnd = seen.findIndex((p) => p.event === "values" && p.data?.done === 2);
    expect(firstEnd).toBeGreaterThan(0);
    expect(firstEnd).toBeLessThan(secondStart);
    for (const part of seen) expect(part.event).not.toBe("error");
    const ids = seen.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);

    const resumed = await readThreadStream(
      thread.thread_id,
      { lastEventId: seen[firstEnd]?.id ?? "" },
      (parts) => parts.some((p) => p.event === "values" && p.data?.done === 2),
    );
    expect(resumed).toEqual(seen.slice(firstEnd + 1));
  });

  it("stream_mode=state_update shows only the state as it changes", async () => {
    const thread = await sdk.threads.create();
    const reading = readThreadStream(thread.thread_id, { streamMode: "state_update" }, bothDone);
    await sdk.runs.create(thread.thread_id, "ticker", { input: ticker(2, 10), afterSeconds: 2 });
    const second = await sdk.runs.create(thread.thread_id, "ticker", { input: ticker(2, 10) });
    await sdk.runs.join(thread.thread_id, second.run_id);
    const seen = await reading;
    expect(new Set(eventNames(seen))).toEqual(new Set(["values"]));
  });
});
