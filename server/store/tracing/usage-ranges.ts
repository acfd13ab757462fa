/**
 * The time units and ranges usage rollups are kept and read in: the tracing layer
 * (tracing/usage-window.ts) computes them, store/tracing/usage-store.ts queries with them. They live here,
 * below both, so that the store needs nothing from the layer above it.
 */

/** A bucket unit; also the `date_trunc` field name Postgres aligns it with. */
export type UsageUnit = "hour" | "day" | "week" | "month" | "year";

/** A half-open time range [from, to); empty when from >= to. */
export interface TimeRange {
  from: Date;
  to: Date;
}

/**
 * Which rollup rows cover a requested range: daily rows for the whole UTC days inside it, hourly
 * rows for the partial days at its edges (and for the whole range when the buckets are hourly). The
 * range is first widened to whole UTC hours (the finest rollup), so a trace counts when the hour it
 * was received in overlaps the range.
 */
export interface RollupCover {
  /** Daily rows with bucket_start in this range. */
  days: TimeRange;
  /** Hourly rows with bucket_start in either of these ranges. */
  hours: [TimeRange, TimeRange];
}
