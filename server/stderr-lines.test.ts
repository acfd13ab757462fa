import { describe, expect, it } from "vitest";
import { createLineSink, FLUSH_AFTER_MS } from "./stderr-lines.js";

/** A writer that keeps each batch as text and is done with its bytes when it returns. */
function recorder(writes: string[]): (bytes: Buffer) => boolean {
  return (bytes) => {
    writes.push(bytes.toString("utf8"));
    return false;
  };
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));
/** Long enough for a batch's window to have ended, on a loaded machine too. */
const WINDOW_ENDED_MS = 5_000;

describe("createLineSink", () => {
  it("writes the lines of a short window in one write, in order, once it ends", async () => {
    const writes: string[] = [];
    const sink = createLineSink(recorder(writes));
    const started = performance.now();
    sink.write("a\n");
    await nextTurn();
    sink.write("b\n");
    expect(writes).toEqual([]);
    await expect.poll(() => writes, { timeout: WINDOW_ENDED_MS }).toEqual(["a\nb\n"]);
    // Timers may fire a millisecond early.
    expect(performance.now() - started).toBeGreaterThanOrEqual(FLUSH_AFTER_MS - 1);
    sink.write("c\n");
    await expect.poll(() => writes, { timeout: WINDOW_ENDED_MS }).toEqual(["a\nb\n", "c\n"]);
  });

  it("writes at once what is queued when flushed, and nothing when nothing is", async () => {
    const writes: string[] = [];
    const sink = createLineSink(recorder(writes));
    sink.flush();
    sink.write("a\n");
    sink.flush();
    expect(writes).toEqual(["a\n"]);
    await new Promise((resolve) => setTimeout(resolve, FLUSH_AFTER_MS * 2));
    expect(writes).toEqual(["a\n"]);
  });

  it("writes a burst without waiting once it reaches 64 KiB", () => {
    const writes: string[] = [];
    const sink = createLineSink(recorder(writes));
    const line = `${"x".repeat(1023)}\n`;
    for (let i = 0; i < 64; i++) sink.write(line);
    expect(writes).toHaveLength(1);
    expect(writes[0]).toHaveLength(64 * 1024);
  });

  it("keeps multi-byte text whole and writes a line longer than the batch on its own, in order", () => {
    const writes: string[] = [];
    const sink = createLineSink(recorder(writes));
    sink.write("é😀 first\n");
    const long = `${"ü".repeat(100_000)}\n`;
    sink.write(long);
    sink.write("last\n");
    sink.flush();
    expect(writes).toEqual(["é😀 first\n", long, "last\n"]);
  });

  it("leaves the bytes of a batch alone while its writer still holds them", () => {
    const held: Buffer[] = [];
    const sink = createLineSink((bytes) => {
      held.push(bytes);
      return true;
    });
    sink.write("first\n");
    sink.flush();
    sink.write("second\n");
    sink.flush();
    expect(held.map((bytes) => bytes.toString("utf8"))).toEqual(["first\n", "second\n"]);
  });
});
