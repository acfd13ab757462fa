/**
 * Run slots: how many run attempts this process executes at once.
 *
 * Invariants, which every user of a slot relies on:
 * - at most `total` slots are held at any moment (a held slot is one an attempt runs in, or one
 *   reserved for a run its creator is claiming);
 * - a slot is given back exactly once: giving it back a second time throws, so a slot can neither
 *   leak nor be counted free twice;
 * - a slot given back goes to the oldest waiter before anyone can take it without waiting, so
 *   waiters are served in arrival order and `tryTake` never jumps the queue;
 * - a waiter that stops waiting (`takeWithin`'s time is up, or its signal aborts) leaves the queue
 *   before it resolves, so a slot freed later never goes to it;
 * - once closed (the process is stopping), no slot is handed out: `tryTake` answers undefined, and
 *   `take` (waiting or not) resolves undefined, so nothing new starts while a drain runs.
 */

/** A slot held by an attempt (or reserved for one): give it back once, when the attempt is over. */
export interface HeldSlot {
  release(): void;
}

/** How this process's execution slots are used. */
export interface RunSlotUsage {
  /** Runs this process executes at once (AGENTPLANE_RUN_WORKERS). */
  readonly total: number;
  /** Slots held by a run (or reserved for one being claimed). */
  readonly busy: number;
  /** Takers waiting for a slot: jobs' and the backlog's runs, and creations their callers wait on. */
  readonly waiting: number;
}

/** The slots of a process; see the invariants above. */
export interface RunSlots {
  /** A slot once one is free (waiting in arrival order); undefined when the slots close first. */
  take(): Promise<HeldSlot | undefined>;
  /**
   * A slot once one is free, as {@link take}, waiting at most `ms` milliseconds and only while
   * `signal` has not aborted; undefined when neither a slot nor the end of the wait came first.
   */
  takeWithin(ms: number, signal: AbortSignal): Promise<HeldSlot | undefined>;
  /** A free slot now, or undefined when none is free, someone waits for one, or the slots are closed. */
  tryTake(): HeldSlot | undefined;
  usage(): RunSlotUsage;
  /** Hands out no more slots; waiters get undefined. Held slots are given back as usual. */
  close(): void;
}

/** Creates `total` slots. */
export function createRunSlots(total: number): RunSlots {
  let free = total;
  let closed = false;
  const waiting: ((slot: HeldSlot | undefined) => void)[] = [];

  const hold = (): HeldSlot => {
    let released = false;
    return {
      release() {
        if (released) throw new Error("a run slot was given back twice");
        released = true;
        const next = closed ? undefined : waiting.shift();
        if (next) next(hold());
        else free += 1;
      },
    };
  };

  const take = (): Promise<HeldSlot | undefined> => {
    if (closed) return Promise.resolve(undefined);
    if (free > 0 && waiting.length === 0) {
      free -= 1;
      return Promise.resolve(hold());
    }
    return new Promise((resolve) => waiting.push(resolve));
  };

  return {
    take,
    takeWithin(ms, signal) {
      if (closed || signal.aborted) return Promise.resolve(undefined);
      if (free > 0 && waiting.length === 0) return take();
      return new Promise((resolve) => {
        const wake = (slot: HeldSlot | undefined) => {
          clearTimeout(timer);
          signal.removeEventListener("abort", giveUp);
          resolve(slot);
        };
        const giveUp = () => {
          const at = waiting.indexOf(wake);
          if (at >= 0) waiting.splice(at, 1);
          wake(undefined);
        };
        const timer = setTimeout(giveUp, ms);
        signal.addEventListener("abort", giveUp, { once: true });
        waiting.push(wake);
      });
    },
    tryTake() {
      if (closed || free === 0 || waiting.length > 0) return undefined;
      free -= 1;
      return hold();
    },
    usage: () => ({ total, busy: total - free, waiting: waiting.length }),
    close() {
      closed = true;
      for (const wake of waiting.splice(0)) wake(undefined);
    },
  };
}
