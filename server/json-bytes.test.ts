import { describe, expect, it } from "vitest";
import {
  MOST_NUMBER_BYTES,
  mostJsonStringBytes,
  writeAscii,
  writeHundredths,
  writeJsonString,
  writeNumber,
} from "./json-bytes.js";

/** What a writer wrote, as text, checked to stay within `most` bytes from a non-zero offset. */
function written(most: number, write: (buffer: Buffer, at: number) => number): string {
  const at = 3;
  const buffer = Buffer.alloc(at + most + 8, 0xff);
  const end = write(buffer, at);
  expect(end - at).toBeLessThanOrEqual(most);
  expect(buffer[end]).toBe(0xff);
  return buffer.toString("utf8", at, end);
}

describe("json-bytes", () => {
  it("writes strings as JSON.stringify does, escapes and UTF-8 included", () => {
    const texts = [
      "",
      "GET",
      "/threads/{thread_id}/runs",
      '"quoted" \\ back',
      "tab\tnew\nline\u0000\u001f\u007f",
      "é😀 ü",
      "lone \ud800 surrogate",
      "\u001f".repeat(40),
    ];
    for (const text of texts)
      expect(
        written(mostJsonStringBytes(text), (b, at) => writeJsonString(b, at, text)),
        text,
      ).toBe(JSON.stringify(text));
    expect(written(5, (b, at) => writeAscii(b, at, "abc:d"))).toBe("abc:d");
  });

  it("writes durations in hundredths as JSON.stringify of the rounded number does", () => {
    const values = [0, 0.004, 0.005, 0.01, 0.1, 0.995, 1, 1.5, 9.999, 10.05, 123.456, 86_400_000.126];
    let seed = 7;
    for (let i = 0; i < 2000; i++) {
      seed = (seed * 48271) % 2147483647;
      values.push((seed / 2147483647) * 10 ** (i % 7));
    }
    for (const value of values)
      expect(
        written(MOST_NUMBER_BYTES, (b, at) => writeHundredths(b, at, value)),
        String(value),
      ).toBe(JSON.stringify(Math.round(value * 100) / 100));
  });

  it("writes numbers as JSON.stringify does, integers digit by digit and the rest as text", () => {
    for (const value of [
      0,
      7,
      200,
      404,
      1_000_000,
      2 ** 53 - 1,
      200.5,
      -1,
      Number.NaN,
      -1.2345678901234567e-308,
    ])
      expect(
        written(MOST_NUMBER_BYTES, (b, at) => writeNumber(b, at, value)),
        String(value),
      ).toBe(JSON.stringify(value));
  });
});
