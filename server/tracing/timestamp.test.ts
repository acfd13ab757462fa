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

  it("answers the canonical form as the general parser does (the fast path), valid or not", () => {
    for (const text of [
      "2024-02-29T23:59:59.999999Z",
      "2000-02-29T00:00:00.000000Z",
      "1970-01-01T00:00:00.000000Z",
      "9999-12-31T23:59:59.999999Z",
      "2023-02-29T00:00:00.000000Z",
      "1900-02-29T00:00:00.000000Z",
      "2026-04-31T00:00:00.000000Z",
      "2026-01-01T24:00:00.000000Z",
      "2026-01-01T00:00:60.000000Z",
      "1969-12-31T23:59:59.999999Z",
      "2026-1a-01T00:00:00.000000Z",
    ]) {
      // A space for the T: the same instant, which only the general parser reads.
      const general = normalizeTimestamp(text.replace("T", " "), "t");
      const canonical = normalizeTimestamp(text, "t");
      if ("error" in general) expect(canonical).toHaveProperty("error");
      else expect(canonical).toEqual(general);
    }
    expect(normalizeTimestamp("2024-02-29T23:59:59.999999Z", "t")).toEqual({
      iso: "2024-02-29T23:59:59.999999Z",
    });
  });
});
