import { describe, expect, it } from "vitest";
import { writeAscii, writeJsonString, writeNumber } from "./json-bytes.js";
import { createLogger } from "./logger.js";

function capture(level: "debug" | "info" = "debug") {
  const lines: string[] = [];
  return { lines, log: createLogger(level, (line) => lines.push(line)) };
}

describe("createLogger", () => {
  it("writes one JSON line: time, level, message, then the fields in their order", () => {
    const { lines, log } = capture();
    const before = Date.now();
    log.info("request", {
      method: "GET",
      status: 200,
      durationMs: 1.5,
      workspaceId: null,
      absent: undefined,
    });
    const after = Date.now();
    expect(lines).toHaveLength(1);
    const line = lines[0] ?? "";
    expect(line.endsWith("}\n")).toBe(true);
    const parsed = JSON.parse(line) as Record<string, unknown>;
    expect(Object.keys(parsed)).toEqual([
      "time",
      "level",
      "message",
      "method",
      "status",
      "durationMs",
      "workspaceId",
    ]);
    expect(parsed).toMatchObject({
      level: "info",
      message: "request",
      method: "GET",
      status: 200,
      durationMs: 1.5,
    });
    const time = String(parsed.time);
    expect(new Date(time).toISOString()).toBe(time);
    expect(Date.parse(time)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(time)).toBeLessThanOrEqual(after);
  });

  it("writes lines without fields, and drops those below its level", () => {
    const { lines, log } = capture("info");
    log.debug("hidden");
    log.warn("bare");
    log.error("empty", {});
    expect(lines.map((line) => JSON.parse(line))).toEqual([
      { time: expect.any(String), level: "warn", message: "bare" },
      { time: expect.any(String), level: "error", message: "empty" },
    ]);
  });

  it("writes errors as objects with their causes, and lets a field replace the line's own key", () => {
    const { lines, log } = capture();
    const error = new Error("outer", { cause: Object.assign(new Error("inner"), { code: "57P01" }) });
    log.error("failed", { error, message: "from the field" });
    const parsed = JSON.parse(lines[0] ?? "") as { message: string; error: Record<string, unknown> };
    expect(parsed.message).toBe("from the field");
    expect(parsed.error).toMatchObject({
      name: "Error",
      message: "outer",
      cause: { message: "inner", code: "57P01" },
    });
  });

  it("still writes a line when a field cannot be JSON, saying why", () => {
    const { lines, log } = capture();
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    log.warn("odd", { cycle, big: 1n });
    expect(JSON.parse(lines[0] ?? "")).toMatchObject({
      level: "warn",
      message: "odd",
      unloggable: expect.any(String),
    });
  });

  it("follows a level changed at run time", () => {
    const { lines, log } = capture("info");
    expect(log.level.current).toBe("info");
    log.level.set("error");
    log.info("dropped");
    log.warn("dropped too");
    log.error("kept");
    log.level.set("debug");
    log.debug("kept at debug");
    expect(log.level.current).toBe("debug");
    expect(lines.map((line) => (JSON.parse(line) as { message: string }).message)).toEqual([
      "kept",
      "kept at debug",
    ]);
  });

  it("encodes every kind of flat value exactly as JSON.stringify does", () => {
    const { lines, log } = capture();
    const fields = {
      plain: "/threads/{thread_id}",
      quoted: 'say "hi" \\ there',
      control: "tab\tnewline\nnul\u0000del\u007f",
      pair: "emoji \ud83d\ude00",
      lone: "lone \ud800 surrogate",
      unicode: "café ✓",
      'key "odd"': 1,
      integer: 200,
      fraction: 1.25,
      negativeZero: -0,
      notFinite: Number.NaN,
      infinite: Number.POSITIVE_INFINITY,
      yes: true,
      no: false,
      nothing: null,
      absent: undefined,
    };
    log.info("flat", fields);
    log.info("nested", { ...fields, nested: { a: [1, "b"] } });
    const [flat, nested] = lines;
    const expected = (message: string, extra: object = {}) =>
      `${JSON.stringify({ level: "info", message, ...fields, ...extra }).slice(1)}\n`;
    // Everything after the time is what JSON.stringify writes for the same keys in the same order.
    expect(flat?.replace(/^\{"time":"[^"]+",/, "")).toBe(expected("flat"));
    expect(nested?.replace(/^\{"time":"[^"]+",/, "")).toBe(expected("nested", { nested: { a: [1, "b"] } }));
  });

  it("writes a line through its bytes as it writes the same fields through info", () => {
    const { lines, log } = capture();
    const message = 'requête "é"';
    let end = log.bytes.open("warn", message, 64);
    end = writeAscii(log.bytes.buffer, end, ',"route":');
    end = writeJsonString(log.bytes.buffer, end, "/ü/{id}");
    end = writeAscii(log.bytes.buffer, end, ',"status":');
    end = writeNumber(log.bytes.buffer, end, 200);
    log.bytes.close(end);
    log.warn(message, { route: "/ü/{id}", status: 200 });
    expect(lines).toHaveLength(2);
    const [viaBytes, viaFields] = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines[0]?.endsWith("}\n")).toBe(true);
    expect(viaBytes).toEqual({ ...viaFields, time: expect.any(String) });
    const time = String(viaBytes?.time);
    expect(new Date(time).toISOString()).toBe(time);
    expect(Object.keys(viaBytes ?? {})).toEqual(Object.keys(viaFields ?? {}));
  });
});
