import { randomUUID } from "node:crypto";
import { mkdir, readFile } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { ConnectError } from "@connectrpc/connect";
import { ThreadStreamService } from "../gen/agentplane/agents/v1/thread_stream_service_pb.js";
import { SystemService } from "../gen/agentplane/system/v1/system_service_pb.js";
import { type Clock, systemClock } from "./clock.js";
import {
  type Config,
  DEFAULT_BULK_EXPORT_SETTINGS,
  DEFAULT_CORS_ORIGINS,
  DEFAULT_CUSTOM_AUTH_SETTINGS,
  DEFAULT_RUN_SETTINGS,
  DEFAULT_WEBHOOK_SETTINGS,
} from "./config.js";
import { scheduleCronTick } from "./jobs/agent-cron-tick.js";
import { createAgentRunWorker } from "./jobs/agent-run-job.js";
import { startRunMaintenance } from "./jobs/agent-run-maintenance.js";
import { scheduleExportMaintenance } from "./jobs/bulk-export-maintenance-job.js";
import { allJobs, createJobRegistry } from "./jobs/job-registry.js";
import { scheduleOtelOrphanSweep } from "./jobs/otel-orphan-sweep-job.js";
import { createQueue } from "./jobs/queue.js";
import { scheduleStoreTtlSweep } from "./jobs/store-ttl-sweep-job.js";
import { scheduleThreadTtlSweep } from "./jobs/thread-ttl-sweep-job.js";
import { createWebhookDeliveryJob } from "./jobs/webhook-delivery-job.js";
import { type Logger, writesAt } from "./logger.js";
import { applyDependencyPatches } from "./patches/dependency-patches.js";
import { installQueryContextTags } from "./patches/postgres-query-context-tags.js";
import { loadCustomAuth } from "./runtime/custom-auth-module.js";
import { loadCustomEncryption } from "./runtime/custom-encryption-module.js";
import type { AuthConfig } from "./runtime/graph-config-auth.js";
import { mergeWebhookSettings } from "./runtime/graph-config-webhooks.js";
import { loadGraphRegistry } from "./runtime/graph-registry.js";
import { loadHttpApp } from "./runtime/http-app-loader.js";
import { createLoopback, createRequestLoopback, loopbackUrl } from "./runtime/loopback-client.js";
import { createRunEventBus } from "./runtime/run-event-bus.js";
import { buildUiBundles } from "./runtime/ui-bundler.js";
import { createApiServices, createRestAdapters, REST_ADAPTERS } from "./service-registry.js";
import { createCronFiring } from "./services/agents/cron-firing.js";
import { explainDatabaseOutage } from "./services/database-outage.js";
import { createAuthenticator, type Identity } from "./services/iam/authenticator.js";
import { bootstrapIam } from "./services/iam/bootstrap.js";
import { createCustomAuthentication } from "./services/iam/custom-authenticator.js";
import { createEncryptionContextHook } from "./services/iam/encryption-context.js";
import { createIdentityCache } from "./services/iam/identity-cache.js";
import { type AppMetrics, countingIngest, createAppMetrics } from "./services/system/app-metrics.js";
import { createDatabaseGate } from "./services/system/database-gate.js";
import { createDependencyMonitor } from "./services/system/dependency-monitor.js";
import { createHeapDumper } from "./services/system/heap-dump.js";
import { createLogLevelControl } from "./services/system/log-level-control.js";
import { createSystemService } from "./services/system/system-service.js";
import { createCustomDataCipher } from "./store/crypto/custom-data-cipher.js";
import {
  currentEncryptionContext,
  scopedHandler,
  withEncryptionScope,
} from "./store/crypto/encryption-scope.js";
import { createSecretBox, loadSecretKey } from "./store/crypto/secret-box.js";
import { createAesDataCipher } from "./store/crypto/stored-data-cipher.js";
import { checkConnectable, createSql, type Sql, storedCipherOf } from "./store/db.js";
import { listenForIdentityChanges } from "./store/iam/identity-changes.js";
import { migrate } from "./store/migrate.js";
import { startEmbeddedPostgres } from "./store/postgres/embedded-postgres.js";
import { explainUnstorableInput } from "./store/unstorable-input.js";
import { createIngestRunTracing } from "./tracing/ingest-run-tracing.js";
import { createIngestService } from "./tracing/ingest-service.js";
import { type BoundService, bindService } from "./transport/bound-service.js";
import { createCustomAppMount } from "./transport/custom-app/custom-app-handler.js";
import { createCustomRouteAuth } from "./transport/custom-app/custom-route-auth.js";
import { createDocsAdapter } from "./transport/docs/docs-adapter.js";
import type { IgnoredFieldsSink } from "./transport/field-leniency.js";
import { gateAdapter } from "./transport/gated-adapter.js";
import { corsPolicyFor, servedAdapters, servedServices } from "./transport/graphs-file-http.js";
import { createHealthRegistry, ServingStatus } from "./transport/health.js";
import { createHttpHandler } from "./transport/http-handler.js";
import { createOnePortServer } from "./transport/one-port-server.js";
import { checkPortAvailable } from "./transport/port-check.js";
import { corsAllows } from "./transport/rest/cors.js";
import {
  createHeapDumpAdapter,
  createLogLevelAdapter,
  createMetricsAdapter,
  HEAP_DUMP_ROUTES,
  LOG_LEVEL_ROUTES,
  METRICS_ROUTES,
} from "./transport/system-adapter.js";
import { createThreadStreamSockets } from "./transport/ws/thread-stream-socket.js";

