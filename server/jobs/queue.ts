import { Code, ConnectError } from "@connectrpc/connect";
import PgBoss from "pg-boss";
import {
  applyPgBossManagerPatch,
  observeManagerFetches,
  reportCompletionWriteFailures,
} from "../patches/pg-boss-manager.js";
import type { Queryable, Sql } from "../store/db.js";
import type { JobDefinition } from "./job-definition.js";
import { createPgBossDb, createTransactionPgBossDb, type PgBossDb } from "./pg-boss-db.js";
import { createWorkerLiveness, type WorkerLoopStatus } from "./worker-liveness.js";

/** Severity of a queue log line. */
export type QueueLogLevel = "debug" | "info" | "warn" | "error";

/** Where the queue reports what it cannot throw to anyone: pg-boss errors and failed job attempts. */
export type QueueLog = (level: QueueLogLevel, msg: string, fields?: Record<string, unknown>) => void;

/** Options of {@link createQueue}. */
export interface QueueOptions {
  /** The application pool; pg-boss runs its queries on it (see `pg-boss-db.ts`). */
  sql: Sql;
  /** Postgres schema of pg-boss's tables; default `pgboss`. */
  schema?: string;
  /** Every job this process may send or work. Enqueueing anything else is refused. */
  jobs: readonly JobDefinition[];
  /** Work the jobs in this process (role `worker` or `all`); false for API-only processes. */
  runWorkers: boolean;
  /**
   * Seconds between fetches when nothing wakes a worker; default 2, at least 0.5 (pg-boss's floor).
   * Polling is only the safety net: every enqueue wakes the workers of all processes by NOTIFY.
   */
  pollIntervalSeconds?: number;
  /**
   * Milliseconds a worker loop may go without progress (a fetch or a batch ending) before it counts
   * as stuck; default ten poll intervals, and at least 30 s.
   */
  stallAfterMs?: number;
  /** Log sink. */
  log: QueueLog;
}

/** Options of {@link Queue.enqueue}. */
export interface EnqueueOptions {
  /** Send inside this open transaction: the job exists (and wakes workers) only if it commits. */
  tx?: Queryable;
  /** Run no earlier than this many seconds from now. */
  startAfterSeconds?: number;
  /** Deduplication key; only the `short`, `singleton` and `stately` policies act on it. */
  singletonKey?: string;
  /** The job id (a UUID); default a random one. A second send with the same id is refused. */
  id?: string;
}

/** Options of {@link Queue.stop}. */
export interface QueueStopOptions {
  /** How long to wait for running handlers before aborting them; default 10 s (pg-boss waits at least 1 s). */
  graceMs?: number;
}

/** A job queue on Postgres (pg-boss 10) with prompt wake-ups across processes. */
export interface Queue {
  /**
   * Installs or migrates pg-boss's schema, creates a queue per registered job (idempotent across
   * processes) and, when `runWorkers`, starts the workers and listens for wake-ups.
   */
  start(): Promise<void>;
  /**
   * Stops fetching, waits up to `graceMs` for running handlers (and for the completions they record),
   * then aborts the signals of those still running and stops listening. No committed job is lost: a job
   * not fetched stays queued; one still running when the grace ends is failed by pg-boss ("pg-boss shut
   * down while active"), which counts as an attempt and is retried by any worker after its retry delay
   * while retries remain; if the process dies instead, the job expires after `expireInSeconds` and is
   * retried the same way. End the pool only after this resolves; then exit, as a handler that ignores
   * its signal may still be running.
   */
  stop(options?: QueueStopOptions): Promise<void>;
  /**
   * Sends a job and wakes the workers of every process (this one included) with a NOTIFY sent on the same
   * transaction, so a rolled-back enqueue wakes nobody; a job delayed with `startAfterSeconds` wakes
   * nobody (the poll fetches it once due). Returns the job id. Throws an Error for a job not
   * registered with this queue, and ConnectError(AlreadyExists) when pg-boss declines the job because one
   * with the same id or (per the queue policy) singleton key is already there.
   */
  enqueue<P extends object>(job: JobDefinition<P>, payload: P, options?: EnqueueOptions): Promise<string>;
  /** Resolves when pg-boss's tables are reachable and installed; throws otherwise (for health checks). */
  check(): Promise<void>;
  /** Postgres schema of pg-boss's tables. */
  readonly schema: string;
  /** The worker loops of this process, one entry per queue; empty when it runs no workers. */
  workers(): WorkerLoopStatus[];
  /** Resolves when every worker loop of this process is alive; throws naming the stuck ones. */
  checkWorkers(): Promise<void>;
}

