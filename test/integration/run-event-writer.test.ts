/**
 * A run's event writer on a real database: the run's first output is written before the end of its
 * turn (the graph's next nodes run in that turn), with the metadata, which waits for it (alone
 * only after METADATA_HOLD_MS, or when the run's events are flushed); later events wait for the
 * end of the turn and share a statement, with those of other runs. Each batch is handed over as stored, in order, the first one declared as following 0
 * (nothing of the run before it).
 */
import { describe, expect, it, vi } from "vitest";
import { uuidv7 } from "../../server/ids.js";
import { createLogger } from "../../server/logger.js";
import type { StoredBatch } from "../../server/runtime/run-event-bus.js";
import { createRunEventBatcher, METADATA_HOLD_MS } from "../../server/runtime/run-event-writer.js";
import { eventsAfter } from "../../server/store/agents/run-event-store.js";
import { useTestDatabase } from "../support/database.js";

const db = useTestDatabase();

/** Resolves at the end of the current turn, before any `setImmediate` scheduled after this one. */
const endOfTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
/** Lets the microtasks queued so far (and a few they queue) run, within the turn. */
async function microtasks(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

describe("run event writer", () => {
  /** A writer of a new run, recording what each write carried and what it handed over. */
  function recordingWriter() {
    const run = { workspaceId: uuidv7(), runId: uuidv7(), threadId: uuidv7() };
    const started: string[][] = [];
    const handed: StoredBatch[] = [];
    let pushed: string[] = [];
    const writer = createRunEventBatcher(db().sql, createLogger("error")).writer(run, () => {
      started.push(pushed);
      pushed = [];
      return (stored) => {
        if (stored) handed.push(stored);
      };
    });
    const push = (event: string, data: unknown) => {
      pushed.push(event);
      writer.push({ event, data });
    };
    return { run, started, handed, writer, push };
  }

  it("sends the run's first output at once, with its metadata, then batches the rest by turn", async () => {
    const { run, started, handed, writer, push } = recordingWriter();
    push("metadata", { run_id: run.runId, attempt: 1 });
    push("values", { step: 1 });
    const outputTurn = endOfTurn();
    // The write started within the turn: the statement is on its way before the turn ends.
    await microtasks();
    expect(started).toEqual([["metadata", "values"]]);
    await outputTurn;
    await writer.flush();

    // After the first output: the write waits for the end of the turn and takes what came meanwhile.
    const laterTurn = endOfTurn();
    push("values", { step: 2 });
    push("updates", { node: {} });
    await microtasks();
    expect(started).toHaveLength(1);
    await laterTurn;
    await writer.flush();
    expect(started).toEqual([
      ["metadata", "values"],
      ["values", "updates"],
    ]);

    const stored = await eventsAfter(db().sql, run.workspaceId, { runId: run.runId }, 0, 100);
    expect(stored.map((e) => e.event)).toEqual(["metadata", "values", "values", "updates"]);
    expect(handed.map((b) => b.rows.map((r) => r.seq))).toEqual([
      [stored[0]?.seq, stored[1]?.seq],
      [stored[2]?.seq, stored[3]?.seq],
    ]);
    expect(handed.map((b) => b.previousSeq)).toEqual([0, stored[1]?.seq]);
  });

  it("holds a metadata for the run's first output, which then carries it", async () => {
    const { run, started, handed, writer, push } = recordingWriter();
    push("metadata", { run_id: run.runId, attempt: 1 });
    await endOfTurn();
    await endOfTurn();
    expect(started).toEqual([]);
    push("values", { step: 1 });
    await microtasks();
    expect(started).toEqual([["metadata", "values"]]);
    await writer.flush();
    expect(handed.map((b) => b.previousSeq)).toEqual([0]);
  });

  it("sends a metadata alone once its wait for an output is over, and the first output at once after it", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const { run, started, writer, push } = recordingWriter();
      push("metadata", { run_id: run.runId, attempt: 1 });
      vi.advanceTimersByTime(METADATA_HOLD_MS - 1);
      await endOfTurn();
      expect(started).toEqual([]);
      vi.advanceTimersByTime(1);
      await endOfTurn();
      expect(started).toEqual([["metadata"]]);
      await writer.flush();
      push("values", { step: 1 });
      await microtasks();
      expect(started).toEqual([["metadata"], ["values"]]);
      await writer.flush();
    } finally {
      vi.useRealTimers();
    }
  });

  it("says when its write in flight is over, without sending a held metadata", async () => {
    const { run, started, handed, writer, push } = recordingWriter();
    push("metadata", { run_id: run.runId, attempt: 1 });
    await writer.settled();
    await endOfTurn();
    expect(started).toEqual([]);
    push("values", { step: 1 });
    await microtasks();
    expect(started).toEqual([["metadata", "values"]]);
    expect(handed).toEqual([]);
    await writer.settled();
    expect(handed).toHaveLength(1);
    await writer.flush();
  });

  it("sends a held metadata at the turn's end when the run's events are flushed", async () => {
    const { run, started, writer, push } = recordingWriter();
    push("metadata", { run_id: run.runId, attempt: 1 });
    const flushed = writer.flush();
    await microtasks();
    expect(started).toEqual([]);
    await endOfTurn();
    expect(started).toEqual([["metadata"]]);
    await flushed;
    const stored = await eventsAfter(db().sql, run.workspaceId, { runId: run.runId }, 0, 100);
    expect(stored.map((e) => e.event)).toEqual(["metadata"]);
  });
});

