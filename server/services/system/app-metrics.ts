import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { EndedRun } from "../../jobs/agent-run-job.js";
import { type QueueStats, readQueueStats } from "../../jobs/queue-stats.js";
import type { RunSlotUsage } from "../../jobs/run-slots.js";
import type { WorkerLoopStatus } from "../../jobs/worker-liveness.js";
import type { Sql } from "../../store/db.js";
import {
  countExportPartitions,
  countLiveRuns,
  countPoolConnections,
  countWaitingSpans,
} from "../../store/system-metrics-store.js";
import type { IngestService } from "../../tracing/ingest-service.js";

/**
 * The Prometheus metrics of one app instance, in a registry of its own (several apps may share a
 * process in tests; prom-client's global registry would mix them).
 *
 * Two kinds of numbers: what this process did (counters and histograms: requests it answered, runs it
 * ended, trace rows it ingested; sum them across instances) and what Postgres holds for the whole
 * installation (gauges read at scrape time: runs pending and running, queue depth and age, export
 * partitions; every instance reports the same value, so take max, not sum, across instances).
 */
export interface AppMetrics {
  /** Counts an answered HTTP request (the transport calls this once per request). */
  recordHttpRequest(sample: HttpRequestSample): void;
  /** Counts a run this process ended, and its duration. */
  recordRunEnded(run: EndedRun): void;
  /** Counts trace rows this process ingested. */
  recordIngest(rows: { runs: number; feedback: number }): void;
  /** Counts OTLP spans whose parent never came that this process stored as runs, or refused. */
  recordOrphanedSpans(spans: { stored: number; refused: number }): void;
  /**
   * Counts the request members and query parameters a lenient API ignored in one request (each name
   * once), by API (`area`: a service's full name, `a2a` or `mcp`) and name.
   */
  recordIgnoredFields(area: string, names: readonly string[]): void;
  /** Reads the scrape-time gauges, then renders every metric in `format`. */
  render(format: MetricsFormat): Promise<{ contentType: string; body: string }>;
}

/** The HTTP request a sample describes (see server/transport/request-sample.ts). */
export interface HttpRequestSample {
  readonly route: string;
  readonly method: string;
  readonly status: number;
  readonly durationMs: number;
}

/** `prometheus` (text exposition format 0.0.4) or `json` (prom-client's JSON of the same metrics). */
export type MetricsFormat = "prometheus" | "json";

/** The formats `GET /metrics?format=` accepts. */
export const METRICS_FORMATS: readonly MetricsFormat[] = ["prometheus", "json"];

/** What the scrape-time gauges read. */
export interface MetricsSources {
  sql: Sql;
  /** pg-boss's schema, for queue depth (read at scrape time: the queue is built after the metrics). */
  queueSchema: () => string;
  /** This process's pool: its unique application_name and its size. */
  pool: { applicationName: string; max: number };
  /** Run execution slots; absent in a process that executes no runs (role api). */
  runSlots?: () => RunSlotUsage;
  /** Open stream, join and wait subscriptions of this process's run event bus. */
  streamSubscribers: () => number;
  /** This process's job worker loops (empty when it runs none). */
  workerLoops: () => WorkerLoopStatus[];
}

/**
 * Bucket bounds (seconds) of HTTP request durations: from a cached key check (~1 ms) to a long
 * `runs/wait` or a stream's whole life.
 */
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
/** Bucket bounds (seconds) of run durations: from a one-node graph (~10 ms) to the hour of a long agent. */
const RUN_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 1800, 3600];
/**
 * Methods counted under their own name; any other (HTTP/2 lets a client send any token) counts as
 * `other`, so that a client cannot add series at will.
 */
const HTTP_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);
/** The statuses a run ends with, each a series from the start. */
const ENDED_STATUSES = ["success", "error", "interrupted", "timeout"] as const;
/** Every status of a bulk export partition (bulk_export_runs.status). */
const EXPORT_PARTITION_STATUSES = ["Created", "Running", "Completed", "Failed", "Cancelled", "TimedOut"];
/**
 * Distinct (API, field name) series of the ignored-fields counter: far more than the fields client
 * releases add, few enough that clients sending made-up names cannot grow the scrape without limit.
 * Names beyond it count under `IGNORED_FIELD_OVERFLOW`.
 */
const MAX_IGNORED_FIELD_SERIES = 200;
/** The field label of names past {@link MAX_IGNORED_FIELD_SERIES}. */
const IGNORED_FIELD_OVERFLOW = "(other)";
/** Longest field name kept in a label; longer ones are cut (a real field name is far shorter). */
const MAX_IGNORED_FIELD_LABEL = 64;
/** A scrape whose Postgres reads take longer than this reports the database gauges as unreadable. */
const DATABASE_READ_TIMEOUT_MS = 5_000;