/** The NOTIFY channel of wake-ups; the payload is the queue name. */
export const JOBS_CHANNEL = "agentplane_jobs";

const DEFAULT_SCHEMA = "pgboss";
/** Safety-net poll: bounds the delay of jobs whose start time arrives (retries, startAfter) and of lost
 * NOTIFYs, at one cheap query per idle worker every 2 s. */
const DEFAULT_POLL_INTERVAL_SECONDS = 2;
/**
 * A worker loop sleeps at most one poll interval between fetches; ten intervals without progress
 * is no scheduling hiccup.
 */
const STALL_POLL_INTERVALS = 10;
/** The floor of the stall limit: a loaded machine's slow fetch is no stuck loop. */
const MIN_STALL_MS = 30_000;
/** pg-boss 10 refuses polling intervals under 500 ms. */
const MIN_POLL_INTERVAL_SECONDS = 0.5;
/** Shorter than the 30 s most supervisors (Kubernetes' default grace) allow before SIGKILL, with room
 * left for draining HTTP first. */
const DEFAULT_GRACE_MS = 10_000;
/** Bounds how long past `expireInSeconds` a crashed worker's job waits to be retried; one locked query
 * per interval across all processes. */
const MAINTENANCE_INTERVAL_SECONDS = 30;
/** Completed jobs leave the live table after an hour so fetches scan a small table; the archive keeps them. */
const ARCHIVE_COMPLETED_AFTER_SECONDS = 60 * 60;
/** Failed jobs stay a day in the live table, where an operator looks first. */
const ARCHIVE_FAILED_AFTER_SECONDS = 24 * 60 * 60;
/** Archived jobs are kept a week for investigations. */
const DELETE_ARCHIVED_AFTER_DAYS = 7;

/** A payload as stored: the caller's fields plus the schema version. */
type StampedPayload = Record<string, unknown> & { $v?: unknown };
type FetchedJob = PgBoss.JobWithMetadata<StampedPayload>;

/** A handler in flight, abortable when the queue stops. */
interface RunningJob {
  controller: AbortController;
  done: Promise<unknown>;
}

