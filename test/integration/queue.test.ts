import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { defineJob, type JobDefinition, type JobDefinitionInput } from "../../server/jobs/job-definition.js";
import { createQueue, type Queue, type QueueOptions } from "../../server/jobs/queue.js";
import type { Sql } from "../../server/store/db.js";
import { createTestDatabase } from "../support/database.js";
import { createProbeJob, createProbeTables } from "../support/probe-job.js";

const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));
const WORKER_SCRIPT = "test/support/queue-worker-process.ts";
/** Far longer than any test here waits, so a job that runs proves a wake-up, not a poll. */
const SLOW_POLL_SECONDS = 30;
/** How long a test waits for a condition before failing. */
const WAIT_MS = 15_000;

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let sql: Sql;
let schemaCount = 0;
const queues: Queue[] = [];
const children: ChildProcess[] = [];
const errorLogs: unknown[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  sql = database.sql;
  await sql`create table queue_test_effects (key text not null, attempt integer not null)`;
  await createProbeTables(sql);
});

afterEach(async () => {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  for (const queue of queues.splice(0)) await queue.stop({ graceMs: 1_000 });
  expect(errorLogs.splice(0)).toEqual([]);
});

afterAll(async () => {
  await database?.drop();
});

/** A pg-boss schema of its own per test, so tests never see each other's jobs. */
function freshSchema(): string {
  schemaCount += 1;
  return `queue_test_${schemaCount}`;
}

async function startQueue(options: Omit<QueueOptions, "sql" | "log">): Promise<Queue> {
  const queue = createQueue({
    sql,
    ...options,
    log: (level, msg, fields) => {
      if (level === "error") errorLogs.push({ msg, ...fields });
    },
  });
  queues.push(queue);
  await queue.start();
  return queue;
}

/** A job whose handler records `key` and its attempt number, after `behave` had its say. */
function recordingJob(
  name: string,
  overrides: Partial<JobDefinitionInput<{ key: string }>> = {},
  behave: (retryCount: number) => void = () => {},
): JobDefinition<{ key: string }> {
  return defineJob<{ key: string }>({
    name,
    version: 1,
    retryLimit: 0,
    retryDelaySeconds: 0,
    retryBackoff: false,
    expireInSeconds: 60,
    async handler(payload, job) {
      await sql`insert into queue_test_effects (key, attempt) values (${payload.key}, ${job.retryCount})`;
      behave(job.retryCount);
    },
    ...overrides,
  });
}

async function waitFor<T>(probe: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}; last value ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function attempts(key: string): Promise<number[]> {
  const rows = await sql`select attempt from queue_test_effects where key = ${key} order by attempt`;
  return rows.map((r) => r.attempt as number);
}

async function jobRow(
  schema: string,
  id: string,
): Promise<{ state: string; retry_count: number; output: unknown }> {
  const [row] = await sql`select state, retry_count, output from ${sql(schema)}.job where id = ${id}`;
  return row as { state: string; retry_count: number; output: unknown };
}

/** A worker process and what it wrote to stderr (its log) so far. */
interface WorkerProcess {
  child: ChildProcess;
  stderr(): string;
}

/** Starts a worker process on the probe job and waits until its workers run. */
async function spawnWorker(schema: string, args: string[] = []): Promise<WorkerProcess> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", WORKER_SCRIPT, database.url, "--schema", schema, ...args],
    {
      cwd: REPO_ROOT,
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  children.push(child);
  let stderr = "";
  child.stderr?.on("data", (chunk) => {
    stderr += chunk;
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on("data", (chunk: Buffer) => {
      if (chunk.toString().includes("ready")) resolve();
    });
    child.once("exit", (code) =>
      reject(new Error(`worker process exited with ${code} before ready: ${stderr}`)),
    );
  });
  return { child, stderr: () => stderr };
}

/** Sends SIGTERM and resolves with how the process ended, and its log when that was not a clean exit. */
async function terminate(
  worker: WorkerProcess,
): Promise<{ code: number | null; signal: string | null; log?: string }> {
  worker.child.kill("SIGTERM");
  const [code, signal] = await once(worker.child, "exit");
  return code === 0 ? { code, signal } : { code, signal, log: worker.stderr() };
}