/** Creates the metrics of an app instance. */
export function createAppMetrics(sources: MetricsSources): AppMetrics {
  const registry = new Registry();
  const registers = [registry];
  // Process CPU, memory, heap, event loop lag and GC, as prom-client names them.
  collectDefaultMetrics({ register: registry });

  const httpRequests = new Counter({
    name: "agentplane_http_requests_total",
    help: "HTTP requests answered, by method, route template and status.",
    labelNames: ["method", "route", "status"] as const,
    registers,
  });
  const httpDuration = new Histogram({
    name: "agentplane_http_request_duration_seconds",
    help: "Time from a request's arrival to the end of its answer (a stream's whole life), by method and route template.",
    labelNames: ["method", "route"] as const,
    buckets: HTTP_BUCKETS,
    registers,
  });
  const runsEnded = new Counter({
    name: "agentplane_agent_runs_ended_total",
    help: "Agent runs this process ended, by final status.",
    labelNames: ["status"] as const,
    registers,
  });
  const runDuration = new Histogram({
    name: "agentplane_agent_run_duration_seconds",
    help: "Duration of the attempts that ended runs in this process, from claim to end, by final status.",
    labelNames: ["status"] as const,
    buckets: RUN_BUCKETS,
    registers,
  });
  const liveRuns = new Gauge({
    name: "agentplane_agent_runs",
    help: "Agent runs pending and running in the installation (read from Postgres at scrape time).",
    labelNames: ["status"] as const,
    registers,
  });
  const runSlots = new Gauge({
    name: "agentplane_agent_run_slots",
    help: "This process's run execution slots, busy or idle.",
    labelNames: ["state"] as const,
    registers,
  });
  const slotWaiters = new Gauge({
    name: "agentplane_agent_run_slot_waiters",
    help: "Runs waiting for one of this process's run slots: queue jobs, backlog runs and creations their callers wait on.",
    registers,
  });
  const subscribers = new Gauge({
    name: "agentplane_run_stream_subscribers",
    help: "Run streams, joins and waits open in this process.",
    registers,
  });
  const queueJobs = new Gauge({
    name: "agentplane_queue_jobs",
    help: "Unfinished jobs per pg-boss queue and state (read from Postgres at scrape time).",
    labelNames: ["queue", "state"] as const,
    registers,
  });
  const queueWait = new Gauge({
    name: "agentplane_queue_oldest_wait_seconds",
    help: "How long the longest-waiting due job of each queue has waited (0 when none waits).",
    labelNames: ["queue"] as const,
    registers,
  });
  const workerUp = new Gauge({
    name: "agentplane_queue_worker_up",
    help: "1 when this process's worker loop of the queue makes progress, 0 when it is stuck.",
    labelNames: ["queue"] as const,
    registers,
  });
  const ingestRows = new Counter({
    name: "agentplane_trace_ingest_rows_total",
    help: "Trace rows this process ingested: runs (posted and patched) and feedback.",
    labelNames: ["kind"] as const,
    registers,
  });
  const orphanedSpans = new Counter({
    name: "agentplane_otel_orphaned_spans_total",
    help: "OTLP spans whose parent never came, stored as runs by this process's orphan sweep (or refused), by outcome.",
    labelNames: ["outcome"] as const,
    registers,
  });
  const waitingSpans = new Gauge({
    name: "agentplane_otel_waiting_spans",
    help: "OTLP spans waiting for their parent in the installation (read from Postgres at scrape time).",
    registers,
  });
  const waitingOldest = new Gauge({
    name: "agentplane_otel_waiting_oldest_seconds",
    help: "How long the longest-waiting OTLP span has waited for its parent (0 when none waits); past the orphan wait plus a sweep interval, the sweep is behind.",
    registers,
  });
  const ignoredFields = new Counter({
    name: "agentplane_ignored_request_fields_total",
    help: "Requests to the LangGraph- and LangSmith-compatible APIs that carried a field or query parameter the API does not know (ignored), by API and name.",
    labelNames: ["area", "field"] as const,
    registers,
  });
  const ignoredSeries = new Set<string>();
  const exportPartitions = new Gauge({
    name: "agentplane_export_partitions",
    help: "Bulk export partitions (one day of one export) by status (read from Postgres at scrape time).",
    labelNames: ["status"] as const,
    registers,
  });
  const poolMax = new Gauge({
    name: "agentplane_db_pool_max_connections",
    help: "The most connections this process's Postgres pool opens.",
    registers,
  });
  const poolConnections = new Gauge({
    name: "agentplane_db_pool_connections",
    help: "Connections of this process's pool by server state (active, idle, idle in transaction), LISTEN included.",
    labelNames: ["state"] as const,
    registers,
  });
  const databaseUp = new Gauge({
    name: "agentplane_metrics_database_up",
    help: "1 when this scrape read its Postgres gauges, 0 when Postgres did not answer (they are then absent).",
    registers,
  });
  poolMax.set(sources.pool.max);
  // Statuses start at zero, so that a rate over them exists before the first run ends.
  for (const status of ENDED_STATUSES) runsEnded.inc({ status }, 0);
  for (const outcome of ["stored", "refused"]) orphanedSpans.inc({ outcome }, 0);

  /** The gauges of this process's memory: always available. */
  const readProcessGauges = (): void => {
    if (sources.runSlots) {
      const { total, busy, waiting } = sources.runSlots();
      runSlots.set({ state: "busy" }, busy);
      runSlots.set({ state: "idle" }, total - busy);
      slotWaiters.set(waiting);
    }
    subscribers.set(sources.streamSubscribers());
    workerUp.reset();
    for (const loop of sources.workerLoops()) workerUp.set({ queue: loop.queue }, loop.alive ? 1 : 0);
  };

  const databaseGauges = [
    liveRuns,
    queueJobs,
    queueWait,
    exportPartitions,
    poolConnections,
    waitingSpans,
    waitingOldest,
  ];
  /**
   * The gauges read from Postgres. Old values go and new ones are set in one synchronous step once
   * every read is back, so a scrape rendering meanwhile sees either set, never a mix or a gap.
   */
  const readDatabaseGauges = async (): Promise<void> => {
    const { sql } = sources;
    const [runs, queues, partitions, connections, waiting] = await withTimeout(
      Promise.all([
        countLiveRuns(sql),
        readQueueStats(sql, sources.queueSchema()),
        countExportPartitions(sql),
        countPoolConnections(sql, sources.pool.applicationName),
        countWaitingSpans(sql),
      ]),
      DATABASE_READ_TIMEOUT_MS,
    );
    for (const gauge of databaseGauges) gauge.reset();
    liveRuns.set({ status: "pending" }, runs.pending);
    liveRuns.set({ status: "running" }, runs.running);
    for (const stats of queues) setQueueStats(stats);
    for (const status of EXPORT_PARTITION_STATUSES)
      exportPartitions.set({ status }, partitions.get(status) ?? 0);
    for (const [state, count] of connections) poolConnections.set({ state }, count);
    waitingSpans.set(waiting.spans);
    waitingOldest.set(waiting.oldestWaitSeconds);
  };

  const setQueueStats = (stats: QueueStats): void => {
    const { queue } = stats;
    queueJobs.set({ queue, state: "created" }, stats.created);
    queueJobs.set({ queue, state: "retry" }, stats.retry);
    queueJobs.set({ queue, state: "active" }, stats.active);
    queueWait.set({ queue }, stats.oldestWaitSeconds);
  };

  // Concurrent scrapes share one read of the gauges.
  let inFlight: Promise<void> | undefined;
  const refresh = (): Promise<void> => {
    inFlight ??= (async () => {
      readProcessGauges();
      try {
        await readDatabaseGauges();
        databaseUp.set(1);
      } catch {
        // Stale values would pass for current ones: a failed read shows none.
        for (const gauge of databaseGauges) gauge.reset();
        databaseUp.set(0);
      }
    })().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };

  return {
    recordHttpRequest({ route, method: sent, status, durationMs }) {
      const method = HTTP_METHODS.has(sent) ? sent : "other";
      httpRequests.inc({ method, route, status: String(status) });
      httpDuration.observe({ method, route }, durationMs / 1000);
    },
    recordRunEnded({ status, durationMs }) {
      runsEnded.inc({ status });
      runDuration.observe({ status }, durationMs / 1000);
    },
    recordIngest({ runs, feedback }) {
      if (runs > 0) ingestRows.inc({ kind: "run" }, runs);
      if (feedback > 0) ingestRows.inc({ kind: "feedback" }, feedback);
    },
    recordOrphanedSpans({ stored, refused }) {
      if (stored > 0) orphanedSpans.inc({ outcome: "stored" }, stored);
      if (refused > 0) orphanedSpans.inc({ outcome: "refused" }, refused);
    },
    recordIgnoredFields(area, names) {
      for (const name of new Set(names)) {
        let field =
          name.length > MAX_IGNORED_FIELD_LABEL ? `${name.slice(0, MAX_IGNORED_FIELD_LABEL)}…` : name;
        const series = `${area}\u0000${field}`;
        if (!ignoredSeries.has(series)) {
          if (ignoredSeries.size < MAX_IGNORED_FIELD_SERIES) ignoredSeries.add(series);
          else field = IGNORED_FIELD_OVERFLOW;
        }
        ignoredFields.inc({ area, field });
      }
    },
    async render(format) {
      await refresh();
      if (format === "json")
        return { contentType: "application/json", body: JSON.stringify(await registry.getMetricsAsJSON()) };
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}

/** `ingest`, counting the rows of every batch it stores into `metrics`. */
export function countingIngest(
  ingest: IngestService,
  metrics: Pick<AppMetrics, "recordIngest" | "recordOrphanedSpans">,
): IngestService {
  return {
    async ingestRuns(actor, batch) {
      const result = await ingest.ingestRuns(actor, batch);
      metrics.recordIngest(result);
      return result;
    },
    async ingestSpans(actor, batch) {
      const result = await ingest.ingestSpans(actor, batch);
      metrics.recordIngest({ runs: result.runs, feedback: 0 });
      return result;
    },
    async storeOrphanedSpans(actor, otelTraceIds) {
      const result = await ingest.storeOrphanedSpans(actor, otelTraceIds);
      metrics.recordIngest({ runs: result.runs, feedback: 0 });
      metrics.recordOrphanedSpans({ stored: result.runs, refused: result.rejected.length });
      return result;
    },
  };
}

async function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`Postgres did not answer within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
