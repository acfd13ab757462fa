import { startApp } from "./app.js";
import { ConfigError, loadConfig, shutdownBudgetMs } from "./config.js";
import { createLogger } from "./logger.js";
import { stderrLines } from "./stderr-lines.js";

/**
 * Beyond the grace, how long shutdown may take before the process exits regardless: a backstop
 * above the app's own bounded shutdown (grace plus a 3 s margin), so no state of the database or
 * bug in a step can keep a stopping server alive.
 */
const SHUTDOWN_BACKSTOP_MS = 5_000;

/**
 * A repeat of the first signal within this window is the same request, not an impatient second one:
 * Ctrl-C in a terminal signals the whole process group, so `npm start` forwards the SIGINT the
 * server has already received. Half a second is far longer than that forwarding and far shorter
 * than a person pressing Ctrl-C again.
 */
const REPEATED_SIGNAL_WINDOW_MS = 500;

/**
 * `npm start`: reads the configuration, starts every part this process's role runs, and shuts down
 * gracefully on SIGINT or SIGTERM (requests, streams and jobs in flight get the grace period).
 */
async function main(): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`agentplane: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const log = createLogger(config.logLevel);
  // Signal handlers go in before anything starts: a SIGTERM that arrives while starting, or right
  // after "listening" is printed, must still shut down gracefully rather than kill the process.
  let app: Awaited<ReturnType<typeof startApp>> | undefined;
  let stopRequested = false;
  let firstSignalAt: number | undefined;
  let firstSignal: NodeJS.Signals | undefined;
  const stop = () => {
    app?.stop().then(
      () => {
        log.info("agentplane stopped", { signal: firstSignal });
        process.exit(0);
      },
      (error: unknown) => {
        log.error("shutdown failed", { error });
        process.exit(1);
      },
    );
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (firstSignalAt !== undefined) {
      if (signal === firstSignal && Date.now() - firstSignalAt < REPEATED_SIGNAL_WINDOW_MS) return;
      log.warn("second signal: exiting without waiting", { signal });
      process.exit(1);
    }
    firstSignalAt = Date.now();
    firstSignal = signal;
    log.info("shutting down", { signal });
    setTimeout(() => {
      log.error("shutdown overran its grace; exiting now", { graceMs: shutdownBudgetMs(config) });
      process.exit(1);
    }, shutdownBudgetMs(config) + SHUTDOWN_BACKSTOP_MS).unref();
    stopRequested = true;
    stop();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  // A promise nobody awaited that rejects (a query failing while Postgres restarts, say) leaves no
  // state half-changed: its error is logged and the server goes on serving everyone else. An
  // exception thrown out of a callback may have, so it is logged as a JSON line and ends the
  // process, as Node would (the embedded Postgres is stopped on exit).
  process.on("unhandledRejection", (reason: unknown) => {
    log.error("a promise rejected with nobody to handle it; serving on", { error: reason });
  });
  process.on("uncaughtException", (error: Error) => {
    log.error("uncaught exception; exiting", { error });
    process.exit(1);
  });
  app = await startApp(config, log);
  if (stopRequested) {
    stop();
    return;
  }
  process.stdout.write(
    `agentplane ${config.role} listening on http://${formatHost(app.address.address)}:${app.address.port}\n`,
  );
}

function formatHost(host: string): string {
  return host.includes(":") ? `[${host}]` : host;
}

main().catch((error: unknown) => {
  // Log lines of the failed start first, in the order they happened.
  stderrLines().flush();
  process.stderr.write(
    `agentplane failed to start: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exit(1);
});
