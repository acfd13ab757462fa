import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { createDatabaseGate } from "./database-gate.js";

const never = () => new Promise<never>(() => {});

describe("the database gate", () => {
  it("passes calls through while Postgres is up", async () => {
    const gate = createDatabaseGate();
    expect(() => gate.admit()).not.toThrow();
    await expect(gate.race(Promise.resolve(7))).resolves.toBe(7);
    await expect(gate.race(Promise.reject(new Error("own failure")))).rejects.toThrow("own failure");
  });

  it("ends calls waiting on Postgres when it goes down, and refuses new ones until it is back", async () => {
    const gate = createDatabaseGate();
    const waiting = gate.race(never());
    gate.set(false);
    const ended = await waiting.catch((error: unknown) => error);
    expect(ended).toBeInstanceOf(ConnectError);
    expect((ended as ConnectError).code).toBe(Code.Unavailable);
    expect(() => gate.admit()).toThrow("the database is unreachable; retry in a few seconds");
    await expect(gate.race(Promise.resolve(1))).rejects.toMatchObject({ code: Code.Unavailable });
    expect(gate.open()).toBe(false);

    gate.set(true);
    expect(() => gate.admit()).not.toThrow();
    await expect(gate.race(Promise.resolve(2))).resolves.toBe(2);
  });

  it("ignores the outcome of work it gave up on", async () => {
    const gate = createDatabaseGate();
    let fail: (error: Error) => void = () => {};
    const work = new Promise<never>((_, reject) => {
      fail = reject;
    });
    const raced = gate.race(work);
    gate.set(false);
    await expect(raced).rejects.toMatchObject({ code: Code.Unavailable });
    // A late failure of the abandoned work is not an unhandled rejection (vitest would report it).
    fail(new Error("connection closed"));
    await new Promise((resolve) => setTimeout(resolve, 10));
  });
});
