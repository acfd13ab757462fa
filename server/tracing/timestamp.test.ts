import { describe, expect, it } from "vitest";
import { normalizeTimestamp } from "./timestamp.js";

describe("normalizeTimestamp", () => {
  it("keeps microseconds of ISO strings and converts epoch milliseconds, offsets and zone-less times to UTC", () => {
    expect(normalizeTimestamp("2026-11-21T04:37:55.244001Z", "t")).toEqual({
      iso: "2026-11-21T04:37:55.244001Z",
    });
    expect(normalizeTimestamp(1795235875306, "t")).toEqual({ iso: "2026-11-21T04:37:55.306000Z" });
    expect(normalizeTimestamp(1795235875306.5, "t")).toEqual({ iso: "2026-11-21T04:37:55.306500Z" });
    expect(normalizeTimestamp("2026-11-21T06:37:55.1+02:00", "t")).toEqual({
      iso: "2026-11-21T04:37:55.100000Z",
    });
    expect(normalizeTimestamp("2026-11-21 04:37:55", "t")).toEqual({ iso: "2026-11-21T04:37:55.000000Z" });
  });

  it("rejects what is not a timestamp", () => {
    expect(normalizeTimestamp("2026-13-01T00:00:00Z", "start_time")).toHaveProperty("error");
    expect(normalizeTimestamp(-1, "end_time")).toEqual({
      error: "end_time must be a time from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z, got -1",
    });
    expect(normalizeTimestamp("0001-01-01T00:00:00Z", "start_time")).toEqual({
      error:
        'start_time must be a time from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z, got "0001-01-01T00:00:00Z"',
    });
    expect(normalizeTimestamp(Number.POSITIVE_INFINITY, "end_time")).toHaveProperty("error");
    expect(normalizeTimestamp(true, "t")).toHaveProperty("error");
  });
});