describe("run event batcher", () => {
  /** The pool, counting the statements sent through it (the event store's statements have no fragments). */
  function countingPool() {
    const counted = { statements: 0 };
    const sql = new Proxy(db().sql, {
      apply(target, thisArg, args) {
        counted.statements += 1;
        return Reflect.apply(target, thisArg, args);
      },
    });
    return { sql, counted };
  }

  /** A writer past its first output, so its writes wait for the end of the turn. */
  async function pastFirstOutput(batcher: ReturnType<typeof createRunEventBatcher>, run: typeof runA) {
    const writer = batcher.writer(run);
    writer.push({ event: "metadata", data: {} });
    writer.push({ event: "values", data: { step: 0 } });
    await writer.flush();
    return writer;
  }

  const runA = { workspaceId: uuidv7(), runId: uuidv7(), threadId: uuidv7() };
  const runB = { workspaceId: uuidv7(), runId: uuidv7(), threadId: uuidv7() };

  it("writes what several runs push in one turn in one statement, each run's events in order", async () => {
    const { sql, counted } = countingPool();
    const batcher = createRunEventBatcher(sql, createLogger("error"));
    const a = await pastFirstOutput(batcher, runA);
    const b = await pastFirstOutput(batcher, runB);
    const before = counted.statements;
    a.push({ event: "values", data: { step: 1 } });
    b.push({ event: "values", data: { step: 1 } });
    a.push({ event: "updates", data: { node: {} } });
    await Promise.all([a.flush(), b.flush()]);
    expect(counted.statements - before).toBe(1);
    const storedA = await eventsAfter(db().sql, runA.workspaceId, { runId: runA.runId }, 0, 100);
    expect(storedA.map((e) => [e.event, e.data])).toEqual([
      ["metadata", "{}"],
      ["values", '{"step":0}'],
      ["values", '{"step":1}'],
      ["updates", '{"node":{}}'],
    ]);
    expect(a.lastSeq()).toBe(storedA[3]?.seq);
  });

  it("retries a failed statement of several runs run by run: only the bad run's writer fails", async () => {
    const batcher = createRunEventBatcher(db().sql, createLogger("error"));
    const good = { workspaceId: uuidv7(), runId: uuidv7(), threadId: uuidv7() };
    // Not a UUID: the statement carrying it fails.
    const bad = { ...good, runId: "not-a-uuid" };
    const writers = [batcher.writer(good), batcher.writer(bad)];
    for (const writer of writers) writer.push({ event: "metadata", data: {} });
    const [goodFlush, badFlush] = await Promise.allSettled(writers.map((w) => w.flush()));
    expect(goodFlush?.status).toBe("fulfilled");
    expect(badFlush?.status).toBe("rejected");
    const stored = await eventsAfter(db().sql, good.workspaceId, { runId: good.runId }, 0, 100);
    expect(stored.map((e) => e.event)).toEqual(["metadata"]);
  });

  it("hands the events not yet sent to the caller, who stores them itself, and never sends them", async () => {
    const { sql, counted } = countingPool();
    const batcher = createRunEventBatcher(sql, createLogger("error"));
    const run = { workspaceId: uuidv7(), runId: uuidv7(), threadId: uuidv7() };
    const writer = await pastFirstOutput(batcher, run);
    const before = counted.statements;
    writer.push({ event: "values", data: { step: 1 } });
    const unwritten = await writer.takeUnwritten();
    expect(unwritten.map((e) => e.event)).toEqual(["values"]);
    await endOfTurn();
    await writer.flush();
    expect(counted.statements).toBe(before);
  });
});
