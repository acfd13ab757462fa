/**
 * A run's event writer on a real database: until the run's first output has gone out, a write
 * starts before the end of the turn (the graph's next nodes run in that turn); later events wait
 * for the end of the turn and share a statement. Each batch is handed over as stored, in order, the
 * first one declared as following 0 (nothing of the run before it).
 */
import { describe, expect, it } from "vitest";
import { uuidv7 } from "../../server/ids.js";
import { createLogger } from "../../server/logger.js";
import type { StoredBatch } from "../../server/runtime/run-event-bus.js";
import { createRunEventWriter } from "../../server/runtime/run-event-writer.js";
import { eventsAfter } from "../../server/store/run-event-store.js";
import { useTestDatabase } from "../support/database.js";

const db = useTestDatabase();

/** Resolves at the end of the current turn, before any `setImmediate` scheduled after this one. */
const endOfTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
/** Lets the microtasks queued so far (and a few they queue) run, within the turn. */
async function microtasks(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

describe("run event writer", () => {
  it("sends the run's metadata and first output at once, then batches the rest by turn", async () => {
    const run = { workspaceId: uuidv7(), runId: uuidv7(), threadId: uuidv7() };
    const started: string[][] = [];
    const handed: StoredBatch[] = [];
    let pushed: string[] = [];
    const writer = createRunEventWriter(db().sql, run, createLogger("error"), () => {
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

    push("metadata", { run_id: run.runId, attempt: 1 });
    const metadataTurn = endOfTurn();
    // The write started within the turn: the statement is on its way before the turn ends.
    await microtasks();
    expect(started).toEqual([["metadata"]]);
    await metadataTurn;
    await writer.flush();

    const outputTurn = endOfTurn();
    push("values", { step: 1 });
    await microtasks();
    expect(started).toEqual([["metadata"], ["values"]]);
    await outputTurn;
    await writer.flush();

    // After the first output: the write waits for the end of the turn and takes what came meanwhile.
    const laterTurn = endOfTurn();
    push("values", { step: 2 });
    push("updates", { node: {} });
    await laterTurn;
    expect(started).toHaveLength(2);
    await writer.flush();
    expect(started).toEqual([["metadata"], ["values"], ["values", "updates"]]);

    const stored = await eventsAfter(db().sql, run.workspaceId, { runId: run.runId }, 0, 100);
    expect(stored.map((e) => e.event)).toEqual(["metadata", "values", "values", "updates"]);
    expect(handed.map((b) => b.rows.map((r) => r.seq))).toEqual([
      [stored[0]?.seq],
      [stored[1]?.seq],
      [stored[2]?.seq, stored[3]?.seq],
    ]);
    expect(handed.map((b) => b.previousSeq)).toEqual([0, stored[0]?.seq, stored[1]?.seq]);
  });
});
