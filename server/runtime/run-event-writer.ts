/**
 * Run events on their way to Postgres: every run of a process hands its events to one batcher,
 * which writes what all runs pushed during a turn of the event loop in one statement (group
 * commit, as store/batching/coalescer.ts does for CRUD), each run's events in order.
 *
 * Invariants:
 * - a run's events are stored in the order pushed: a run has at most one write in flight, and
 *   the events of one write are inserted in order (their seqs rise in it);
 * - what any run pushes during one turn goes out in one statement at the end of the turn; what a
 *   run pushes while its write is in flight goes in a later one;
 * - a run's first output (its first event after `metadata`) goes before the end of its turn
 *   instead (once the microtasks queued before it ran), with the `metadata` still waiting: a graph
 *   runs its next nodes, and their tracing callbacks, in the same turn as the chunk that produced
 *   the event, and the statement then travels while they run rather than after them;
 * - a run's `metadata` waits for its first output up to {@link METADATA_HOLD_MS} and goes in its
 *   statement, else alone after that wait (or at once when the run's events are flushed or taken):
 *   sent alone at once, it would be in flight when the first output comes, which then waits for its
 *   answer, read only once the graph's first step leaves the event loop;
 * - a statement of several runs that fails is retried run by run, so one run's failure fails that
 *   run's writer alone; a writer whose write failed writes nothing more and reports the failure;
 * - each write is handed over as stored (`handOff`), in order, so the run's streams in this
 *   process take its events without reading Postgres.
 *
 * Memory is bounded by what the graphs produce while one statement is in flight.
 */
import type { Logger } from "../logger.js";
import { appendEventBatches, type EventRun, type NewRunEvent } from "../store/agents/run-event-store.js";
import type { StoredDataCipher } from "../store/crypto/stored-data-cipher.js";
import type { Sql } from "../store/db.js";
import { toPlainJson } from "./plain-json.js";
import type { StoredBatch } from "./run-event-bus.js";
import type { RunStreamEvent } from "./run-stream-event.js";

/**
 * The seed's ceiling on one stream message: an event whose JSON is larger is skipped with a
 * warning rather than sent (a client could not hold it, and Postgres text tops out at 1 GB).
 */
export const MAX_EVENT_BYTES = 128 * 1024 * 1024;

/**
/**
 * Statements of events in flight at once: with two, a statement held up (a slow plan, a full
 * socket) does not stall every run's events, while batches still grow with the load.
 */
const STATEMENTS_IN_FLIGHT = 2;

/**
 * An event as it is stored: produced now, its data as JSON text (encrypted with `cipher`, for a
 * write through a transaction, which encrypts nothing itself).
 */
export function storedEvent({ event, data }: RunStreamEvent, cipher?: StoredDataCipher): NewRunEvent {
  const json = JSON.stringify(toPlainJson(data)) ?? "null";
  return { ms: Date.now(), event, data: cipher ? cipher.encryptJsonText(json) : json };
}

/** Writes a run's events to Postgres as they happen; see the invariants above. */
export interface RunEventWriter {
  /** Queues an event; it is written with the next batch. */
  push(event: RunStreamEvent): void;
  /** Resolves once every event pushed so far is written; rejects with the first failed write. */
  flush(): Promise<void>;
  /**
   * Waits for the write in flight (if any), then takes the events not written yet, which the
   * caller stores itself (a run's end writes them with its end event); rejects with the first
   * failed write. Push nothing after it.
   */
  takeUnwritten(): Promise<NewRunEvent[]>;
  /** The seq of the last event written so far; undefined before the first write. */
  lastSeq(): number | undefined;
  /**
   * Resolves when the write in flight, if any, ends (stored or failed); at once when none is.
   * Sends nothing itself (a held `metadata` keeps waiting) and never rejects: for work that
   * should reach Postgres after the run's events of the moment (the run's checkpoint writes).
   */
  settled(): Promise<void>;
}

/**
 * Told that a batch is being written; returns what hears, once the write is over, the batch as
 * stored (nothing when it failed): the seq the same writer stored before it, and its rows. A
 * writer's first batch follows 0 when no event of the run was stored before it (the run's first
 * events), and undefined when some were (an earlier attempt's).
 */
export type EventHandOff = () => (stored?: StoredBatch) => void;

/** The writers of a process's runs, writing through one batcher. */
export interface RunEventBatcher {
  /** A writer of `run`'s events. */
  writer(run: EventRun, handOff?: EventHandOff): RunEventWriter;
}

/** The event every run's stream starts with (run-executor.ts); the first output comes after it. */
const METADATA_EVENT = "metadata";

/**
 * How long a run's `metadata` waits for its first output (see the invariants). A graph whose first
 * step is local work (the runs bench's one node) outputs within a few milliseconds; one that
 * calls a model first takes hundreds, and its `metadata` then goes after this wait, later by a
 * time no client notices.
 */
export const METADATA_HOLD_MS = 20;

/** One run's writer, as the batcher sees it. */
interface Writer {
  run: EventRun;
  handOff: EventHandOff | undefined;
  /** Pushed and not yet sent. */
  pending: NewRunEvent[];
  /** Whether a write of it is in flight. */
  writing: boolean;
  /** Whether its first write is still to come. */
  first: boolean;
  /** Whether its first output has yet to go out: that one's write starts at once. */
  eager: boolean;
  /** Whether a `metadata` alone may go: its wait for the first output is over. */
  released: boolean;
  /** The end of that wait, while it runs. */
  hold: NodeJS.Timeout | undefined;
  last: number | undefined;
  failure: unknown;
  /** Resolved whenever a write of it ends. */
  idle: (() => void)[];
}

