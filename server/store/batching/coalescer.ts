import { pinSubmittedContext } from "../postgres/query-context-tags.js";

/**
 * Turns many concurrent one-row statements into a few statements of many rows.
 *
 * Under load, single-row calls (get a thread, create one, put a store item) pay far more for the
 * round trip than for the row: a statement, a socket write and a Postgres wake-up each. A coalescer
 * hands the items submitted during one turn of the event loop to `run` together, at the end of
 * that turn (`setImmediate`), and keeps at most `maxInFlight` batches running: what arrives while
 * they run waits for the first to finish and then goes as one batch. A lone request is sent at the
 * end of the turn that submitted it, so it waits for nothing; under load, batches grow with the
 * load, which is group commit as databases do it.
 *
 * Each item is still its own unit: `run` answers item by item, and when a batch of several fails,
 * each of its items is run again on its own, so that a bad item fails alone and the others succeed.
 * `run` must therefore be one statement (all or nothing) whose retry of a failed batch is safe.
 */
export type Coalescer<I, O> = (item: I) => Promise<O>;

/**
 * Batches each coalescer keeps in flight: with two, a batch held up by a row lock or a slow plan
 * does not stall every other call of its kind in the process, while batches still grow with load.
 * Measured on the store put at concurrency 32: one in flight used about 10 % less CPU per call
 * (bigger batches), a gain within the run-to-run noise of throughput; four or more gave smaller
 * batches and more Postgres wake-ups.
 */
const BATCHES_IN_FLIGHT = 2;

/**
 * Items per batch by default: one per call arriving in the same turn of the event loop, so 100
 * covers any realistic burst while keeping each statement small and quick.
 */
const MAX_BATCH = 100;

/** Options of {@link createCoalescer}. */
export interface CoalescerOptions<I, O> {
  /** Runs a batch; answer `i` belongs to `items[i]`. */
  run: (items: readonly I[]) => Promise<readonly O[]>;
  /** Largest batch; more waiting items are split into several batches. Default {@link MAX_BATCH}. */
  maxBatch?: number;
  /** Batches running at once; more wait for one of them to finish. Default {@link BATCHES_IN_FLIGHT}. */
  maxInFlight?: number;
}

interface Pending<I, O> {
  item: I;
  resolve: (answer: O) => void;
  reject: (error: unknown) => void;
}

/** A new {@link Coalescer} over `run`. */
export function createCoalescer<I, O>({
  run,
  maxBatch = MAX_BATCH,
  maxInFlight = BATCHES_IN_FLIGHT,
}: CoalescerOptions<I, O>): Coalescer<I, O> {
  let pending: Pending<I, O>[] = [];
  let inFlight = 0;
  let scheduled = false;
  /** `run` as a promise even when it throws synchronously. */
  const call = async (items: readonly I[]) => run(items);

  const runOne = (p: Pending<I, O>) => call([p.item]).then((answers) => p.resolve(answers[0] as O), p.reject);

  const runBatch = async (batch: Pending<I, O>[]): Promise<void> => {
    if (batch.length === 1) return runOne(batch[0] as Pending<I, O>);
    try {
      const answers = await call(batch.map((p) => p.item));
      for (const [i, p] of batch.entries()) p.resolve(answers[i] as O);
    } catch {
      await Promise.all(batch.map(runOne));
    }
  };

  const start = () => {
    while (pending.length > 0 && inFlight < maxInFlight) {
      const batch = pending.slice(0, maxBatch);
      pending = pending.slice(maxBatch);
      inFlight += 1;
      void runBatch(batch).finally(() => {
        inFlight -= 1;
        start();
      });
    }
  };

  const startAtEndOfTurn = () => {
    scheduled = false;
    start();
  };

  return (item) =>
    new Promise<O>((resolve, reject) => {
      // The batch is sent from whichever caller's turn flushes it: each item keeps its own caller's
      // encryption context (custom encryption at rest).
      pinSubmittedContext(item);
      pending.push({ item, resolve, reject });
      if (inFlight < maxInFlight && !scheduled) {
        scheduled = true;
        setImmediate(startAtEndOfTurn);
      }
    });
}
