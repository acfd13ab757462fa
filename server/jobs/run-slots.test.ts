import { describe, expect, it } from "vitest";
import { createRunSlots } from "./run-slots.js";

describe("run slots", () => {
  it("hands out at most `total` slots, and a freed one again", async () => {
    const slots = createRunSlots(2);
    const a = slots.tryTake();
    const b = slots.tryTake();
    expect(a && b).toBeTruthy();
    expect(slots.tryTake()).toBeUndefined();
    expect(slots.usage()).toEqual({ total: 2, busy: 2, waiting: 0 });
    a?.release();
    expect(slots.usage()).toEqual({ total: 2, busy: 1, waiting: 0 });
    expect(await slots.take()).toBeDefined();
  });

  it("gives a freed slot to the oldest waiter before anyone can take one without waiting", async () => {
    const slots = createRunSlots(1);
    const held = slots.tryTake();
    const order: string[] = [];
    const first = slots.take().then((slot) => {
      order.push("first");
      return slot;
    });
    const second = slots.take().then((slot) => {
      order.push("second");
      return slot;
    });
    held?.release();
    // The slot went to the first waiter: nothing is free for a taker that does not wait.
    expect(slots.tryTake()).toBeUndefined();
    (await first)?.release();
    await second;
    expect(order).toEqual(["first", "second"]);
    expect(slots.usage().busy).toBe(1);
  });

  it("refuses to take a slot back twice", () => {
    const slot = createRunSlots(1).tryTake();
    slot?.release();
    expect(() => slot?.release()).toThrow("given back twice");
  });

  it("hands out nothing once closed, and wakes its waiters with nothing", async () => {
    const slots = createRunSlots(1);
    const held = slots.tryTake();
    const waiter = slots.take();
    slots.close();
    expect(await waiter).toBeUndefined();
    held?.release();
    expect(slots.tryTake()).toBeUndefined();
    expect(await slots.take()).toBeUndefined();
    expect(slots.usage().busy).toBe(0);
  });

  it("hands a slot freed within takeWithin's wait to that waiter, in turn with the others", async () => {
    const slots = createRunSlots(1);
    const held = slots.tryTake();
    const order: string[] = [];
    const first = slots.take().then((slot) => {
      order.push("take");
      return slot;
    });
    const second = slots.takeWithin(60_000, new AbortController().signal).then((slot) => {
      order.push("takeWithin");
      return slot;
    });
    held?.release();
    (await first)?.release();
    const slot = await second;
    expect(slot).toBeDefined();
    expect(order).toEqual(["take", "takeWithin"]);
    slot?.release();
    expect(slots.usage().busy).toBe(0);
  });

  it("leaves the queue when takeWithin's time is up, so a slot freed later stays free", async () => {
    const slots = createRunSlots(1);
    const held = slots.tryTake();
    expect(await slots.takeWithin(5, new AbortController().signal)).toBeUndefined();
    held?.release();
    // Nobody waits any more: the slot is free for a taker that does not wait.
    expect(slots.usage().busy).toBe(0);
    expect(slots.tryTake()).toBeDefined();
  });

  it("leaves the queue when takeWithin's signal aborts, and takes nothing once aborted", async () => {
    const slots = createRunSlots(1);
    const held = slots.tryTake();
    const abort = new AbortController();
    const waiting = slots.takeWithin(60_000, abort.signal);
    expect(slots.usage().waiting).toBe(1);
    abort.abort();
    expect(await waiting).toBeUndefined();
    expect(slots.usage().waiting).toBe(0);
    held?.release();
    expect(slots.usage().busy).toBe(0);
    expect(await slots.takeWithin(60_000, abort.signal)).toBeUndefined();
    expect(slots.usage().busy).toBe(0);
  });
});