/** A running agentplane process. */
export interface App {
  /** Where the server listens. */
  readonly address: AddressInfo;
  /** The Postgres URL in use (embedded or DATABASE_URL). */
  readonly databaseUrl: string;
  /** Drains requests, streams and jobs (up to the configured grace), then closes everything. */
  stop(): Promise<void>;
}

/** Time between background checks of Postgres and the queue: quick to notice an outage, cheap to run. */
const DEPENDENCY_CHECK_INTERVAL_MS = 2_000;
/**
 * Time shutdown may take beyond the grace: the steps after draining requests and jobs (closing the
 * pool, stopping embedded Postgres) take well under a second when Postgres answers; when it does not,
 * each step gets what is left of this and the process goes on without it.
 */
const SHUTDOWN_MARGIN_MS = 3_000;
/** Seconds the pool waits at shutdown for queries still running after the drain. */
const POOL_END_SECONDS = 5;
/** What a step that starts after the shutdown deadline still gets: enough to send its signals. */
const LATE_STEP_MS = 100;

/** What a caller can replace in the process it starts (tests drive export schedules with a clock). */
export interface AppHooks {
  /** Where calendar-driven work reads the time; the system clock by default. */
  clock?: Clock;
  /** Seconds between cron ticks at most (tests with an injected clock tick faster). */
  cronTickSeconds?: number;
  /** How long a job worker loop may go without progress before /ok reports it stuck; the queue's default. */
  workerStallAfterMs?: number;
}

/**
 * The composition root: config → Postgres → migrations → bootstrap → queue → services → transport.
 * Everything is built here and passed down; nothing below reads the environment.
 */
