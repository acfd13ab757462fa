/** One partition of an export: a time range within one UTC day, start inclusive, end exclusive. */
export interface Partition {
  start: Date;
  end: Date;
}

/** Milliseconds in a day: partitions are UTC days. */
const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Splits [start, end) into one partition per UTC day it touches; the first and the last may be
 * partial. `end` must be after `start`.
 */
export function dayPartitions(start: Date, end: Date): Partition[] {
  if (!(end.getTime() > start.getTime())) throw new Error("a partition range must end after it starts");
  const partitions: Partition[] = [];
  let from = start.getTime();
  while (from < end.getTime()) {
    const nextMidnight = Math.floor(from / DAY_MS) * DAY_MS + DAY_MS;
    const to = Math.min(nextMidnight, end.getTime());
    partitions.push({ start: new Date(from), end: new Date(to) });
    from = to;
  }
  return partitions;
}

/** Number of UTC days [start, end) touches, without building them. */
export function dayPartitionCount(start: Date, end: Date): number {
  const first = Math.floor(start.getTime() / DAY_MS);
  const last = Math.floor((end.getTime() - 1) / DAY_MS);
  return last - first + 1;
}
