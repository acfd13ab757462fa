import { systemClock } from "../clock.js";
import type { Config, RunSettings } from "../config.js";
import { type AgentRunWorker, createAgentRunWorker } from "../jobs/agent-run-job.js";
import { createJobRegistry, type JobRegistry } from "../jobs/job-registry.js";
import type { Queue } from "../jobs/queue.js";
import { createWebhookDeliveryJob } from "../jobs/webhook-delivery-job.js";
import type { Logger } from "../logger.js";
import { mergeWebhookSettings } from "../runtime/graph-config-webhooks.js";
import type { GraphRegistry } from "../runtime/graph-registry.js";
import { createLoopback } from "../runtime/loopback-client.js";
import { createRunEventBus, type RunEventBus } from "../runtime/run-event-bus.js";
import { createCronFiring } from "../services/agents/cron-firing.js";
import { type AppMetrics, countingIngest, createAppMetrics } from "../services/system/app-metrics.js";
import { createSecretBox, loadSecretKey, type SecretBox } from "../store/crypto/secret-box.js";
import { storedCipherOf } from "../store/db.js";
import { createIngestRunTracing } from "../tracing/ingest-run-tracing.js";
import { createIngestService, type IngestService } from "../tracing/ingest-service.js";
import type { IgnoredFieldsSink } from "../transport/field-leniency.js";
import type { AppHooks } from "./app-hooks.js";
import type { Database } from "./database-stage.js";
import type { LateBound } from "./late-bound.js";
import { lateBound } from "./late-bound.js";
import type { ProcessUrls } from "./process-urls.js";

/** What the jobs stage builds: the job registry and what the services share with the jobs. */
export interface Jobs {
  readonly jobs: JobRegistry;
  readonly agentRuns: AgentRunWorker;
  readonly runSettings: RunSettings;
  /** The config's webhook settings merged with the graphs file's. */
  readonly webhookSettings: NonNullable<Config["webhooks"]>;
  readonly runBus: RunEventBus;
  readonly metrics: AppMetrics;
  readonly ignoredFields: IgnoredFieldsSink;
  readonly ingest: IngestService;
  readonly secrets: SecretBox;
  /** Run tracing into this process's own ingest; undefined when AGENTPLANE_RUN_TRACING is off. */
  readonly runTracing: ReturnType<typeof createIngestRunTracing> | undefined;
}

/**
 * Stage 2: the run event bus, the metrics, the trace ingest, and every job (the run worker, webhook
 * delivery, crons, export, sweeps). The jobs enqueue on the queue of the next stage, which is made
 * from them: `queue` is that late-bound holder, set by {@link startQueue}.
 */
export async function buildJobs(inputs: {
  config: Config;
  log: Logger;
  hooks: AppHooks;
  database: Database;
  graphs: GraphRegistry;
  urls: ProcessUrls;
  queue: LateBound<Queue>;
  onStop: (step: string, run: () => Promise<void>) => void;
}): Promise<Jobs> {
  const { config, log, hooks, graphs, urls, queue } = inputs;
  const { sql, applicationName } = inputs.database;
  const http = graphs.settings.http;
  const secrets = createSecretBox(await loadSecretKey(config.secretKey, config.dataDir));
  const runSettings = config.runs;
  const runBus = await createRunEventBus(sql);
  inputs.onStop("run event bus", () => runBus.close());
  // The metrics read the run worker's slots, and the run worker counts ended runs in the metrics.
  const runWorker = lateBound<AgentRunWorker>("the agent run worker");
  const metrics = createAppMetrics({
    sql,
    queueSchema: () => queue.get().schema,
    pool: { applicationName, max: config.dbPoolMax },
    ...(config.role === "api" ? {} : { runSlots: () => runWorker.get().slots() }),
    streamSubscribers: () => runBus.watching(),
    workerLoops: () => queue.get().workers(),
  });
  const ignoredFields = reportingIgnoredFields(metrics, log);
  const ingest = countingIngest(createIngestService({ sql, usageReporting: config.usageReporting }), metrics);
  const runTracing =
    config.runTracing === false ? undefined : createIngestRunTracing(ingest, log, storedCipherOf(sql));
  const configuredWebhooks = mergeWebhookSettings(config.webhooks, graphs.settings.webhooks);
  // `http.disable_webhooks` in the graphs file stops webhook calls as AGENTPLANE_DISABLE_WEBHOOKS does.
  const webhookSettings = http.disabledGroups?.includes("webhooks")
    ? { ...configuredWebhooks, enabled: false }
    : configuredWebhooks;
  const webhookDelivery = createWebhookDeliveryJob({
    settings: webhookSettings,
    log,
    loopback: { sql, url: urls.api },
  });
  const queueOf = () => queue.get();
  const agentRuns = createAgentRunWorker({
    sql,
    graphs,
    settings: runSettings,
    log,
    queue: queueOf,
    bus: () => runBus,
    ...(runTracing ? { tracing: runTracing } : {}),
    loopback: createLoopback({ sql, log, url: urls.api, timeoutSeconds: runSettings.timeoutSeconds }),
    webhooks: { settings: webhookSettings, job: () => webhookDelivery },
    onRunEnded: (run) => metrics.recordRunEnded(run),
  });
  runWorker.set(agentRuns);
  const clock = hooks.clock ?? systemClock;
  const jobs = createJobRegistry({
    sql,
    queue: queueOf,
    settings: graphs.settings,
    bulkExport: { settings: config.bulkExport, secrets, clock, log },
    agentRuns,
    webhookDelivery,
    tracing: { ingest, log },
    crons: {
      clock,
      log,
      fire: createCronFiring({
        cancel: {
          bus: runBus,
          dispatch: { queue: queueOf, runJob: () => agentRuns.job },
          streamTtlSeconds: runSettings.streamTtlSeconds,
          webhooks: { settings: webhookSettings, job: () => webhookDelivery },
        },
        settings: runSettings,
        configurableHeaders: http.configurableHeaders,
      }),
      ...(hooks.cronTickSeconds ? { tickSeconds: hooks.cronTickSeconds } : {}),
    },
  });
  return {
    jobs,
    agentRuns,
    runSettings,
    webhookSettings,
    runBus,
    metrics,
    ignoredFields,
    ingest,
    secrets,
    runTracing,
  };
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
