import type { ConnectError } from "@connectrpc/connect";
import { databaseUnavailable } from "../database-outage.js";

/**
 * Makes API calls fail fast while Postgres is down instead of hanging: a frozen Postgres accepts
 * connections and never answers, and queries have no client-side deadline. The dependency monitor
 * tells the gate when Postgres stops and starts answering.
 */
export interface DatabaseGate {
  /** Throws UNAVAILABLE while Postgres is reported down. */
  admit(): void;
  /**
   * Settles as `work` does, or rejects with UNAVAILABLE as soon as Postgres is reported down, for
   * work already waiting on it. `work` is left to settle by itself (its outcome is ignored).
   */
  race<T>(work: Promise<T>): Promise<T>;
  /** False while Postgres is reported down. */
  open(): boolean;
  /** Records whether Postgres answers; on the change to down, every call in the race is refused. */
  set(up: boolean): void;
}

/** Creates a {@link DatabaseGate} that starts open (the server checks Postgres before it listens). */
export function createDatabaseGate(): DatabaseGate {
  let up = true;
  const waiting = new Set<(error: ConnectError) => void>();
  const refusal = databaseUnavailable;
  return {
    open: () => up,
    admit() {
      if (!up) throw refusal();
    },
    race<T>(work: Promise<T>): Promise<T> {
      if (!up) {
        work.catch(() => {});
        return Promise.reject(refusal());
      }
      return new Promise<T>((resolve, reject) => {
        waiting.add(reject);
        work.then(resolve, reject).finally(() => waiting.delete(reject));
      });
    },
    set(now) {
      if (up === now) return;
      up = now;
      if (up) return;
      for (const reject of waiting) reject(refusal());
      waiting.clear();
    },
  };
}
