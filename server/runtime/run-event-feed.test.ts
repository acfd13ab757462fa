import { describe, expect, it } from "vitest";
import type { RunEventRecord } from "../store/agents/run-event-store.js";
import { createRunEventFeed, feedEvents, MAX_FED_ROWS, takeFedEvents } from "./run-event-feed.js";

const row = (seq: number, event = "values"): RunEventRecord => ({
  seq,
  runId: "r",
  ms: 1_700_000_000_000 + seq,
  event,
  data: `{"seq":${seq}}`,
});
const seqs = (taken: { rows: RunEventRecord[] } | undefined) => taken?.rows.map((r) => r.seq);

describe("run event feed", () => {
  it("hands over batches that follow what the stream read, in order, once", () => {
    const feed = createRunEventFeed();
    feedEvents(feed, undefined, [row(5, "metadata")]);
    feedEvents(feed, 5, [row(9), row(12)]);
    feedEvents(feed, 12, [row(20, "__end__")]);
    // The stream read seq 5 from Postgres: the first batch is behind it, the rest follow on.
    const taken = takeFedEvents(feed, 5);
    expect(seqs(taken)).toEqual([9, 12, 20]);
    expect(taken?.upTo).toBe(20);
    expect(takeFedEvents(feed, 20)).toEqual({ rows: [], upTo: 20 });
    expect(feed.rows).toBe(0);
    expect(feed.through).toBe(20);
  });

  it("refuses a writer's first batch when the stream has not read up to it: a gap is read from Postgres", () => {
    const feed = createRunEventFeed();
    feedEvents(feed, undefined, [row(5, "metadata")]);
    expect(takeFedEvents(feed, 0)).toBeUndefined();
    // Nothing was dropped: after the read, the stream takes from where it is.
    expect(feed.rows).toBe(1);
    expect(takeFedEvents(feed, 5)).toEqual({ rows: [], upTo: 5 });
  });

  it("hands a stream that has seen nothing the run's first events, declared as following 0", () => {
    const feed = createRunEventFeed();
    feedEvents(feed, 0, [row(5, "metadata")]);
    feedEvents(feed, 5, [row(9)]);
    const taken = takeFedEvents(feed, 0);
    expect(seqs(taken)).toEqual([5, 9]);
    expect(taken?.upTo).toBe(9);
  });

  it("refuses a batch whose writer's previous batch the stream has not seen", () => {
    const feed = createRunEventFeed();
    feedEvents(feed, 7, [row(9)]);
    expect(takeFedEvents(feed, 5)).toBeUndefined();
  });

  it("continues inside a batch the stream read part of, and stops at a later gap", () => {
    const feed = createRunEventFeed();
    feedEvents(feed, 3, [row(4), row(6), row(8)]);
    feedEvents(feed, 30, [row(31)]);
    const taken = takeFedEvents(feed, 6);
    expect(seqs(taken)).toEqual([8]);
    expect(taken?.upTo).toBe(8);
    expect(takeFedEvents(feed, 8)).toBeUndefined();
  });

  it("drops what it holds past its bound and still knows the newest seq", () => {
    const feed = createRunEventFeed();
    let previous: number | undefined;
    for (let seq = 1; seq <= MAX_FED_ROWS + 1; seq++) {
      feedEvents(feed, previous, [row(seq)]);
      previous = seq;
    }
    expect(feed.rows).toBeLessThanOrEqual(MAX_FED_ROWS);
    expect(feed.through).toBe(MAX_FED_ROWS + 1);
    // What the stream can take falls short of the newest seq handed over: it reads Postgres.
    const taken = takeFedEvents(feed, 0);
    expect(taken === undefined || taken.upTo < feed.through).toBe(true);
  });
});
