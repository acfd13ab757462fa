import { describe, expect, it } from "vitest";
import { isTimeZone, nextFireTime, ScheduleError } from "./cron-schedule.js";

const at = (iso: string) => new Date(iso);

describe("nextFireTime", () => {
  it("is the first match strictly after the given time, in UTC by default", () => {
    expect(nextFireTime("*/15 * * * *", null, at("2030-01-01T10:15:00Z"))).toEqual(
      at("2030-01-01T10:30:00Z"),
    );
    expect(nextFireTime("0 0 * * 1", null, at("2030-01-01T10:00:00Z"))).toEqual(at("2030-01-07T00:00:00Z"));
  });

  it("reads the schedule in its time zone, across a daylight-saving change", () => {
    // 09:00 in New York is 14:00 UTC in winter and 13:00 UTC once clocks go forward (9 March 2030).
    expect(nextFireTime("0 9 * * *", "America/New_York", at("2030-03-08T15:00:00Z"))).toEqual(
      at("2030-03-09T14:00:00Z"),
    );
    expect(nextFireTime("0 9 * * *", "America/New_York", at("2030-03-09T15:00:00Z"))).toEqual(
      at("2030-03-10T13:00:00Z"),
    );
  });

  it("is null once the next match is past the end time", () => {
    const end = at("2030-01-01T10:40:00Z");
    expect(nextFireTime("*/30 * * * *", null, at("2030-01-01T10:00:00Z"), end)).toEqual(
      at("2030-01-01T10:30:00Z"),
    );
    expect(nextFireTime("*/30 * * * *", null, at("2030-01-01T10:30:00Z"), end)).toBeNull();
  });

  it("refuses what is not five fields, a bad field or an unknown time zone, saying what to fix", () => {
    const now = at("2030-01-01T00:00:00Z");
    for (const [schedule, zone, message] of [
      ["* * * *", null, /must have 5 fields/],
      ["0 * * * * *", null, /must have 5 fields/],
      ["", null, /must have 5 fields/],
      ["60 * * * *", null, /not a valid cron expression/],
      ["* * 31 2 *", null, /not a valid cron expression/],
      ["* * * * *", "Europe/Atlantis", /not an IANA time zone/],
    ] as const) {
      expect(() => nextFireTime(schedule, zone, now)).toThrow(ScheduleError);
      expect(() => nextFireTime(schedule, zone, now)).toThrow(message);
    }
  });
});

it("isTimeZone knows IANA names", () => {
  expect(isTimeZone("Europe/Paris")).toBe(true);
  expect(isTimeZone("UTC")).toBe(true);
  expect(isTimeZone("Paris")).toBe(false);
});
