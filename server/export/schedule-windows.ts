import type { Partition } from "./partitions.js";

/** A spawned export starts this long after its window ends (the seed's scheduled-export rule 4). */
export const SPAWN_DELAY_SECONDS = 10 * 60;

/**
 * The windows of a schedule that are due at `now`, from `nextStart` on: [s, s + interval) for each
 * s = nextStart + k·interval whose end is at least {@link SPAWN_DELAY_SECONDS} before `now`, at
 * most `limit` of them (the caller picks up the rest on its next pass).
 */
export function dueWindows(nextStart: Date, intervalHours: number, now: Date, limit: number): Partition[] {
  const intervalMs = intervalHours * 60 * 60 * 1000;
  const latestEnd = now.getTime() - SPAWN_DELAY_SECONDS * 1000;
  const windows: Partition[] = [];
  for (let start = nextStart.getTime(); start + intervalMs <= latestEnd && windows.length < limit; ) {
    windows.push({ start: new Date(start), end: new Date(start + intervalMs) });
    start += intervalMs;
  }
  return windows;
}