/** What a statement carries of one writer. */
interface Sending {
  writer: Writer;
  events: NewRunEvent[];
  handOver: ((stored?: StoredBatch) => void) | undefined;
}

/** Creates the batcher of a process, writing on `sql` (its pool: events are encrypted with its cipher). */
export function createRunEventBatcher(sql: Sql, log: Logger): RunEventBatcher {
  const ready = new Set<Writer>();
  let statements = 0;
  let soon = false;
  let atTurnEnd = false;

  const settle = (writer: Writer): void => {
    for (const wake of writer.idle.splice(0)) wake();
  };

  /** Writes one statement of `sendings`; a failure of several is retried writer by writer. */
  const write = async (sendings: Sending[]): Promise<void> => {
    let results: Awaited<ReturnType<typeof appendEventBatches>>;
    try {
      results = await appendEventBatches(
        sql,
        sendings.map((s) => ({ run: s.writer.run, events: s.events, first: s.writer.first })),
      );
    } catch (error) {
      if (sendings.length > 1) {
        await Promise.all(sendings.map((s) => write([s])));
        return;
      }
      const [only] = sendings;
      if (only) {
        only.writer.failure ??= error;
        only.handOver?.();
      }
      return;
    }
    sendings.forEach((s, i) => {
      const written = results[i];
      const { writer } = s;
      let previousSeq = writer.last;
      if (writer.first && written?.fromStart) previousSeq = 0;
      writer.first = false;
      const rows = written?.rows ?? [];
      writer.last = rows[rows.length - 1]?.seq ?? writer.last;
      s.handOver?.({ previousSeq, rows });
    });
  };

  const flush = (): void => {
    soon = false;
    atTurnEnd = false;
    if (statements >= STATEMENTS_IN_FLIGHT || ready.size === 0) return;
    const sendings: Sending[] = [];
    for (const writer of ready) {
      if (writer.pending.length === 0 || writer.writing) continue;
      const events = writer.pending;
      writer.pending = [];
      writer.writing = true;
      if (events.some((e) => e.event !== METADATA_EVENT)) writer.eager = false;
      sendings.push({ writer, events, handOver: writer.handOff?.() });
    }
    ready.clear();
    if (sendings.length === 0) return;
    statements += 1;
    void write(sendings).finally(() => {
      statements -= 1;
      for (const { writer } of sendings) {
        writer.writing = false;
        if (writer.pending.length > 0 && writer.failure === undefined) schedule(writer);
        settle(writer);
      }
      // Writers that became ready while every statement was in flight go now.
      if (ready.size > 0) flush();
    });
  };

  /** Lets `writer`'s lone `metadata` go at the next turn's end. */
  const release = (writer: Writer): void => {
    writer.released = true;
    clearTimeout(writer.hold);
    writer.hold = undefined;
  };

  const schedule = (writer: Writer): void => {
    if (writer.writing) {
      ready.add(writer);
      return;
    }
    const output = writer.pending.some((e) => e.event !== METADATA_EVENT);
    if (writer.eager && !output && !writer.released) {
      writer.hold ??= setTimeout(() => {
        release(writer);
        schedule(writer);
      }, METADATA_HOLD_MS);
      return;
    }
    ready.add(writer);
    if (writer.eager && output) {
      release(writer);
      if (!soon) {
        soon = true;
        queueMicrotask(flush);
      }
    } else if (!atTurnEnd && !soon) {
      atTurnEnd = true;
      setImmediate(flush);
    }
  };

  /** Resolves when the next write of `writer` ends. */
  const writeEnded = (writer: Writer): Promise<void> =>
    new Promise<void>((resolve) => writer.idle.push(resolve));

  return {
    writer(run, handOff) {
      const writer: Writer = {
        run,
        handOff,
        pending: [],
        writing: false,
        first: true,
        eager: true,
        released: false,
        hold: undefined,
        last: undefined,
        failure: undefined,
        idle: [],
      };
      return {
        push(event) {
          if (writer.failure !== undefined) return;
          const stored = storedEvent(event);
          if (stored.data.length > MAX_EVENT_BYTES) {
            log.warn("run event skipped: larger than the 128 MB ceiling", {
              runId: run.runId,
              event: event.event,
              bytes: stored.data.length,
            });
            return;
          }
          writer.pending.push(stored);
          schedule(writer);
        },
        lastSeq: () => writer.last,
        settled: () => (writer.writing ? writeEnded(writer) : Promise.resolve()),
        async flush() {
          // Checked and acted on in one step: no write can start between the check and the wait.
          for (;;) {
            if (writer.failure !== undefined) throw writer.failure;
            if (!writer.writing && writer.pending.length === 0) return;
            release(writer);
            if (!writer.writing) schedule(writer);
            await writeEnded(writer);
          }
        },
        async takeUnwritten() {
          for (;;) {
            if (writer.failure !== undefined) throw writer.failure;
            if (!writer.writing) {
              release(writer);
              ready.delete(writer);
              const unwritten = writer.pending;
              writer.pending = [];
              return unwritten;
            }
            await writeEnded(writer);
          }
        },
      };
    },
  };
}
