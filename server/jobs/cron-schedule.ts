import { CronExpressionParser } from "cron-parser";

/** Fields of the cron syntax accepted: minute, hour, day of month, month, day of week. */
const FIELDS = 5;

/** A schedule that cannot be used, with a message saying what to fix. */
export class ScheduleError extends Error {}

/** Whether `zone` is an IANA time zone this runtime knows. */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/**
 * The first time after `after` that `schedule` (five fields, read in `timeZone`, UTC when null)
 * matches; null when that is past `endTime`. Throws {@link ScheduleError} for a schedule or time zone
 * that cannot be read.
 */
export function nextFireTime(
  schedule: string,
  timeZone: string | null,
  after: Date,
  endTime: Date | null = null,
): Date | null {
  const fields = schedule.trim().split(/\s+/);
  if (fields.length !== FIELDS || fields[0] === "")
    throw new ScheduleError(
      `schedule ${JSON.stringify(schedule)} must have 5 fields: minute hour day-of-month month day-of-week (e.g. "*/5 * * * *")`,
    );
  if (timeZone !== null && !isTimeZone(timeZone))
    throw new ScheduleError(
      `timezone ${JSON.stringify(timeZone)} is not an IANA time zone (e.g. "Europe/Paris")`,
    );
  let next: Date;
  try {
    next = CronExpressionParser.parse(fields.join(" "), {
      currentDate: after,
      tz: timeZone ?? "UTC",
      strict: false,
    })
      .next()
      .toDate();
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ScheduleError(`schedule ${JSON.stringify(schedule)} is not a valid cron expression: ${reason}`);
  }
  return endTime !== null && next.getTime() > endTime.getTime() ? null : next;
}
