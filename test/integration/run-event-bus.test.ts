/**
 * The run event bus on a real database: a run's NOTIFY that arrives while this process's writer of
 * the run is still storing the batch wakes no stream (it would read Postgres for events about to be
 * handed over); the hand-off wakes them, and a failed write wakes them when a notification was held.
 */
import { afterEach, describe, expect, it } from "vitest";
import { uuidv7 } from "../../server/ids.js";
import { createRunEventBus, endKey, type RunEventBus } from "../../server/runtime/run-event-bus.js";
import type { AgentRunRecord } from "../../server/store/agents/agent-run-store.js";
import { RUN_EVENTS_CHANNEL, type RunEventRecord } from "../../server/store/agents/run-event-store.js";
import { useTestDatabase } from "../support/database.js";

const db = useTestDatabase();
/** Generous: the notification crosses a loaded machine's Postgres. */
const WAKE_TIMEOUT_MS = 10_000;

let bus: RunEventBus | undefined;
afterEach(async () => {
  await bus?.close();
  bus = undefined;
});

const row = (runId: string, seq: number): RunEventRecord => ({
  seq,
  runId,
  ms: 1_700_000_000_000 + seq,
  event: "values",
  data: "{}",
});

/**
 * Sends the run's NOTIFY for `seq` as a batch's insert does, then one for a thread the test
 * watches, and waits for the second: notifications of one channel arrive in order, so the run's
 * has been handled by then. `seq` may be followed by an end's announcement (migration 0038).
 */
async function notifyAndSettle(
  events: RunEventBus,
  runId: string,
  seq: number | string,
  kind: "more" | "end" = "more",
): Promise<void> {
  const marker = uuidv7();
  const watch = events.watch(marker);
  try {
    const seen = watch.version();
    await db().sql`select pg_notify(${RUN_EVENTS_CHANNEL}, ${`${runId} ${uuidv7()} ${kind} ${seq}`})`;
    await db().sql`select pg_notify(${RUN_EVENTS_CHANNEL}, ${`${uuidv7()} ${marker} more 1`})`;
    await watch.changed(seen, WAKE_TIMEOUT_MS);
    expect(watch.version()).toBeGreaterThan(seen);
  } finally {
    watch.close();
  }
}

describe("run event bus", () => {
  it("holds a run's notification while its write is in flight here, and wakes the stream with the batch", async () => {
    bus = await createRunEventBus(db().sql);
    const runId = uuidv7();
    const stream = bus.watch(runId);
    const done = bus.writing(runId);
    await notifyAndSettle(bus, runId, 7);
    expect(stream.version()).toBe(0);
    done({ previousSeq: 0, rows: [row(runId, 7)] });
    expect(stream.version()).toBe(1);
    // The run's first events, declared as following 0: a stream that has seen nothing takes them.
    expect(stream.take(0)).toEqual({ rows: [row(runId, 7)], upTo: 7, behind: false });
    stream.close();
  });

  it("wakes the stream on the notification when no write of the run is in flight here", async () => {
    bus = await createRunEventBus(db().sql);
    const runId = uuidv7();
    const stream = bus.watch(runId);
    bus.writing(uuidv7())();
    await notifyAndSettle(bus, runId, 9);
    expect(stream.version()).toBe(1);
    // Nothing was handed over: the stream reads Postgres.
    expect(stream.take(0)?.behind).toBe(true);
    stream.close();
  });

  it("wakes the stream when a write fails after its notification was held", async () => {
    bus = await createRunEventBus(db().sql);
    const runId = uuidv7();
    const stream = bus.watch(runId);
    const done = bus.writing(runId);
    await notifyAndSettle(bus, runId, 11);
    expect(stream.version()).toBe(0);
    done();
    expect(stream.version()).toBe(1);
    expect(stream.take(0)?.behind).toBe(true);
    stream.close();
  });

  /** A run record as an end hands it over. */
  const endedRun = (runId: string): AgentRunRecord => ({
    workspaceId: uuidv7(),
    runId,
    threadId: uuidv7(),
    assistantId: uuidv7(),
    graphId: "g",
    status: "success",
    metadata: {},
    kwargs: {},
    multitaskStrategy: "enqueue",
    temporary: false,
    attempt: 1,
    cancelAction: null,
    cancelReason: null,
    output: { reply: "ok" },
    notBefore: new Date(),
    createdAt: new Date(),
    updatedAt: new Date(),
    encryptionContext: null,
    creator: { apiKeyId: null, userId: null },
  });

  it("hands a run ended here to the waiters on its end, after holding the end's own notification", async () => {
    bus = await createRunEventBus(db().sql);
    const runId = uuidv7();
    const waiter = bus.watch(endKey(runId));
    const done = bus.writing(runId);
    await notifyAndSettle(bus, runId, 3, "end");
    // The end is announced, but its write is still in flight here: the waiter is not woken yet.
    expect(waiter.version()).toBe(0);
    expect(bus.endAnnounced(runId)).toBe(true);
    const ended = endedRun(runId);
    done({ previousSeq: 0, rows: [row(runId, 3)] }, ended);
    expect(waiter.version()).toBe(1);
    expect(waiter.ended()).toBe(ended);
    waiter.close();
  });

  it("wakes the waiters on a run's end announced by another process, with nothing handed over", async () => {
    bus = await createRunEventBus(db().sql);
    const runId = uuidv7();
    expect(bus.endAnnounced(runId)).toBe(false);
    const waiter = bus.watch(endKey(runId));
    await notifyAndSettle(bus, runId, 5, "end");
    expect(waiter.version()).toBe(1);
    expect(waiter.ended()).toBeUndefined();
    expect(bus.endAnnounced(runId)).toBe(true);
    waiter.close();
  });

  it("keeps what an end announced of the run for the waiters on its end, and nothing that is not an announcement", async () => {
    bus = await createRunEventBus(db().sql);
    const runId = uuidv7();
    const waiter = bus.watch(endKey(runId));
    const updatedAt = "2026-12-04T10:00:00.123456+00:00";
    const announcement = {
      status: "success",
      attempt: 2,
      cancel_action: null,
      cancel_reason: null,
      updated_at: updatedAt,
      output: { reply: "a b  c" },
    };
    await notifyAndSettle(bus, runId, `5 ${JSON.stringify(announcement)}`, "end");
    expect(waiter.version()).toBe(1);
    expect(waiter.announced()).toEqual({
      status: "success",
      attempt: 2,
      cancelAction: null,
      cancelReason: null,
      output: { reply: "a b  c" },
      updatedAt: new Date(updatedAt),
    });
    // An end that announced nothing (a rollback's, or an output too large) leaves it undefined.
    const other = uuidv7();
    const bare = bus.watch(endKey(other));
    await notifyAndSettle(bus, other, 6, "end");
    expect(bare.announced()).toBeUndefined();
    const broken = uuidv7();
    const garbled = bus.watch(endKey(broken));
    await notifyAndSettle(bus, broken, `7 {"status":"running"}`, "end");
    expect(garbled.version()).toBe(1);
    expect(garbled.announced()).toBeUndefined();
    for (const w of [waiter, bare, garbled]) w.close();
  });
});