describe("job queue", () => {
  it("runs a job enqueued in a transaction that commits, never one whose transaction rolls back", async () => {
    const schema = freshSchema();
    const job = recordingJob("record");
    const queue = await startQueue({
      schema,
      jobs: [job],
      runWorkers: true,
      pollIntervalSeconds: SLOW_POLL_SECONDS,
    });

    await expect(
      sql.begin(async (tx) => {
        await queue.enqueue(job, { key: "rolled-back" }, { tx });
        throw new Error("roll back");
      }),
    ).rejects.toThrow("roll back");
    const committedId = await sql.begin((tx) => queue.enqueue(job, { key: "committed" }, { tx }));

    await waitFor(
      () => attempts("committed"),
      (a) => a.length === 1,
      "the committed job",
    );
    expect((await jobRow(schema, committedId)).state).toBe("completed");
    const queued =
      await sql`select count(*)::int as count from ${sql(schema)}.job where data->>'key' = 'rolled-back'`;
    expect(queued[0]?.count).toBe(0);
    expect(await attempts("rolled-back")).toEqual([]);
  });

  it("wakes its own idle worker at once, without waiting for a poll", async () => {
    const job = recordingJob("record");
    const queue = await startQueue({
      schema: freshSchema(),
      jobs: [job],
      runWorkers: true,
      pollIntervalSeconds: SLOW_POLL_SECONDS,
    });
    // After the first job the worker has nothing left and sleeps the 30 s poll interval.
    await queue.enqueue(job, { key: "first" });
    await waitFor(
      () => attempts("first"),
      (a) => a.length === 1,
      "the first job",
    );
    await queue.enqueue(job, { key: "second" });
    await waitFor(
      () => attempts("second"),
      (a) => a.length === 1,
      "the second job",
    );
  });

  it("runs a job enqueued by one process in another, woken by NOTIFY", async () => {
    const schema = freshSchema();
    const worker = await spawnWorker(schema, ["--poll", String(SLOW_POLL_SECONDS)]);
    const probe = createProbeJob(sql);
    const sender = await startQueue({ schema, jobs: [probe], runWorkers: false });

    for (const key of ["cross-1", "cross-2"]) {
      const id = await sender.enqueue(probe, { key });
      const rows = await waitFor(
        () => sql`select pid from queue_probe_effects where job_id = ${id}`,
        (r) => r.length === 1,
        `job ${key} in the worker process`,
      );
      expect(rows[0]?.pid).toBe(worker.child.pid);
    }
  });

  it("retries a failing handler up to retryLimit, then marks the job failed", async () => {
    const schema = freshSchema();
    const failing = recordingJob("always-fails", { retryLimit: 2 }, (retryCount) => {
      throw new Error(`attempt ${retryCount} failed`);
    });
    const flaky = recordingJob("fails-once", { retryLimit: 2 }, (retryCount) => {
      if (retryCount === 0) throw new Error("first attempt failed");
    });
    const queue = await startQueue({ schema, jobs: [failing, flaky], runWorkers: true });

    const failingId = await queue.enqueue(failing, { key: "always-fails" });
    const flakyId = await queue.enqueue(flaky, { key: "fails-once" });

    const final = await waitFor(
      () => jobRow(schema, failingId),
      (r) => r.state === "failed",
      "the job to fail",
    );
    expect(await attempts("always-fails")).toEqual([0, 1, 2]);
    expect(final.retry_count).toBe(2);
    expect(JSON.stringify(final.output)).toContain("attempt 2 failed");

    await waitFor(
      () => jobRow(schema, flakyId),
      (r) => r.state === "completed",
      "the flaky job to complete",
    );
    expect(await attempts("fails-once")).toEqual([0, 1]);
  });

  it("fails a job whose payload version the worker does not handle", async () => {
    const schema = freshSchema();
    const v1 = recordingJob("versioned", { version: 1 });
    const v2 = recordingJob("versioned", { version: 2 });
    const sender = await startQueue({ schema, jobs: [v1], runWorkers: false });
    await startQueue({ schema, jobs: [v2], runWorkers: true });

    const id = await sender.enqueue(v1, { key: "old-version" });
    const final = await waitFor(
      () => jobRow(schema, id),
      (r) => r.state === "failed",
      "the job to fail",
    );
    expect(JSON.stringify(final.output)).toContain("payload version 1; this worker handles version 2");
    expect(await attempts("old-version")).toEqual([]);
  });

  it("refuses a job that is not registered, and a duplicate id", async () => {
    const schema = freshSchema();
    const registered = recordingJob("registered");
    const queue = await startQueue({ schema, jobs: [registered], runWorkers: false });

    await expect(queue.enqueue(recordingJob("registered"), { key: "x" })).rejects.toThrow("not registered");
    const id = await queue.enqueue(registered, { key: "once" });
    await expect(queue.enqueue(registered, { key: "twice" }, { id })).rejects.toThrow("already queued");
  });

  it("passes check() on an installed schema and fails it on a missing one", async () => {
    const queue = await startQueue({ schema: freshSchema(), jobs: [], runWorkers: false });
    await expect(queue.check()).resolves.toBeUndefined();
    const neverStarted = createQueue({
      sql,
      schema: "never_installed",
      jobs: [],
      runWorkers: false,
      log: () => {},
    });
    await expect(neverStarted.check()).rejects.toThrow("cannot reach its tables in schema never_installed");
  });

  it("aborts a handler that outlives stop()'s grace, and the job runs again elsewhere", async () => {
    const schema = freshSchema();
    let aborted = false;
    const stubborn = defineJob<{ key: string }>({
      name: "slow-first",
      version: 1,
      retryLimit: 1,
      retryDelaySeconds: 0,
      retryBackoff: false,
      expireInSeconds: 60,
      async handler(payload, context) {
        await sql`insert into queue_test_effects (key, attempt) values (${payload.key}, ${context.retryCount})`;
        if (context.retryCount > 0) return;
        await new Promise((_, reject) => {
          context.signal.addEventListener("abort", () => {
            aborted = true;
            reject(context.signal.reason);
          });
        });
      },
    });
    const first = await startQueue({ schema, jobs: [stubborn], runWorkers: true });
    const id = await first.enqueue(stubborn, { key: "slow-first" });
    await waitFor(
      () => attempts("slow-first"),
      (a) => a.length === 1,
      "the first attempt to start",
    );

    await first.stop({ graceMs: 200 });
    expect(aborted).toBe(true);
    await waitFor(
      () => jobRow(schema, id),
      (r) => r.state === "retry",
      "the job to be queued again",
    );

    await startQueue({ schema, jobs: [stubborn], runWorkers: true });
    await waitFor(
      () => jobRow(schema, id),
      (r) => r.state === "completed",
      "the second attempt",
    );
    expect(await attempts("slow-first")).toEqual([0, 1]);
  });

  it("drains a backlog at full speed instead of one job per poll", { timeout: 30_000 }, async () => {
    const schema = freshSchema();
    const job = recordingJob("backlog");
    const sender = await startQueue({ schema, jobs: [job], runWorkers: false });
    const total = 200;
    await Promise.all(Array.from({ length: total }, (_, i) => sender.enqueue(job, { key: `backlog-${i}` })));

    // Nothing was listening when these were sent: only the burst re-fetch can drain them quickly
    // (200 jobs at one per 2 s poll would take 400 s).
    await startQueue({ schema, jobs: [job], runWorkers: true });
    await waitFor(
      () => sql`select count(*)::int as count from queue_test_effects where key like 'backlog-%'`,
      (rows) => rows[0]?.count === total,
      "the backlog to drain",
    );
  });

  // Slow jobs: SIGTERM lands while handlers run. Instant jobs: it lands while fetches and the
  // completions pg-boss does not await are in flight.
  it.each([
    { profile: "slow jobs", total: 20, workMs: 300, busyAfter: 4 },
    { profile: "instant jobs", total: 400, workMs: 0, busyAfter: 40 },
  ])(
    "hands over cleanly on SIGTERM with $profile: every job completes once, none lost",
    {
      timeout: 60_000,
    },
    async ({ total, workMs, busyAfter }) => {
      const schema = freshSchema();
      const first = await spawnWorker(schema, ["--workers", "2"]);
      const probe = createProbeJob(sql);
      const sender = await startQueue({ schema, jobs: [probe], runWorkers: false });
      const ids = await Promise.all(
        Array.from({ length: total }, (_, i) => sender.enqueue(probe, { key: `term-${i}`, workMs })),
      );

      await waitFor(
        () => sql`select count(*)::int as count from queue_probe_runs where job_id = any(${ids}::uuid[])`,
        (rows) => (rows[0]?.count ?? 0) >= busyAfter,
        "the first worker to be busy",
      );
      expect(await terminate(first)).toEqual({ code: 0, signal: null });
      const active = await sql`select count(*)::int as count from ${sql(schema)}.job where state = 'active'`;
      expect(active[0]?.count).toBe(0);

      const second = await spawnWorker(schema, ["--workers", "2"]);
      await waitFor(
        () =>
          sql`select count(*)::int as count from ${sql(schema)}.job where id = any(${ids}::uuid[]) and state = 'completed'`,
        (rows) => rows[0]?.count === total,
        "every job to complete",
      );
      const perJob = await sql`select r.job_id, count(*)::int as runs, min(e.pid) as pid
      from queue_probe_runs r join queue_probe_effects e using (job_id)
      where r.job_id = any(${ids}::uuid[]) group by r.job_id`;
      expect(perJob).toHaveLength(total);
      expect(perJob.filter((r) => r.runs !== 1)).toEqual([]);
      const byFirst = perJob.filter((r) => r.pid === first.child.pid).length;
      const bySecond = perJob.filter((r) => r.pid === second.child.pid).length;
      expect(byFirst).toBeGreaterThan(0);
      expect(bySecond).toBeGreaterThan(0);
      expect(byFirst + bySecond).toBe(total);
    },
  );
});
