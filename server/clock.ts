/** Where time comes from, so that work driven by the calendar (export schedules) can be tested. */
export interface Clock {
  /** The current time. */
  now(): Date;
}

/** The system clock. */
export const systemClock: Clock = { now: () => new Date() };
