import type { RollupCover, UsageUnit } from "../store/tracing/usage-ranges.js";

/**
 * Time bucketing of granular usage. Buckets are UTC and calendar-aligned on their unit: an hour, a
 * day (00:00 UTC), an ISO week (Monday 00:00 UTC), a calendar month, a calendar year. The stride
 * reported to clients is the unit's nominal size ({hours: 1}, {days: 1}, {days: 7}, {days: 30},
 * {days: 365}); a monthly or yearly bucket still covers its whole calendar month or year, so its end
 * is the next aligned boundary, never start + 30 (or 365) days.
 */

/** Bucket size as the API reports it: exactly one field is non-zero. */
export interface UsageStride {
  days: number;
  hours: number;
}

/** Aggregations a caller may ask for instead of the one derived from the range. */
export const AGGREGATIONS: Readonly<Record<string, UsageUnit>> = {
  daily: "day",
  weekly: "week",
  monthly: "month",
};

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** Range lengths, in days, up to which each unit is chosen (the seed's stride table). */
const DAILY_UP_TO_DAYS = 31;
const WEEKLY_UP_TO_DAYS = 93;
const MONTHLY_UP_TO_DAYS = 366;

/** Nominal stride of each unit. */
const STRIDES: Readonly<Record<UsageUnit, UsageStride>> = {
  hour: { days: 0, hours: 1 },
  day: { days: 1, hours: 0 },
  week: { days: 7, hours: 0 },
  month: { days: 30, hours: 0 },
  year: { days: 365, hours: 0 },
};

/**
 * The unit the seed's stride table derives from a range of (end - start) days, as a real number:
 * under 1 → hourly, up to 31 → daily, up to 93 → weekly, up to 366 → monthly, beyond → yearly.
 */
export function unitForRange(start: Date, end: Date): UsageUnit {
  const days = (end.getTime() - start.getTime()) / DAY_MS;
  if (days < 1) return "hour";
  if (days <= DAILY_UP_TO_DAYS) return "day";
  if (days <= WEEKLY_UP_TO_DAYS) return "week";
  if (days <= MONTHLY_UP_TO_DAYS) return "month";
  return "year";
}

/** The stride the API reports for a unit. */
export function strideOf(unit: UsageUnit): UsageStride {
  return { ...STRIDES[unit] };
}

/** The start of the bucket of `unit` that holds `at`. */
export function bucketStartOf(unit: UsageUnit, at: Date): Date {
  const t = at.getTime();
  switch (unit) {
    case "hour":
      return new Date(Math.floor(t / HOUR_MS) * HOUR_MS);
    case "day":
      return new Date(Math.floor(t / DAY_MS) * DAY_MS);
    case "week": {
      const day = Math.floor(t / DAY_MS) * DAY_MS;
      // getUTCDay: Sunday 0 … Saturday 6; ISO weeks start on Monday.
      const sinceMonday = (new Date(day).getUTCDay() + 6) % 7;
      return new Date(day - sinceMonday * DAY_MS);
    }
    case "month":
      return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));
    case "year":
      return new Date(Date.UTC(at.getUTCFullYear(), 0, 1));
  }
}

/** The end (exclusive) of the bucket starting at `start`: the next aligned boundary. */
export function bucketEndOf(unit: UsageUnit, start: Date): Date {
  const t = start.getTime();
  switch (unit) {
    case "hour":
      return new Date(t + HOUR_MS);
    case "day":
      return new Date(t + DAY_MS);
    case "week":
      return new Date(t + 7 * DAY_MS);
    case "month":
      return new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1));
    case "year":
      return new Date(Date.UTC(start.getUTCFullYear() + 1, 0, 1));
  }
}

/**
 * The last millisecond of year 9999. A range ending in that year's last hour would widen to
 * 10000-01-01, which has no four-digit ISO 8601 form: postgres.js sends dates as such text, so
 * Postgres would refuse it. Rollup buckets start on whole hours, so an end clamped here still covers
 * the last one.
 */
const LATEST_END_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/**
 * See {@link RollupCover}. Buckets of `unit` are summed from the rows: an hourly bucket only from
 * hourly rows (a daily row holds its day's traces under 00:00, whatever their hour), so a range
 * under a day whose whole hours make a whole UTC day is still read hour by hour.
 */
export function rollupCover(start: Date, end: Date, unit: UsageUnit): RollupCover {
  const from = Math.floor(start.getTime() / HOUR_MS) * HOUR_MS;
  const to = Math.min(Math.ceil(end.getTime() / HOUR_MS) * HOUR_MS, LATEST_END_MS);
  const dayFrom = Math.ceil(from / DAY_MS) * DAY_MS;
  const dayTo = Math.floor(to / DAY_MS) * DAY_MS;
  const at = (t: number) => new Date(t);
  if (unit === "hour" || dayFrom >= dayTo) {
    return {
      days: { from: at(dayFrom), to: at(dayFrom) },
      hours: [
        { from: at(from), to: at(to) },
        { from: at(to), to: at(to) },
      ],
    };
  }
  return {
    days: { from: at(dayFrom), to: at(dayTo) },
    hours: [
      { from: at(from), to: at(dayFrom) },
      { from: at(dayTo), to: at(to) },
    ],
  };
}
