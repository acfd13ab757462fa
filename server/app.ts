import type { AddressInfo } from "node:net";
import type { AppHooks } from "./app/app-hooks.js";
import { startDatabase } from "./app/database-stage.js";
import { buildJobs } from "./app/jobs-stage.js";
import { lateBound } from "./app/late-bound.js";
import { createProcessUrls } from "./app/process-urls.js";
import { startQueue } from "./app/queue-stage.js";
import { buildServices } from "./app/services-stage.js";
import { createShutdownSteps } from "./app/shutdown-steps.js";
import { startTransport } from "./app/transport-stage.js";
import { loadUserCode } from "./app/user-code-stage.js";
import { startWorkers } from "./app/workers-stage.js";
import type { Config } from "./config.js";
import type { Queue } from "./jobs/queue.js";
import type { Logger } from "./logger.js";
import { applyDependencyPatches } from "./patches/dependency-patches.js";
import { checkPortAvailable } from "./transport/port-check.js";

export type { AppHooks } from "./app/app-hooks.js";

/** A running agentplane process. */
export interface App {
  /** Where the server listens. */
  readonly address: AddressInfo;
  /** The Postgres URL in use (embedded or DATABASE_URL). */
  readonly databaseUrl: string;
  /** Drains requests, streams and jobs (up to the configured grace), then closes everything. */
  stop(): Promise<void>;
}

/**
 * The composition root, in stages (server/app/): user code → database → jobs → queue → workers →
 * services → transport. Each stage takes what earlier ones built and registers how to stop what it
 * started; shutdown runs those steps in reverse (server first, then the monitor, the run drain, the
 * queue, the pool, embedded Postgres). Everything is built here and passed down; nothing below
 * reads the environment.
 */
export async function startApp(config: Config, log: Logger, hooks: AppHooks = {}): Promise<App> {
  const steps = createShutdownSteps(config.shutdownGraceMs, log);
  try {
    // Before anything uses a dependency: a patch that did not apply stops the start here, by name.
    await applyDependencyPatches(log);
    // A busy port is known at once, before Postgres starts, migrations run or an admin key is printed.
    await checkPortAvailable(config.port, config.host);
    const userCode = await loadUserCode(config, log, steps);
    const database = await startDatabase(config, log, steps, userCode.customEncryption);
    const urls = createProcessUrls(config);
    // The jobs enqueue on the queue, and the queue is made from the jobs: set once by startQueue.
    const queueHolder = lateBound<Queue>("the job queue");
    const jobs = await buildJobs({
      config,
      log,
      hooks,
      database,
      graphs: userCode.graphs,
      urls,
      queue: queueHolder,
      onStop: steps.onStop,
    });
    const { sql } = database;
    const queue = await startQueue({ config, log, hooks, sql, jobs: jobs.jobs, holder: queueHolder, steps });
    if (config.role !== "api") await startWorkers({ sql, log, queue, ...jobs, steps });
    const services = await buildServices({ config, log, hooks, database, userCode, jobs, queue, steps });
    const address = await startTransport({ config, log, database, userCode, jobs, services, urls, steps });
    let stopping: Promise<void> | undefined;
    return {
      address,
      databaseUrl: database.databaseUrl,
      stop: () => {
        stopping ??= steps.stopAll();
        return stopping;
      },
    };
  } catch (error) {
    await steps.stopAll();
    throw error;
  }
}
