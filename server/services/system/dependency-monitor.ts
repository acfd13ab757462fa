import type { Logger } from "../../logger.js";

/** The dependencies whose health decides whether this process serves. */
export interface DependencyStatus {
  /** A query on Postgres succeeded. */
  readonly postgres: boolean;
  /** The job queue reached its tables. */
  readonly queue: boolean;
  /** This process's job worker loops are making progress (true when it runs none). */
  readonly workers: boolean;
}

/** Options of {@link createDependencyMonitor}. */
export interface DependencyMonitorOptions {
  /** Runs a trivial query; rejects when Postgres is unreachable. */
  checkPostgres: () => Promise<void>;
  /** Rejects when the queue cannot work. */
  checkQueue: () => Promise<void>;
  /** Rejects when a job worker loop of this process is stuck; absent when it runs none. */
  checkWorkers?: () => Promise<void>;
  /** Time between background checks. */
  intervalMs: number;
  /** Called whenever serving flips, and once with the first result. */
  onChange: (serving: boolean, status: DependencyStatus) => void;
  /** Called with the result of every check (the database gate follows Postgres alone). */
  onProbe?: (status: DependencyStatus) => void;
  log: Logger;
}

/**
 * Watches Postgres, the queue and this process's job workers so health reports follow them, and
 * recovers when they return.
 */
export interface DependencyMonitor {
  /** Checks now, then every interval. */
  start(): Promise<void>;
  /** Stops the background checks. */
  stop(): void;
  /** The result of the latest check. */
  status(): DependencyStatus;
  /** Checks now and returns the fresh result. */
  probe(): Promise<DependencyStatus>;
}

/** A check that has not answered in this long has timed out: a hung connection is an outage too. */
const CHECK_TIMEOUT_MS = 3_000;
/** Attempts in a row that must time out before a check fails: one stall is load, two are an outage. */
const TIMED_OUT_ATTEMPTS = 2;

/** Creates a {@link DependencyMonitor}. */
export function createDependencyMonitor(options: DependencyMonitorOptions): DependencyMonitor {
  let current: DependencyStatus = { postgres: false, queue: false, workers: false };
  const checkWorkers = options.checkWorkers ?? (async () => {});
  let serving: boolean | undefined;
  let timer: NodeJS.Timeout | undefined;

  async function probe(): Promise<DependencyStatus> {
    const [postgres, queue, workers] = await Promise.all([
      passes(options.checkPostgres, "postgres", options.log),
      passes(options.checkQueue, "queue", options.log),
      passes(checkWorkers, "workers", options.log),
    ]);
    current = { postgres, queue, workers };
    options.onProbe?.(current);
    const now = postgres && queue && workers;
    if (now !== serving) {
      serving = now;
      options.onChange(now, current);
    }
    return current;
  }

  return {
    async start() {
      await probe();
      const loop = () => {
        timer = setTimeout(() => {
          probe().finally(() => {
            if (timer) loop();
          });
        }, options.intervalMs);
        timer.unref();
      };
      loop();
    },
    stop() {
      clearTimeout(timer);
      timer = undefined;
    },
    status: () => current,
    probe,
  };
}

/**
 * Whether a check passes. An error fails it at once; a timeout is retried first: a loaded machine
 * can stall one connection attempt for seconds, while a frozen Postgres stalls every one.
 */
async function passes(check: () => Promise<void>, name: string, log: Logger): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    let timeout: NodeJS.Timeout | undefined;
    const timedOut = new Promise<"timed out">((resolve) => {
      timeout = setTimeout(() => resolve("timed out"), CHECK_TIMEOUT_MS);
    });
    try {
      if ((await Promise.race([check(), timedOut])) !== "timed out") return true;
      log.debug(`${name} check timed out after ${CHECK_TIMEOUT_MS} ms`, { attempt });
      if (attempt >= TIMED_OUT_ATTEMPTS) return false;
    } catch (error) {
      log.debug(`${name} check failed`, { error });
      return false;
    } finally {
      clearTimeout(timeout);
    }
  }
}
