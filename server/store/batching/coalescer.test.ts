import { setImmediate as nextTurn } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { createCoalescer } from "./coalescer.js";

/** A `run` that records its batches and answers each item doubled, unless told to fail. */
function recorder(options: { failWhen?: (items: readonly number[]) => boolean } = {}) {
  const batches: number[][] = [];
  let release: (() => void) | undefined;
  let hold = false;
  const run = async (items: readonly number[]) => {
    batches.push([...items]);
    if (hold) await new Promise<void>((done) => (release = done));
    if (options.failWhen?.(items)) throw new Error(`batch ${items.join(",")} failed`);
    return items.map((n) => n * 2);
  };
  return {
    run,
    batches,
    holdNext: () => {
      hold = true;
    },
    releaseAll: () => {
      hold = false;
      release?.();
    },
  };
}

describe("createCoalescer", () => {
  it("runs the items of one turn as one batch and answers each its own", async () => {
    const r = recorder();
    const coalesce = createCoalescer({ run: r.run, maxBatch: 10, maxInFlight: 2 });
    const answers = await Promise.all([1, 2, 3].map(coalesce));
    expect(answers).toEqual([2, 4, 6]);
    expect(r.batches).toEqual([[1, 2, 3]]);
  });

  it("sends a lone item at the end of its turn, without waiting for company", async () => {
    const r = recorder();
    const coalesce = createCoalescer({ run: r.run, maxBatch: 10, maxInFlight: 2 });
    const answer = coalesce(5);
    await nextTurn();
    expect(r.batches).toEqual([[5]]);
    expect(await answer).toBe(10);
  });

  it("splits a turn's items into batches of at most maxBatch", async () => {
    const r = recorder();
    const coalesce = createCoalescer({ run: r.run, maxBatch: 2, maxInFlight: 10 });
    expect(await Promise.all([1, 2, 3, 4, 5].map(coalesce))).toEqual([2, 4, 6, 8, 10]);
    expect(r.batches).toEqual([[1, 2], [3, 4], [5]]);
  });

  it("keeps at most maxInFlight batches running; what arrives meanwhile goes as one batch", async () => {
    const r = recorder();
    const coalesce = createCoalescer({ run: r.run, maxBatch: 10, maxInFlight: 1 });
    r.holdNext();
    const first = coalesce(1);
    await nextTurn();
    const later = [2, 3, 4].map(coalesce);
    await nextTurn();
    expect(r.batches).toEqual([[1]]);
    r.releaseAll();
    expect(await Promise.all([first, ...later])).toEqual([2, 4, 6, 8]);
    expect(r.batches).toEqual([[1], [2, 3, 4]]);
  });

  it("runs the items of a failed batch one by one, so that only the bad one fails", async () => {
    const r = recorder({ failWhen: (items) => items.includes(3) });
    const coalesce = createCoalescer({ run: r.run, maxBatch: 10, maxInFlight: 2 });
    const settled = await Promise.allSettled([1, 3, 5].map(coalesce));
    expect(settled).toEqual([
      { status: "fulfilled", value: 2 },
      { status: "rejected", reason: new Error("batch 3 failed") },
      { status: "fulfilled", value: 10 },
    ]);
    expect(r.batches).toEqual([[1, 3, 5], [1], [3], [5]]);
  });

  it("rejects a lone item with run's error, also when run throws synchronously", async () => {
    const coalesce = createCoalescer<number, number>({
      run: () => {
        throw new Error("no database");
      },
      maxBatch: 10,
      maxInFlight: 2,
    });
    await expect(coalesce(1)).rejects.toThrow("no database");
    // A failure frees its slot: the coalescer keeps working.
    await expect(coalesce(2)).rejects.toThrow("no database");
  });
});
