import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createLogger } from "../logger.js";
import type { AgentRunPayload } from "./agent-run-dispatch.js";
import { BACKLOG_WAIT_MS, createRunBacklog } from "./run-backlog.js";

const run = (runId: string): AgentRunPayload => ({ workspaceId: "w", threadId: `t-${runId}`, runId });

/** A backlog whose runs get a slot when the test says so, recording what goes to the queue. */
function backlogOf(capacity: number) {
  const waiting = new Map<
    string,
    { started: () => void; closed: () => Promise<void>; fail: (e: Error) => void }
  >();
  const queued: string[] = [];
  const backlog = createRunBacklog({
    capacity,
    start: (payload, closed) =>
      new Promise<void>((resolve, reject) => {
        waiting.set(payload.runId, { started: resolve, closed, fail: reject });
      }),
    dispatch: async (payload) => {
      queued.push(payload.runId);
    },
    log: createLogger("error"),
  });
  return { backlog, waiting, queued };
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe("run backlog", () => {
  it("holds at most as many runs as it has places, and frees a place when a run gets its slot", async () => {
    const { backlog, waiting, queued } = backlogOf(2);
    backlog.reserve()?.enqueue(run("a"));
    backlog.reserve()?.enqueue(run("b"));
    expect(backlog.reserve()).toBeUndefined();
    waiting.get("a")?.started();
    await vi.advanceTimersByTimeAsync(0);
    expect(backlog.size()).toBe(1);
    expect(backlog.reserve()).toBeDefined();
    expect(queued).toEqual([]);
  });

  it("gives a reserved place back when the creation does not commit", () => {
    const { backlog } = backlogOf(1);
    backlog.reserve()?.release();
    expect(backlog.reserve()).toBeDefined();
  });

  it("queues a run that waited too long for a slot, once", async () => {
    const { backlog, waiting, queued } = backlogOf(1);
    backlog.reserve()?.enqueue(run("a"));
    await vi.advanceTimersByTimeAsync(BACKLOG_WAIT_MS - 1);
    expect(queued).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(queued).toEqual(["a"]);
    expect(backlog.size()).toBe(0);
    // The slot it still waited for comes later: it is claimed as any job's run would be.
    waiting.get("a")?.started();
    await vi.advanceTimersByTimeAsync(BACKLOG_WAIT_MS);
    expect(queued).toEqual(["a"]);
  });

  it("queues its runs when the slots close, and a run whose claim failed", async () => {
    const { backlog, waiting, queued } = backlogOf(2);
    backlog.reserve()?.enqueue(run("a"));
    backlog.reserve()?.enqueue(run("b"));
    await waiting.get("a")?.closed();
    waiting.get("b")?.fail(new Error("the database went away"));
    await vi.advanceTimersByTimeAsync(0);
    expect(queued.sort()).toEqual(["a", "b"]);
    expect(backlog.size()).toBe(0);
    await vi.advanceTimersByTimeAsync(BACKLOG_WAIT_MS);
    expect(queued).toHaveLength(2);
  });
});
