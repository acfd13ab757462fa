import { describe, expect, it } from "vitest";
import { createLineSink } from "./stderr-lines.js";

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe("createLineSink", () => {
  it("writes the lines of one turn of the event loop in one write, in order, at its end", async () => {
    const writes: string[] = [];
    const sink = createLineSink((text) => writes.push(text));
    sink.write("a\n");
    sink.write("b\n");
    expect(writes).toEqual([]);
    await nextTurn();
    expect(writes).toEqual(["a\nb\n"]);
    sink.write("c\n");
    await nextTurn();
    expect(writes).toEqual(["a\nb\n", "c\n"]);
  });

  it("writes at once what is queued when flushed, and nothing when nothing is", async () => {
    const writes: string[] = [];
    const sink = createLineSink((text) => writes.push(text));
    sink.flush();
    sink.write("a\n");
    sink.flush();
    expect(writes).toEqual(["a\n"]);
    await nextTurn();
    expect(writes).toEqual(["a\n"]);
  });

  it("writes a burst without waiting once it reaches 64 KiB", () => {
    const writes: string[] = [];
    const sink = createLineSink((text) => writes.push(text));
    const line = `${"x".repeat(1023)}\n`;
    for (let i = 0; i < 64; i++) sink.write(line);
    expect(writes).toHaveLength(1);
    expect(writes[0]).toHaveLength(64 * 1024);
  });
});
