import { describe, expect, it } from "vitest";
import { dayPartitionCount, dayPartitions } from "./partitions.js";
import { dueWindows, SPAWN_DELAY_SECONDS } from "./schedule-windows.js";

const at = (iso: string) => new Date(iso);
const iso = (parts: { start: Date; end: Date }[]) =>
  parts.map((p) => [p.start.toISOString(), p.end.toISOString()]);

describe("dayPartitions", () => {
  it("cuts a range at UTC midnights, the first and last partial", () => {
    const parts = dayPartitions(at("2026-03-01T06:00:00Z"), at("2026-03-03T05:30:00Z"));
    expect(iso(parts)).toEqual([
      ["2026-03-01T06:00:00.000Z", "2026-03-02T00:00:00.000Z"],
      ["2026-03-02T00:00:00.000Z", "2026-03-03T00:00:00.000Z"],
      ["2026-03-03T00:00:00.000Z", "2026-03-03T05:30:00.000Z"],
    ]);
    expect(dayPartitionCount(at("2026-03-01T06:00:00Z"), at("2026-03-03T05:30:00Z"))).toBe(3);
  });

  it("gives one partition for a range inside a day, and none past an end at midnight", () => {
    expect(iso(dayPartitions(at("2026-03-01T01:00:00Z"), at("2026-03-01T02:00:00Z")))).toHaveLength(1);
    expect(iso(dayPartitions(at("2026-03-01T00:00:00Z"), at("2026-03-03T00:00:00Z")))).toEqual([
      ["2026-03-01T00:00:00.000Z", "2026-03-02T00:00:00.000Z"],
      ["2026-03-02T00:00:00.000Z", "2026-03-03T00:00:00.000Z"],
    ]);
    expect(dayPartitionCount(at("2026-03-01T00:00:00Z"), at("2026-03-03T00:00:00Z"))).toBe(2);
  });

  it("refuses an empty range", () => {
    expect(() => dayPartitions(at("2026-03-01T00:00:00Z"), at("2026-03-01T00:00:00Z"))).toThrow(
      "must end after",
    );
  });
});

describe("dueWindows", () => {
  const start = at("2026-03-01T00:00:00Z");

  it("spawns a window once it ended ten minutes ago, not a second earlier", () => {
    expect(SPAWN_DELAY_SECONDS).toBe(600);
    expect(dueWindows(start, 6, at("2026-03-01T06:09:59Z"), 10)).toEqual([]);
    expect(iso(dueWindows(start, 6, at("2026-03-01T06:10:00Z"), 10))).toEqual([
      ["2026-03-01T00:00:00.000Z", "2026-03-01T06:00:00.000Z"],
    ]);
  });

  it("returns every missed window in order, up to the limit", () => {
    const windows = dueWindows(start, 1, at("2026-03-01T05:15:00Z"), 10);
    expect(windows.map((w) => w.start.getUTCHours())).toEqual([0, 1, 2, 3, 4]);
    expect(dueWindows(start, 1, at("2026-03-02T00:00:00Z"), 3)).toHaveLength(3);
  });
});