/** Waits until every promise has settled or `ms` have passed, whichever comes first. */
async function settleWithin(promises: Promise<unknown>[], ms: number): Promise<void> {
  if (promises.length === 0 || ms <= 0) return;
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      Promise.allSettled(promises),
      new Promise((resolve) => {
        timer = setTimeout(resolve, ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** pg-boss's database with a count of its queries in flight. */
interface TrackedDb {
  db: PgBossDb;
  /** Resolves once no query is in flight. */
  idle(): Promise<void>;
  busy(): boolean;
}

/**
 * Counts pg-boss's queries in flight. pg-boss's stop() returns while a worker's fetch may still be
 * running (its batch then starts after stop) and without awaiting the completions it records, so
 * stop() waits for these itself: otherwise the caller's `sql.end()` fails them, and a fetched job stays
 * active until it expires.
 */
function trackQueries(db: PgBossDb): TrackedDb {
  let inFlight = 0;
  const waiters: (() => void)[] = [];
  return {
    db: {
      async executeSql(text, values) {
        inFlight += 1;
        try {
          return await db.executeSql(text, values);
        } finally {
          inFlight -= 1;
          if (inFlight === 0) for (const wake of waiters.splice(0)) wake();
        }
      },
    },
    idle: () => (inFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => waiters.push(resolve))),
    busy: () => inFlight > 0,
  };
}

/** Creates the queue; no I/O happens before {@link Queue.start}. */
export function createQueue(options: QueueOptions): Queue {
  const { sql, log, runWorkers } = options;
  const schema = options.schema ?? DEFAULT_SCHEMA;
  const pollIntervalSeconds = options.pollIntervalSeconds ?? DEFAULT_POLL_INTERVAL_SECONDS;
  if (!(pollIntervalSeconds >= MIN_POLL_INTERVAL_SECONDS)) {
    throw new Error(
      `pollIntervalSeconds must be at least ${MIN_POLL_INTERVAL_SECONDS}, got ${pollIntervalSeconds}`,
    );
  }
  const liveness = createWorkerLiveness(
    options.stallAfterMs ?? Math.max(STALL_POLL_INTERVALS * pollIntervalSeconds * 1000, MIN_STALL_MS),
  );
  const registry = new Map<string, JobDefinition>();
  for (const job of options.jobs) {
    if (registry.has(job.name)) throw new Error(`two jobs are named ${job.name}`);
    registry.set(job.name, job);
  }

  const tracked = trackQueries(createPgBossDb(sql));
  const boss = new PgBoss({
    db: tracked.db,
    schema,
    migrate: true,
    supervise: true,
    // Nothing here uses pg-boss cron schedules; on, they would add a polling worker to every process.
    schedule: false,
    maintenanceIntervalSeconds: MAINTENANCE_INTERVAL_SECONDS,
    archiveCompletedAfterSeconds: ARCHIVE_COMPLETED_AFTER_SECONDS,
    archiveFailedAfterSeconds: ARCHIVE_FAILED_AFTER_SECONDS,
    deleteAfterDays: DELETE_ARCHIVED_AFTER_DAYS,
  });
  boss.on("error", (error: Error & { queue?: string; worker?: string }) => {
    log("error", "job queue error", { error: error.message, queue: error.queue, worker: error.worker });
  });
  // The queue cannot run safely without it (server/patches/pg-boss-manager.ts); applying is idempotent.
  applyPgBossManagerPatch();
  reportCompletionWriteFailures((method, queue, error) =>
    log("warn", `could not record a job's outcome (${method}); it is retried after it expires`, {
      queue,
      error: error instanceof Error ? error.message : String(error),
    }),
  );

  let state: "new" | "started" | "stopping" | "stopped" = "new";
  const workerIds = new Map<string, string[]>();
  const running = new Set<RunningJob>();
  let unlisten: (() => Promise<unknown>) | undefined;
  /** Aborted when stop() stops waiting: jobs fetched after that are handed back instead of started. */
  const giveUp = new AbortController();

  /** Wakes every worker of a queue: a sleeping one fetches at once, a busy one fetches again when done. */
  function wake(name: string): void {
    for (const id of workerIds.get(name) ?? []) boss.notifyWorker(id);
  }

  function wakeAll(): void {
    for (const name of workerIds.keys()) wake(name);
  }

  async function runJob(job: JobDefinition, fetched: FetchedJob): Promise<void> {
    const controller = new AbortController();
    // pg-boss fails an attempt that outlives its expiry; tell the handler to stop wasting work.
    const expiry = setTimeout(
      () => controller.abort(new Error(`job ${job.name} ${fetched.id} expired`)),
      Number(fetched.expireInSeconds) * 1000,
    );
    const done = (async () => {
      const { $v, ...payload } = fetched.data;
      if ($v !== job.version) {
        throw new Error(
          `job ${job.name} has payload version ${String($v)}; this worker handles version ${job.version}`,
        );
      }
      await job.handler(payload, {
        id: fetched.id,
        retryCount: fetched.retryCount,
        signal: controller.signal,
      });
    })();
    const entry: RunningJob = { controller, done };
    running.add(entry);
    try {
      await done;
    } catch (error) {
      log("warn", "job attempt failed", {
        job: job.name,
        id: fetched.id,
        retryCount: fetched.retryCount,
        error: error instanceof Error ? error.message : String(error),
      });
      throw error;
    } finally {
      clearTimeout(expiry);
      running.delete(entry);
    }
  }

  async function runBatch(job: JobDefinition, workerId: string, batch: FetchedJob[]): Promise<void> {
    // pg-boss 10 sleeps a full poll interval after every fetch; a full batch means more may wait.
    if (batch.length === job.batchSize) boss.notifyWorker(workerId);
    if (giveUp.signal.aborted) throw new Error(`job queue stopped before job ${job.name} started`);
    liveness.batchStarted(job.name);
    const results = await Promise.allSettled(batch.map((fetched) => runJob(job, fetched))).finally(() =>
      liveness.batchEnded(job.name),
    );
    const failures = results.flatMap((r) => (r.status === "rejected" ? [r.reason as unknown] : []));
    if (failures.length === 0) return;
    // pg-boss fails the whole batch when this throws; complete the successes first so they stay done.
    const succeeded = batch.filter((_, i) => results[i]?.status === "fulfilled").map((j) => j.id);
    if (succeeded.length > 0) await boss.complete(job.name, succeeded);
    throw failures.length === 1
      ? failures[0]
      : new AggregateError(failures, `${failures.length} jobs of a batch failed`);
  }

  async function startWorkers(): Promise<void> {
    const listener = await sql.listen(JOBS_CHANNEL, wake, wakeAll);
    unlisten = listener.unlisten;
    observeManagerFetches(tracked.db, liveness.fetched);
    for (const job of registry.values()) {
      liveness.started(job.name);
      const ids: string[] = [];
      workerIds.set(job.name, ids);
      for (let i = 0; i < job.workers; i++) {
        const worker = { id: "" };
        const workOptions = {
          batchSize: job.batchSize,
          pollingIntervalSeconds: pollIntervalSeconds,
          includeMetadata: true as const,
        };
        worker.id = await boss.work<StampedPayload>(job.name, workOptions, (batch) =>
          runBatch(job, worker.id, batch),
        );
        ids.push(worker.id);
      }
    }
  }

  function requireStarted(): void {
    if (state !== "started") throw new Error(`job queue is ${state === "new" ? "not started" : "stopped"}`);
  }

  async function send<P extends object>(
    tx: Queryable,
    job: JobDefinition<P>,
    payload: P,
    options: EnqueueOptions,
  ): Promise<string> {
    // The wake-up goes out with the insert, in the same round trip; NOTIFY is delivered at commit,
    // so a rolled-back send wakes nobody. A delayed job cannot be fetched yet: waking every worker
    // now would only cost them a fetch; the poll picks it up when it comes due.
    const delayed = options.startAfterSeconds !== undefined && options.startAfterSeconds > 0;
    const waking = delayed ? undefined : tx`select pg_notify(${JOBS_CHANNEL}, ${job.name})`.execute();
    const sending = boss.send(
      job.name,
      { ...payload, $v: job.version },
      {
        db: createTransactionPgBossDb(tx),
        retryLimit: job.retryLimit,
        retryDelay: job.retryDelaySeconds,
        retryBackoff: job.retryBackoff,
        expireInSeconds: job.expireInSeconds,
        // pg-boss checks `"retentionSeconds" in options`, so the key must be absent when unset.
        ...(job.retentionSeconds === undefined ? {} : { retentionSeconds: job.retentionSeconds }),
        startAfter: options.startAfterSeconds,
        singletonKey: options.singletonKey,
        id: options.id,
      },
    );
    const [id] = await Promise.all([sending, waking]);
    if (id === null) {
      throw new ConnectError(
        `job ${job.name} was not queued: one with the same id or singleton key is already queued`,
        Code.AlreadyExists,
      );
    }
    return id;
  }

  return {
    async start() {
      if (state !== "new") throw new Error("job queue was already started");
      try {
        await boss.start();
        // Per-job options travel with every send; the queue row is created once (ON CONFLICT DO NOTHING),
        // so only the policy, which no send can carry, is set here.
        for (const job of registry.values())
          await boss.createQueue(job.name, { name: job.name, policy: job.policy });
        if (runWorkers) await startWorkers();
      } catch (error) {
        // Leave no timers or workers behind, or a process that failed to start would never exit.
        await boss.stop({ graceful: false, close: false });
        await unlisten?.();
        state = "stopped";
        throw error;
      }
      state = "started";
    },

    async stop({ graceMs = DEFAULT_GRACE_MS } = {}) {
      if (state !== "started") return;
      state = "stopping";
      const deadline = Date.now() + graceMs;
      const timer = setTimeout(() => {
        giveUp.abort();
        for (const job of running)
          job.controller.abort(new Error("job queue stopped before the job finished"));
      }, graceMs);
      try {
        await boss.stop({ graceful: true, wait: true, close: false, timeout: graceMs });
        // Drain what pg-boss leaves behind (see trackQueries). A fetch that returns hands its batch to
        // runBatch, and a finished handler issues its completion, within the same turn; so after each
        // turn, wait for whatever queries and handlers are then in flight, until none are left.
        while (Date.now() < deadline) {
          await new Promise((resolve) => setImmediate(resolve));
          if (!tracked.busy() && running.size === 0) break;
          await settleWithin([tracked.idle(), ...[...running].map((job) => job.done)], deadline - Date.now());
        }
      } finally {
        clearTimeout(timer);
        await unlisten?.();
        state = "stopped";
      }
    },

    async enqueue(job, payload, enqueueOptions = {}) {
      requireStarted();
      if (registry.get(job.name) !== job)
        throw new Error(`job ${job.name} is not registered with this queue`);
      const { tx } = enqueueOptions;
      // Without a caller's transaction, one of our own keeps the insert and its NOTIFY together.
      return tx
        ? send(tx, job, payload, enqueueOptions)
        : sql.begin((own) => send(own, job, payload, enqueueOptions));
    },

    async check() {
      try {
        if ((await boss.schemaVersion()) === null) throw new Error("its version table is empty");
      } catch (error) {
        throw new Error(`job queue cannot reach its tables in schema ${schema}`, { cause: error });
      }
    },

    schema,

    workers: () => (state === "started" && runWorkers ? liveness.status() : []),

    async checkWorkers() {
      if (state !== "started" || !runWorkers) return;
      const stuck = liveness.status().filter((loop) => !loop.alive);
      if (stuck.length === 0) return;
      const names = stuck.map((loop) => loop.queue).join(", ");
      throw new Error(`job worker loops made no progress within the stall limit: ${names}`);
    },
  };
}
