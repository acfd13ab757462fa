import type { RunEventRecord } from "../store/agents/run-event-store.js";

/**
 * Events of one run that its writer in this process handed over as it stored them, waiting for the
 * run's streams here to take them instead of reading Postgres. Each batch names the seq its writer
 * stored before it, so a stream takes events only when they follow what it already has: a stream
 * never skips an event, never sees one twice, and falls back to Postgres on any doubt.
 */
export interface RunEventFeed {
  /** Batches handed over and not yet taken, oldest first. */
  batches: FedBatch[];
  /** Rows in `batches`. */
  rows: number;
  /** The newest seq handed over (0 before any). */
  through: number;
}

/** Events handed over together. */
interface FedBatch {
  /**
   * The seq the writer stored right before the batch; for its first batch 0 when nothing of the
   * run was stored before it, else undefined.
   */
  previousSeq: number | undefined;
  rows: readonly RunEventRecord[];
}

/**
 * Events kept between two takes: a page of a stream's reads. A stream that falls further behind (a
 * slow client) reads Postgres instead, so memory stays bounded.
 */
export const MAX_FED_ROWS = 100;

/** An empty feed. */
export function createRunEventFeed(): RunEventFeed {
  return { batches: [], rows: 0, through: 0 };
}

/** Adds a stored batch (rows in seq order); past {@link MAX_FED_ROWS} the feed drops what it holds. */
export function feedEvents(
  feed: RunEventFeed,
  previousSeq: number | undefined,
  rows: readonly RunEventRecord[],
): void {
  const last = rows[rows.length - 1];
  if (!last) return;
  if (feed.rows + rows.length > MAX_FED_ROWS) {
    // Nobody took the earlier ones: the streams read Postgres, where all of them are.
    feed.batches = [];
    feed.rows = 0;
  } else {
    feed.batches.push({ previousSeq, rows });
    feed.rows += rows.length;
  }
  feed.through = Math.max(feed.through, last.seq);
}

/**
 * The events of the feed after seq `after` that follow it with none missing, and the seq they
 * reach: a batch continues the chain when its writer's previous batch ended there or it contains
 * it. Batches at or before `after` are dropped. Undefined when the first batch past `after` does
 * not follow it (a gap: read Postgres).
 */
export function takeFedEvents(
  feed: RunEventFeed,
  after: number,
): { rows: RunEventRecord[]; upTo: number } | undefined {
  let cursor = after;
  const rows: RunEventRecord[] = [];
  while (feed.batches.length > 0) {
    const batch = feed.batches[0] as FedBatch;
    const last = batch.rows[batch.rows.length - 1]?.seq ?? 0;
    if (last > cursor) {
      const follows = batch.previousSeq === cursor || batch.rows.some((row) => row.seq === cursor);
      if (!follows) return rows.length > 0 ? { rows, upTo: cursor } : undefined;
      for (const row of batch.rows) if (row.seq > cursor) rows.push(row);
      cursor = last;
    }
    feed.batches.shift();
    feed.rows -= batch.rows.length;
  }
  return { rows, upTo: cursor };
}