export async function startApp(config: Config, log: Logger, hooks: AppHooks = {}): Promise<App> {
  // Before anything uses a dependency: a patch that did not apply stops the start here, by name.
  await applyDependencyPatches(log);
  const cleanups: { step: string; run: () => Promise<void>; extraMs: number }[] = [];
  // `extraMs`: time this step may take beyond the shared grace (running runs get the background
  // grace); only the time it really took moves the deadline of the steps after it.
  const onStop = (step: string, run: () => Promise<void>, extraMs = 0) =>
    cleanups.push({ step, run, extraMs });
  // Bounded whatever the state of Postgres: a step that overruns is left behind, the next one runs.
  const stopAll = async () => {
    let deadline = Date.now() + config.shutdownGraceMs + SHUTDOWN_MARGIN_MS;
    for (const { step: name, run, extraMs } of cleanups.reverse()) {
      const step = run().then(
        () => true,
        (error: unknown) => {
          log.error("shutdown step failed", { step: name, error });
          return true;
        },
      );
      const budget = Math.max(deadline - Date.now(), LATE_STEP_MS) + extraMs;
      const began = Date.now();
      if (!(await Promise.race([step, delay(budget).then(() => false)])))
        log.warn("shutdown step overran the grace; going on without it", { step: name, budgetMs: budget });
      else log.debug("shutdown step done", { step: name, ms: Date.now() - began });
      deadline += Math.min(Date.now() - began, extraMs);
    }
  };
  try {
    // A busy port is known at once, before Postgres starts, migrations run or an admin key is printed.
    await checkPortAvailable(config.port, config.host);
    // Graphs load next: a broken graph stops start-up before anything else is started.
    const graphs = await loadGraphRegistry({
      configPath: config.graphConfigPath,
      cwd: process.cwd(),
      log,
      schemaTimeoutMs: config.schemaResolveTimeoutMs,
      assistantDefaults: config.assistantDefaults,
    });
    onStop("graphs", () => graphs.close());
    const http = graphs.settings.http;
    const customEncryption =
      graphs.settings.encryption &&
      (await loadCustomEncryption(graphs.settings.encryption, {
        builtInAesConfigured: config.aes !== undefined,
      }));
    // The custom app loads with the graphs: a broken one stops start-up just as early.
    const userApp = http.app && config.role !== "worker" ? await loadHttpApp(http.app) : undefined;
    const cors = corsPolicyFor(config.corsOrigins ?? DEFAULT_CORS_ORIGINS, config.auth, http);
    // Bundled once, before anything starts: a broken component stops start-up like a broken graph.
    // `http.disable_ui` serves no /ui routes (transport/graphs-file-http.ts), so nothing is bundled.
    const servesUi = config.role !== "worker" && !http.disabledGroups?.includes("ui");
    const uiBundles = await buildUiBundles(servesUi ? graphs.settings.ui : undefined, log);
    // Traversable but not listable by others: embedded Postgres runs as the `postgres` OS user when
    // started as root and must reach the cluster below; the secrets in here are files of mode 0600.
    await mkdir(config.dataDir, { recursive: true, mode: 0o711 });
    let databaseUrl = config.databaseUrl;
    if (databaseUrl === undefined) {
      const embedded = await startEmbeddedPostgres({
        dataDir: join(config.dataDir, "postgres"),
        log: (line) => log.debug(line, { source: "postgres" }),
        lifecycle: log,
      });
      onStop("embedded Postgres", () => embedded.stop());
      databaseUrl = embedded.url;
      log.info("started embedded Postgres", { dataDir: join(config.dataDir, "postgres") });
    }
    // Unique per instance: the metrics count this pool's connections in pg_stat_activity by it.
    const applicationName = `agentplane-${config.role}-${randomUUID().slice(0, 8)}`;
    const sql = createSql(databaseUrl, {
      max: config.dbPoolMax,
      statementTimeoutMs: config.statementTimeoutMs,
      applicationName,
      cipher: config.aes
        ? createAesDataCipher(config.aes)
        : customEncryption && createCustomDataCipher(customEncryption, log),
    });
    if (customEncryption) installQueryContextTags(sql, currentEncryptionContext);
    const gate = createDatabaseGate();
    // Queries still running after the drain get a few seconds; during an outage nothing will finish.
    onStop("database pool", () => sql.end({ timeout: gate.open() ? POOL_END_SECONDS : 0 }));
    const applied = await migrate(sql);
    if (applied.length > 0) log.info("applied migrations", { applied });
    if (config.role !== "worker") await bootstrapIam(sql, config, log);
    if (config.auth === "none" && config.role !== "worker")
      log.warn(
        "authentication is off (AGENTPLANE_AUTH=none): every caller that reaches this port acts as admin of the default workspace; browser pages may call only from AGENTPLANE_CORS_ORIGINS",
        { corsOrigins: config.corsOrigins ?? DEFAULT_CORS_ORIGINS },
      );

    const bulkExport = config.bulkExport ?? DEFAULT_BULK_EXPORT_SETTINGS;
    const secrets = createSecretBox(await loadSecretKey(config.secretKey, config.dataDir));
    // A hand-built config without run settings takes the process's shutdown grace for runs too.
    const runSettings = config.runs ?? { ...DEFAULT_RUN_SETTINGS, shutdownGraceMs: config.shutdownGraceMs };
    const runBus = await createRunEventBus(sql);
    onStop("run event bus", () => runBus.close());
    const metrics = createAppMetrics({
      sql,
      queueSchema: () => queue.schema,
      pool: { applicationName, max: config.dbPoolMax },
      ...(config.role === "api" ? {} : { runSlots: () => agentRuns.slots() }),
      streamSubscribers: () => runBus.watching(),
      workerLoops: () => queue.workers(),
    });
    const ignoredFields = reportingIgnoredFields(metrics, log);
    const ingest = countingIngest(
      createIngestService({ sql, usageReporting: config.usageReporting }),
      metrics,
    );
    // Where graphs' loopback clients go: set, or this process's own address once it listens.
    let apiUrl = config.loopbackUrl;
    // This process's own address once it listens: where a custom route's loopback clients go.
    let ownUrl: string | undefined;
    const runTracing =
      config.runTracing === false ? undefined : createIngestRunTracing(ingest, log, storedCipherOf(sql));
    const configuredWebhooks = mergeWebhookSettings(
      config.webhooks ?? DEFAULT_WEBHOOK_SETTINGS,
      graphs.settings.webhooks,
    );
    // `http.disable_webhooks` in the graphs file stops webhook calls as AGENTPLANE_DISABLE_WEBHOOKS does.
    const webhookSettings = http.disabledGroups?.includes("webhooks")
      ? { ...configuredWebhooks, enabled: false }
      : configuredWebhooks;
    const webhookDelivery = createWebhookDeliveryJob({
      settings: webhookSettings,
      log,
      loopback: { sql, url: () => apiUrl },
    });
    const agentRuns = createAgentRunWorker({
      sql,
      graphs,
      settings: runSettings,
      log,
      queue: () => queue,
      bus: () => runBus,
      ...(runTracing ? { tracing: runTracing } : {}),
      loopback: createLoopback({ sql, log, url: () => apiUrl, timeoutSeconds: runSettings.timeoutSeconds }),
      webhooks: { settings: webhookSettings, job: () => webhookDelivery },
      onRunEnded: (run) => metrics.recordRunEnded(run),
    });
    const jobs = createJobRegistry({
      sql,
      queue: () => queue,
      settings: graphs.settings,
      bulkExport: { settings: bulkExport, secrets, clock: hooks.clock ?? systemClock, log },
      agentRuns,
      webhookDelivery,
      tracing: { ingest, log },
      crons: {
        clock: hooks.clock ?? systemClock,
        log,
        fire: createCronFiring({
          cancel: {
            bus: runBus,
            dispatch: { queue: () => queue, runJob: () => jobs.agentRun },
            streamTtlSeconds: runSettings.streamTtlSeconds,
            webhooks: { settings: webhookSettings, job: () => webhookDelivery },
          },
          settings: runSettings,
          configurableHeaders: graphs.settings.http.configurableHeaders,
        }),
        ...(hooks.cronTickSeconds ? { tickSeconds: hooks.cronTickSeconds } : {}),
      },
    });
    const queue = createQueue({
      sql,
      jobs: allJobs(jobs),
      runWorkers: config.role !== "api",
      ...(hooks.workerStallAfterMs === undefined ? {} : { stallAfterMs: hooks.workerStallAfterMs }),
      log: (level, message, fields) => log[level](message, fields),
    });
    await queue.start();
    if (config.role !== "api") await scheduleThreadTtlSweep(queue, jobs.threadTtlSweep, 0);
    if (config.role !== "api") await scheduleStoreTtlSweep(queue, jobs.storeTtlSweep, 0);
    if (config.role !== "api") await scheduleOtelOrphanSweep(queue, jobs.otelOrphanSweep, 0);
    if (config.role !== "api") await scheduleExportMaintenance(queue, jobs.bulkExportMaintenance, 0);
    if (config.role !== "api") await scheduleCronTick(queue, jobs.agentCronTick, 0);
    onStop("job queue", () => queue.stop({ graceMs: config.shutdownGraceMs }));
    if (config.role !== "api") {
      const stopMaintenance = startRunMaintenance({
        sql,
        log,
        queue: () => queue,
        runJob: () => jobs.agentRun,
        streamTtlSeconds: runSettings.streamTtlSeconds,
      });
      // Steps run in reverse: the drain first, then the writes it leaves, bounded by the shared grace
      // (in an outage they cannot finish, and must not hold the process for the runs' grace).
      onStop("agent run traces and maintenance", async () => {
        await runTracing?.settle();
        await stopMaintenance();
      });
      // Before the queue stops: running runs get the background grace, then are handed back.
      onStop("agent runs", () => agentRuns.drain(runSettings.shutdownGraceMs), runSettings.shutdownGraceMs);
    }

    const checkedUrl = databaseUrl;
    const monitor = createDependencyMonitor({
      // A fresh connection each time: a pool busy with long queries is load, not an outage, and a
      // Postgres that takes no new connections is down even while pooled ones still answer.
      checkPostgres: () => checkConnectable(checkedUrl),
      onProbe: (status) => gate.set(status.postgres),
      checkQueue: () => queue.check(),
      checkWorkers: () => queue.checkWorkers(),
      intervalMs: DEPENDENCY_CHECK_INTERVAL_MS,
      onChange: (serving, status) => {
        health.setAll(serving ? ServingStatus.SERVING : ServingStatus.NOT_SERVING);
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
      onStop("identity listener", await listenForIdentityChanges(sql, identities.clear));
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
    const { guard } = auth;
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
        ...createApiServices(deps, { guard, onInternalError, explainError: explainStoreError, gate }),
      );
    }
    const health = createHealthRegistry(
      services.map((s) => s.service.typeName),
      ServingStatus.NOT_SERVING,
    );
    await monitor.start();
    onStop("dependency monitor", async () => monitor.stop());

    const shutdown = new AbortController();
    const threadStream = services.find((bound) => bound.service.typeName === ThreadStreamService.typeName);
    const sockets = threadStream
      ? createThreadStreamSockets({
          service: threadStream,
          originAllowed: corsAllows(cors),
          inRequestScope: customEncryption !== undefined ? withEncryptionScope : (fn) => fn(),
          log,
          ...(http.mountPrefix ? { mountPrefix: http.mountPrefix } : {}),
        })
      : undefined;
    const server = createOnePortServer(
      withEncryptionScopes(
        customEncryption !== undefined,
        createHttpHandler({
          services: servedServices(services, http),
          health,
          shutdownSignal: shutdown.signal,
          adapters: servedAdapters(
            [
              createMetricsAdapter(metrics),
              ...[
                createHeapDumpAdapter({
                  heapDumper: createHeapDumper({ sql, dataDir: config.dataDir }),
                  auth,
                }),
                createLogLevelAdapter({ control: createLogLevelControl({ sql, log }), auth }),
                ...(config.role === "worker" ? [] : createRestAdapters(deps, auth)),
              ].map((adapter) => gateAdapter(adapter, gate, explainStoreError)),
              ...(config.role === "worker"
                ? []
                : [
                    createDocsAdapter({
                      services: services.map((bound) => bound.service),
                      publicServices: new Set([SystemService.typeName]),
                      adapterRoutes: [
                        ...REST_ADAPTERS.flatMap((adapter) => (adapter.undocumented ? [] : adapter.routes)),
                        ...METRICS_ROUTES,
                        ...HEAP_DUMP_ROUTES,
                        ...LOG_LEVEL_ROUTES,
                      ],
                      version,
                    }),
                  ]),
            ],
            http,
          ),
          log,
          onRequest: (sample) => metrics.recordHttpRequest(sample),
          onIgnoredFields: ignoredFields,
          cors,
          // A logger with a changeable level is asked per request; a fixed one is the configured level.
          accessLog: log.level !== undefined || writesAt(config.logLevel, "info"),
          ...(http.mountPrefix ? { mountPrefix: http.mountPrefix } : {}),
          ...(userApp
            ? {
                customApp: await createCustomAppMount({
                  app: userApp,
                  order: http.middlewareOrder ?? "middleware_first",
                  enableCustomRouteAuth: http.enableCustomRouteAuth ?? false,
                  authenticate: createCustomRouteAuth(auth),
                  log,
                  aroundRequest: createRequestLoopback(() => ownUrl).around,
                }),
              }
            : {}),
        }),
      ),
      {
        shutdown,
        ...(sockets ? { onUpgrade: sockets.handleUpgrade, onClose: sockets.close } : {}),
      },
    );
    const address = await server.listen(config.port, config.host);
    ownUrl = loopbackUrl(address) + (http.mountPrefix ?? "");
    if (config.role === "all") apiUrl ??= ownUrl;
    onStop("server", () => server.close(config.shutdownGraceMs));
    log.info("agentplane is listening", { host: address.address, port: address.port, role: config.role });

    let stopping: Promise<void> | undefined;
    return {
      address,
      databaseUrl,
      stop: () => {
        stopping ??= stopAll();
        return stopping;
      },
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

/**
 * Where the lenient APIs' ignored request members go (design.md, decision 14): a debug line per
 * request, so an operator can see which client sends what, and a counter per API and name.
 */
function reportingIgnoredFields(
  metrics: Pick<AppMetrics, "recordIgnoredFields">,
  log: Logger,
): IgnoredFieldsSink {
  return (area, names) => {
    metrics.recordIgnoredFields(area, names);
    log.debug("ignored request fields this API does not know", { area, fields: [...names] });
  };
}

/** The request handler, each request in its own encryption scope when custom encryption is on. */
function withEncryptionScopes<A extends unknown[]>(on: boolean, handler: (...args: A) => void) {
  return on ? scopedHandler(handler) : handler;
}

/** The graphs file's custom auth (`auth.path`), loaded; a module that cannot be used stops start-up. */
async function customAuthOf(auth: AuthConfig, config: Config, sql: Sql, log: Logger) {
  const handlers = await loadCustomAuth(auth);
  const settings = config.customAuth ?? DEFAULT_CUSTOM_AUTH_SETTINGS;
  log.info("custom auth is on: requests authenticate with the graphs file's Auth object", {
    auth: `${auth.file}:${auth.exportName}`,
    apiKeys: settings.apiKeys,
  });
  return createCustomAuthentication({ handlers, config: auth, settings, sql, log });
}

/** The `ConnectError` for a database error that is not a bug: input it cannot store, or an outage. */
function explainStoreError(error: unknown): ConnectError | undefined {
  return explainUnstorableInput(error) ?? explainDatabaseOutage(error);
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

async function readVersion(): Promise<string> {
  const pkg = JSON.parse(await readFile(new URL("../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  return pkg.version;
}
