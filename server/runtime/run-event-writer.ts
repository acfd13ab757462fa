import type { Logger } from "../logger.js";
import type { Sql } from "../store/db.js";
import {
  appendFirstRunEvents,
  appendRunEvents,
  type NewRunEvent,
  type RunEventRecord,
} from "../store/run-event-store.js";
import type { StoredDataCipher } from "../store/stored-data-cipher.js";
import { toPlainJson } from "./plain-json.js";
import type { StoredBatch } from "./run-event-bus.js";
import type { RunStreamEvent } from "./run-stream-modes.js";

/**
 * The seed's ceiling on one stream message: an event whose JSON is larger is skipped with a
 * warning rather than sent (a client could not hold it, and Postgres text tops out at 1 GB).
 */
export const MAX_EVENT_BYTES = 128 * 1024 * 1024;

/**
 * An event as it is stored: produced now, its data as JSON text (encrypted with `cipher`, for a
 * write through a transaction, which encrypts nothing itself).
 */
export function storedEvent({ event, data }: RunStreamEvent, cipher?: StoredDataCipher): NewRunEvent {
  const json = JSON.stringify(toPlainJson(data)) ?? "null";
  return { ms: Date.now(), event, data: cipher ? cipher.encryptJsonText(json) : json };
}

/** Writes a run's events to Postgres as they happen; see {@link createRunEventWriter}. */
export interface RunEventWriter {
  /** Queues an event; it is written with the next batch. */
  push(event: RunStreamEvent): void;
  /** Resolves once every event pushed so far is written; rejects with the first failed write. */
  flush(): Promise<void>;
  /** The seq of the last event written so far; undefined before the first write. */
  lastSeq(): number | undefined;
}

/**
 * Told that a batch is being written; returns what hears, once the write is over, the batch as
 * stored (nothing when it failed): the seq the same writer stored before it, and its rows. A
 * writer's first batch follows 0 when no event of the run was stored before it (the run's first
 * events), and undefined when some were (an earlier attempt's).
 */
export type EventHandOff = () => (stored?: StoredBatch) => void;

/** The event every run's stream starts with (run-executor.ts); the first output comes after it. */
const METADATA_EVENT = "metadata";

/**
 * Batches a run's events: an event pushed while no write runs starts one at the end of the current
 * turn, events pushed until then or while it runs go out together in the next, so a fast graph
 * costs one statement per batch rather than per event. Until the run's first output (its first
 * event after `metadata`) has gone out, a write starts at once instead (after the microtasks queued
 * before it): a graph runs its next nodes, and their tracing callbacks, in the same turn as the
 * chunk that produced the event, and the statement then travels while they run rather than after
 * them. Memory is bounded by what the graph produces while one write is in flight. `handOff`
 * hears of each batch as it is written.
 */
export function createRunEventWriter(
  sql: Sql,
  run: { workspaceId: string; runId: string; threadId: string },
  log: Logger,
  handOff?: EventHandOff,
): RunEventWriter {
  let pending: NewRunEvent[] = [];
  let last: number | undefined;
  let first = true;
  // Whether the run's first output has yet to go out: until then writes start at once.
  let eager = true;
  let writing: Promise<void> | undefined;
  let failure: unknown;

  const drain = async (): Promise<void> => {
    while (pending.length > 0) {
      const batch = pending;
      pending = [];
      if (batch.some((e) => e.event !== METADATA_EVENT)) eager = false;
      const handOver = handOff?.();
      let stored: StoredBatch | undefined;
      try {
        let rows: RunEventRecord[];
        let previousSeq = last;
        if (first) {
          const written = await appendFirstRunEvents(sql, run, batch);
          first = false;
          rows = written.rows;
          if (written.fromStart) previousSeq = 0;
        } else rows = await appendRunEvents(sql, run, batch);
        last = rows[rows.length - 1]?.seq ?? last;
        stored = { previousSeq, rows };
      } finally {
        handOver?.(stored);
      }
    }
  };
  const start = (): void => {
    if (writing) return;
    writing = new Promise<void>((resolve) => (eager ? queueMicrotask(resolve) : setImmediate(resolve)))
      .then(drain)
      .catch((error: unknown) => {
        failure ??= error;
      })
      .finally(() => {
        writing = undefined;
        if (pending.length > 0 && failure === undefined) start();
      });
  };

  return {
    push(event) {
      const stored = storedEvent(event);
      if (stored.data.length > MAX_EVENT_BYTES) {
        log.warn("run event skipped: larger than the 128 MB ceiling", {
          runId: run.runId,
          event: event.event,
          bytes: stored.data.length,
        });
        return;
      }
      pending.push(stored);
      start();
    },
    lastSeq: () => last,
    async flush() {
      while (writing) await writing;
      if (failure !== undefined) throw failure;
      if (pending.length > 0) {
        start();
        await this.flush();
      }
    },
  };
}
