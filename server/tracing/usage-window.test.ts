import { describe, expect, it } from "vitest";
import { bucketEndOf, bucketStartOf, rollupCover, strideOf, unitForRange } from "./usage-window.js";

const at = (iso: string) => new Date(iso);
const HOUR_MS = 3_600_000;

describe("unitForRange", () => {
  const start = at("2026-01-01T00:00:00Z");
  const unitAfter = (ms: number) => unitForRange(start, new Date(start.getTime() + ms));
  it("follows the stride table at its boundaries", () => {
    expect(unitAfter(24 * HOUR_MS - 1)).toBe("hour");
    expect(unitAfter(24 * HOUR_MS)).toBe("day");
    expect(unitAfter(31 * 24 * HOUR_MS)).toBe("day");
    expect(unitAfter(31 * 24 * HOUR_MS + 1)).toBe("week");
    expect(unitAfter(93 * 24 * HOUR_MS)).toBe("week");
    expect(unitAfter(93 * 24 * HOUR_MS + 1)).toBe("month");
    expect(unitAfter(366 * 24 * HOUR_MS)).toBe("month");
    expect(unitAfter(366 * 24 * HOUR_MS + 1)).toBe("year");
  });
  it("reports the nominal stride of each unit", () => {
    expect(strideOf("hour")).toEqual({ days: 0, hours: 1 });
    expect(strideOf("week")).toEqual({ days: 7, hours: 0 });
    expect(strideOf("month")).toEqual({ days: 30, hours: 0 });
    expect(strideOf("year")).toEqual({ days: 365, hours: 0 });
  });
});

describe("bucketStartOf and bucketEndOf", () => {
  it.each([
    ["hour", "2026-03-04T05:59:59.999Z", "2026-03-04T05:00:00.000Z", "2026-03-04T06:00:00.000Z"],
    ["day", "2026-03-04T23:59:59Z", "2026-03-04T00:00:00.000Z", "2026-03-05T00:00:00.000Z"],
    // 2026-03-01 is a Sunday: it belongs to the ISO week of Monday, February 23rd.
    ["week", "2026-03-01T12:00:00Z", "2026-02-23T00:00:00.000Z", "2026-03-02T00:00:00.000Z"],
    ["week", "2026-03-02T00:00:00Z", "2026-03-02T00:00:00.000Z", "2026-03-09T00:00:00.000Z"],
    ["month", "2026-02-28T23:00:00Z", "2026-02-01T00:00:00.000Z", "2026-03-01T00:00:00.000Z"],
    ["year", "2024-12-31T23:59:59Z", "2024-01-01T00:00:00.000Z", "2025-01-01T00:00:00.000Z"],
  ] as const)("aligns a %s bucket on UTC boundaries (%s)", (unit, instant, start, end) => {
    const bucket = bucketStartOf(unit, at(instant));
    expect(bucket.toISOString()).toBe(start);
    expect(bucketEndOf(unit, bucket).toISOString()).toBe(end);
  });
});

describe("rollupCover", () => {
  const iso = (r: { from: Date; to: Date }) => [r.from.toISOString(), r.to.toISOString()];
  it("reads whole days from daily rows and the partial days at the edges from hourly rows", () => {
    const cover = rollupCover(at("2026-03-01T10:30:00Z"), at("2026-03-04T04:30:00Z"), "day");
    expect(iso(cover.days)).toEqual(["2026-03-02T00:00:00.000Z", "2026-03-04T00:00:00.000Z"]);
    expect(cover.hours.map(iso)).toEqual([
      ["2026-03-01T10:00:00.000Z", "2026-03-02T00:00:00.000Z"],
      ["2026-03-04T00:00:00.000Z", "2026-03-04T05:00:00.000Z"],
    ]);
  });
  it("reads only hourly rows for a range within a day", () => {
    const cover = rollupCover(at("2026-03-01T10:30:00Z"), at("2026-03-01T12:00:00Z"), "hour");
    expect(cover.days.from.getTime()).toBe(cover.days.to.getTime());
    expect(iso(cover.hours[0])).toEqual(["2026-03-01T10:00:00.000Z", "2026-03-01T12:00:00.000Z"]);
    expect(cover.hours[1].from.getTime()).toBe(cover.hours[1].to.getTime());
  });
  it("reads only hourly rows for hourly buckets, even when the hours make a whole UTC day", () => {
    const cover = rollupCover(at("2026-03-01T00:01:00Z"), at("2026-03-02T00:00:00Z"), "hour");
    expect(cover.days.from.getTime()).toBe(cover.days.to.getTime());
    expect(iso(cover.hours[0])).toEqual(["2026-03-01T00:00:00.000Z", "2026-03-02T00:00:00.000Z"]);
    expect(cover.hours[1].from.getTime()).toBe(cover.hours[1].to.getTime());
  });
  it("reads only daily rows for a range of whole days", () => {
    const cover = rollupCover(at("2026-03-01T00:00:00Z"), at("2026-03-03T00:00:00Z"), "day");
    expect(iso(cover.days)).toEqual(["2026-03-01T00:00:00.000Z", "2026-03-03T00:00:00.000Z"]);
    for (const range of cover.hours) expect(range.from.getTime()).toBe(range.to.getTime());
  });
});

describe("rollupCover at the end of year 9999", () => {
  it("stays within four-digit years, still covering the last hour", () => {
    const cover = rollupCover(at("9999-12-30T12:00:00Z"), at("9999-12-31T23:30:00Z"), "day");
    const ends = [cover.days.to, ...cover.hours.map((range) => range.to)];
    for (const end of ends) expect(end.toISOString()).toMatch(/^9999-/);
    // The last day is no longer whole, so its hours come from hourly rows, the last one included.
    expect(cover.hours[0]).toEqual({ from: at("9999-12-30T12:00:00Z"), to: at("9999-12-31T23:59:59.999Z") });
  });
});
