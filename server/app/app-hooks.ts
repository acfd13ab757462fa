import type { Clock } from "../clock.js";

/** What a caller can replace in the process it starts (tests drive export schedules with a clock). */
export interface AppHooks {
  /** Where calendar-driven work reads the time; the system clock by default. */
  clock?: Clock;
  /** Seconds between cron ticks at most (tests with an injected clock tick faster). */
  cronTickSeconds?: number;
  /** How long a job worker loop may go without progress before /ok reports it stuck; the queue's default. */
  workerStallAfterMs?: number;
}
