import type { Logger } from "../../logger.js";
import type { Postmaster, PostmasterExit } from "./postmaster.js";

/** Restart attempts after one crash before giving up: with the backoff below, about 50 s of trying. */
const MAX_RESTART_ATTEMPTS = 10;
/** First wait before a restart: orphaned backends of a killed postmaster need a moment to exit. */
const FIRST_BACKOFF_MS = 250;
/** Longest wait between attempts, so a Postgres that can start again is back within seconds. */
const MAX_BACKOFF_MS = 8_000;
/**
 * A restarted Postgres must stay up this long before its next crash counts as a new outage with a
 * fresh set of attempts; a Postgres that crashes right after every start still runs out of attempts.
 */
const STABLE_AFTER_MS = 60_000;

/** Options of {@link supervisePostmaster}. */
export interface SupervisorOptions {
  /** Starts a new postmaster on the same directory and port; resolves once it accepts connections. */
  restart: () => Promise<Postmaster>;
  /** Receives one JSON line per crash, restart attempt, success and surrender. */
  log: Logger;
  /** Named in the log lines. */
  dataDir: string;
}

/** Keeps an embedded Postgres running: restarts it when it exits without being asked to. */
export interface PostmasterSupervisor {
  /** The postmaster running now, or undefined while it is down. */
  current(): Postmaster | undefined;
  /** Stops supervising and stops Postgres (bounded, see {@link Postmaster.stop}). */
  stop(): Promise<void>;
}

/**
 * Watches `first` and each postmaster after it. When one exits while nobody stopped it (SIGKILL, an
 * OOM kill, a crash), it is started again on the same port, so the application's pool URL stays
 * valid and its connections recover by themselves. Attempts back off exponentially and are bounded;
 * each one is logged.
 */
export function supervisePostmaster(first: Postmaster, options: SupervisorOptions): PostmasterSupervisor {
  const { log, dataDir } = options;
  let current: Postmaster | undefined = first;
  let stopping = false;
  let wake: (() => void) | undefined;
  let restarting: Promise<Postmaster> | undefined;
  let startedAt = Date.now();
  let attemptsLeft = MAX_RESTART_ATTEMPTS;

  const watch = (postmaster: Postmaster) => {
    postmaster.exited.then((how) => {
      if (stopping || current !== postmaster) return;
      current = undefined;
      void recover(postmaster.pid, how);
    });
  };

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  async function recover(pid: number, how: PostmasterExit): Promise<void> {
    if (Date.now() - startedAt >= STABLE_AFTER_MS) attemptsLeft = MAX_RESTART_ATTEMPTS;
    log.error("embedded Postgres exited unexpectedly; restarting it", {
      dataDir,
      pid,
      exitCode: how.code,
      signal: how.signal,
    });
    for (let backoff = FIRST_BACKOFF_MS; attemptsLeft > 0; backoff = Math.min(backoff * 2, MAX_BACKOFF_MS)) {
      await sleep(backoff);
      if (stopping) return;
      attemptsLeft -= 1;
      const attempt = MAX_RESTART_ATTEMPTS - attemptsLeft;
      log.warn("restarting embedded Postgres", {
        dataDir,
        attempt,
        maxAttempts: MAX_RESTART_ATTEMPTS,
        afterMs: backoff,
      });
      try {
        restarting = options.restart();
        const next = await restarting.finally(() => {
          restarting = undefined;
        });
        // stop() waited for this restart and stops what it started.
        if (stopping) return;
        current = next;
        startedAt = Date.now();
        log.info("embedded Postgres restarted", { dataDir, attempt, pid: next.pid });
        watch(next);
        return;
      } catch (error) {
        log.warn("restarting embedded Postgres failed", { dataDir, attempt, error });
      }
    }
    log.error("gave up restarting embedded Postgres: restart the server once the cause is fixed", {
      dataDir,
      attempts: MAX_RESTART_ATTEMPTS,
    });
  }

  watch(first);
  return {
    current: () => current,
    async stop() {
      stopping = true;
      wake?.();
      const started = await restarting?.catch(() => undefined);
      await (started ?? current)?.stop();
    },
  };
}
