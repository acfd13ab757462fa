import { readFile } from "node:fs/promises";
import type { ConnectError } from "@connectrpc/connect";
import { SystemService } from "../../gen/agentplane/system/v1/system_service_pb.js";
import { systemClock } from "../clock.js";
import type { Config } from "../config.js";
import type { Queue } from "../jobs/queue.js";
import type { Logger } from "../logger.js";
import { loadCustomAuth } from "../runtime/custom-auth-module.js";
import type { AuthConfig } from "../runtime/graph-config-auth.js";
import { createApiServices } from "../service-registry.js";
import { explainDatabaseOutage } from "../services/database-outage.js";
import { type Authenticator, createAuthenticator } from "../services/iam/authenticator.js";
import { createCustomAuthentication } from "../services/iam/custom-authenticator.js";
import { createEncryptionContextHook } from "../services/iam/encryption-context.js";
import type { Identity } from "../services/iam/identity.js";
import { createIdentityCache } from "../services/iam/identity-cache.js";
import { createDependencyMonitor } from "../services/system/dependency-monitor.js";
import { createSystemService } from "../services/system/system-service.js";
import { checkConnectable, type Sql } from "../store/db.js";
import { listenForIdentityChanges } from "../store/iam/identity-changes.js";
import { explainUnstorableInput } from "../store/unstorable-input.js";
import { type BoundService, bindService } from "../transport/bound-service.js";
import { createHealthRegistry, type HealthRegistry, ServingStatus } from "../transport/health.js";
import type { AppHooks } from "./app-hooks.js";
import type { Database } from "./database-stage.js";
import type { Jobs } from "./jobs-stage.js";
import { lateBound } from "./late-bound.js";
import type { ShutdownSteps } from "./shutdown-steps.js";
import type { UserCode } from "./user-code-stage.js";

/** Time between background checks of Postgres and the queue: quick to notice an outage, cheap to run. */
const DEPENDENCY_CHECK_INTERVAL_MS = 2_000;

/** The bound RPC services, their health, and what the transport shares with them. */
export interface Services {
  readonly services: BoundService[];
  readonly health: HealthRegistry;
  readonly auth: Authenticator;
  readonly version: string;
  /** What the REST adapters are built from (the same as the API services). */
  readonly deps: Parameters<typeof createApiServices>[0];
}

/**
 * Stage 5: the dependency monitor, authentication, and the services this role serves (the system
 * service always; the APIs unless the role is `worker`), then the monitor starts reporting health.
 */
export async function buildServices(inputs: {
  config: Config;
  log: Logger;
  hooks: AppHooks;
  database: Database;
  userCode: UserCode;
  jobs: Jobs;
  queue: Queue;
  steps: ShutdownSteps;
}): Promise<Services> {
  const { config, log, hooks, queue, steps } = inputs;
  const { sql, databaseUrl, gate } = inputs.database;
  const { graphs, customEncryption, uiBundles } = inputs.userCode;
  const { jobs, agentRuns, webhookSettings, ingest, secrets, runBus, runSettings, ignoredFields } =
    inputs.jobs;
  // The health registry lists the services, the system service reports the monitor, and the
  // monitor's changes set the registry: it is set below, before the monitor starts.
  const healthOfServices = lateBound<HealthRegistry>("the health registry");
  const monitor = createDependencyMonitor({
    // A fresh connection each time: a pool busy with long queries is load, not an outage, and a
    // Postgres that takes no new connections is down even while pooled ones still answer.
    checkPostgres: () => checkConnectable(databaseUrl),
    onProbe: (status) => gate.set(status.postgres),
    checkQueue: () => queue.check(),
    checkWorkers: () => queue.checkWorkers(),
    intervalMs: DEPENDENCY_CHECK_INTERVAL_MS,
    onChange: (serving, status) => {
      healthOfServices.get().setAll(serving ? ServingStatus.SERVING : ServingStatus.NOT_SERVING);
      if (serving) log.info("dependencies are up", { ...status });
      else log.warn("dependencies are down: health reports NOT_SERVING", { ...status });
    },
    log,
  });

  const version = await readVersion();
  const onInternalError = (
    error: unknown,
    ctx: { service: { typeName: string }; method: { name: string } },
  ) => log.error("request failed", { error, rpc: `${ctx.service.typeName}/${ctx.method.name}` });
  const identities = createIdentityCache<Identity>();
  if (config.role !== "worker")
    steps.onStop("identity listener", await listenForIdentityChanges(sql, identities.clear));
  const auth = createAuthenticator({
    sql,
    mode: config.auth,
    log,
    identities,
    ...(graphs.settings.auth ? { custom: await customAuthOf(graphs.settings.auth, config, sql, log) } : {}),
    ...(customEncryption?.context
      ? {
          onAuthenticated: createEncryptionContextHook(
            customEncryption.context,
            customEncryption.source,
            log,
          ),
        }
      : {}),
  });
  const deps = {
    config: { ...config, webhooks: webhookSettings },
    sql,
    queue,
    jobs,
    log,
    graphs,
    ingest,
    version,
    identities,
    secrets,
    runBus,
    runSettings,
    // Runs created here start here at once when a slot is free (roles all and worker).
    ...(config.role === "api" ? {} : { localRuns: agentRuns }),
    clock: hooks.clock ?? systemClock,
    uiBundles,
    ignoredFields,
  };
  const services: BoundService[] = [
    bindService(
      SystemService,
      createSystemService({
        monitor,
        version,
        role: config.role,
        auth: config.auth,
        usageReporting: config.usageReporting,
      }),
      { onInternalError },
    ),
  ];
  if (config.role !== "worker") {
    services.push(
      ...createApiServices(deps, {
        guard: auth.guard,
        onInternalError,
        explainError: explainStoreError,
        gate,
      }),
    );
  }
  const health = createHealthRegistry(
    services.map((s) => s.service.typeName),
    ServingStatus.NOT_SERVING,
  );
  healthOfServices.set(health);
  await monitor.start();
  steps.onStop("dependency monitor", async () => monitor.stop());
  return { services, health, auth, version, deps };
}

/** The `ConnectError` for a database error that is not a bug: input it cannot store, or an outage. */
export function explainStoreError(error: unknown): ConnectError | undefined {
  return explainUnstorableInput(error) ?? explainDatabaseOutage(error);
}

/** The graphs file's custom auth (`auth.path`), loaded; a module that cannot be used stops start-up. */
async function customAuthOf(auth: AuthConfig, config: Config, sql: Sql, log: Logger) {
  const handlers = await loadCustomAuth(auth);
  const settings = config.customAuth;
  log.info("custom auth is on: requests authenticate with the graphs file's Auth object", {
    auth: `${auth.file}:${auth.exportName}`,
    apiKeys: settings.apiKeys,
  });
  return createCustomAuthentication({ handlers, config: auth, settings, sql, log });
}

async function readVersion(): Promise<string> {
  const pkg = JSON.parse(await readFile(new URL("../../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  return pkg.version;
}
