/**
 * Queue bench (`npm run bench:queue`): enqueue → handler-start latency and throughput of our queue
 * (pg-boss 10 plus NOTIFY wake-ups and burst re-fetch) against pg-boss's own polling at its 0.5 s
 * minimum, measured side by side in one run on a throwaway embedded Postgres (fsync off) holding
 * nothing but pg-boss's schemas. Aim: p50 latency under 20 ms.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import PgBoss from "pg-boss";
import { defineJob, type JobDefinition } from "../server/jobs/job-definition.js";
import { createPgBossDb } from "../server/jobs/pg-boss-db.js";
import { createQueue, type Queue } from "../server/jobs/queue.js";
import { createSql, type Sql } from "../server/store/db.js";
import { createProbeJob, nowMs } from "../test/support/probe-job.js";
import { startBenchPostgres } from "./support/bench-postgres.js";
import { percentile } from "./support/percentile.js";

/** Sequential samples for our latency: enough for a stable p99. */
const SAMPLES = 300;
/** Sequential samples for the polling baseline: each waits up to 0.5 s, and 40 pin its median well enough. */
const BASELINE_SAMPLES = 40;
/** Samples sent first and not counted, so connections and JIT are warm. */
const WARM_UP = 10;
/** Jobs per throughput run. */
const THROUGHPUT_JOBS = 5_000;
/** The baseline drains 2 fetches per second at best; it is measured over this window instead of to the end. */
const BASELINE_WINDOW_MS = 5_000;
/** Enough for the baseline's window: at most 2 fetches/s × 5 s × 50 jobs = 500 can run in it. */
const BASELINE_PRELOAD = 1_000;
/**
 * Pause before each latency sample, in ms: ours 5–15 (the worker has surely gone back to sleep after
 * its previous job, so the wake-up is what gets measured), the baseline anywhere in its poll interval
 * (real sends arrive at random points of the loop; back-to-back sends would measure either a full
 * interval or, right after a job, the burst re-fetch).
 */
const OUR_PAUSE_MS = { min: 5, max: 15 };
const BASELINE_PAUSE_MS = { min: 0, max: 500 };
/** Sequential enqueues timed to show the cost of our transaction and NOTIFY per send. */
const ENQUEUE_SAMPLES = 1_000;
/** pg-boss's minimum polling interval, the fastest the baseline can be. */
const BASELINE_POLL_SECONDS = 0.5;
/** Pool size: the bench's own queries, a few workers and pg-boss maintenance. */
const POOL_MAX = 10;
/** The aim for p50 enqueue → handler-start latency. */
const AIM_P50_MS = 20;

const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));
const silent = () => {};

interface Row {
  label: string;
  cells: string[];
}

function pause(range: { min: number; max: number }): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, range.min + Math.random() * (range.max - range.min)));
}

function latencyRow(label: string, samples: number[]): Row & { p50: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const p50 = percentile(sorted, 50);
  return { label, p50, cells: [String(samples.length), p50.toFixed(2), percentile(sorted, 99).toFixed(2)] };
}

function printTable(title: string, headers: string[], rows: Row[]): void {
  const width = Math.max(...rows.map((r) => r.label.length), title.length);
  console.log(`\n${title.padEnd(width)}  ${headers.map((h) => h.padStart(10)).join("")}`);
  for (const row of rows)
    console.log(`${row.label.padEnd(width)}  ${row.cells.map((c) => c.padStart(10)).join("")}`);
}

/** A job whose handler reports each start to whoever waits for it. */
function createLatencyJob(name: string): {
  job: JobDefinition<{ sentAtMs: number }>;
  nextStart(): Promise<number>;
} {
  let waiter: ((latency: number) => void) | undefined;
  const job = defineJob<{ sentAtMs: number }>({
    name,
    version: 1,
    retryLimit: 0,
    retryDelaySeconds: 0,
    retryBackoff: false,
    expireInSeconds: 60,
    async handler(payload) {
      waiter?.(nowMs() - payload.sentAtMs);
    },
  });
  return { job, nextStart: () => new Promise((resolve) => (waiter = resolve)) };
}

/** A job that counts handler runs and resolves `done` once `total` have finished. */
function createCountingJob(name: string, batchSize: number, total: number) {
  let count = 0;
  let firstStart = 0;
  let resolveDone: (elapsedMs: number) => void = silent;
  const done = new Promise<number>((resolve) => (resolveDone = resolve));
  const job = defineJob<{ i: number }>({
    name,
    version: 1,
    retryLimit: 0,
    retryDelaySeconds: 0,
    retryBackoff: false,
    expireInSeconds: 60,
    batchSize,
    async handler() {
      if (count === 0) firstStart = nowMs();
      count += 1;
      if (count === total) resolveDone(nowMs() - firstStart);
    },
  });
  return { job, done, count: () => count };
}

async function startQueue(
  sql: Sql,
  schema: string,
  jobs: JobDefinition[],
  runWorkers: boolean,
): Promise<Queue> {
  const queue = createQueue({ sql, schema, jobs, runWorkers, log: silent });
  await queue.start();
  return queue;
}

/** Plain pg-boss on the same pool: polling only, at its minimum interval, no wake-ups, no burst. */
async function startBaselineBoss(sql: Sql, schema: string, names: string[]): Promise<PgBoss> {
  const boss = new PgBoss({ db: createPgBossDb(sql), schema, schedule: false, supervise: false });
  boss.on("error", silent);
  await boss.start();
  for (const name of names) await boss.createQueue(name, { name });
  return boss;
}

async function inProcessLatency(sql: Sql): Promise<{ ours: number[]; baseline: number[] }> {
  const probe = createLatencyJob("latency");
  const queue = await startQueue(sql, "bench_latency", [probe.job], true);
  const ours: number[] = [];
  for (let i = 0; i < WARM_UP + SAMPLES; i++) {
    await pause(OUR_PAUSE_MS);
    const started = probe.nextStart();
    await queue.enqueue(probe.job, { sentAtMs: nowMs() });
    const latency = await started;
    if (i >= WARM_UP) ours.push(latency);
  }
  await queue.stop();

  const boss = await startBaselineBoss(sql, "bench_latency_baseline", ["latency"]);
  let waiter: (latency: number) => void = silent;
  await boss.work<{ sentAtMs: number }>(
    "latency",
    { pollingIntervalSeconds: BASELINE_POLL_SECONDS },
    async ([job]) => {
      if (job) waiter(nowMs() - job.data.sentAtMs);
    },
  );
  const baseline: number[] = [];
  for (let i = 0; i < BASELINE_SAMPLES; i++) {
    await pause(BASELINE_PAUSE_MS);
    const started = new Promise<number>((resolve) => (waiter = resolve));
    await boss.send("latency", { sentAtMs: nowMs() });
    baseline.push(await started);
  }
  await boss.stop({ graceful: false, close: false });
  return { ours, baseline };
}

async function spawnWorker(url: string, schema: string, pollSeconds: number): Promise<ChildProcess> {
  const args = ["--import", "tsx", "test/support/queue-worker-process.ts", url, "--schema", schema];
  const child = spawn(process.execPath, [...args, "--poll", String(pollSeconds)], {
    cwd: REPO_ROOT,
    stdio: ["ignore", "pipe", "inherit"],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on("data", (chunk: Buffer) => chunk.toString().includes("ready") && resolve());
    child.once("exit", (code) => reject(new Error(`worker process exited with ${code}`)));
  });
  return child;
}

async function stopWorker(child: ChildProcess): Promise<void> {
  child.kill("SIGTERM");
  await once(child, "exit");
}

/** Latency the worker process measured for job `id` (it records the start time against the payload's send time). */
async function awaitProbeLatency(sql: Sql, id: string): Promise<number> {
  for (;;) {
    const [row] = await sql`select latency_ms from queue_probe_runs where job_id = ${id}`;
    if (row) return row.latency_ms as number;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

async function crossProcessLatency(sql: Sql, url: string): Promise<{ ours: number[]; baseline: number[] }> {
  const probe = createProbeJob(sql);
  const schema = "bench_cross";
  const child = await spawnWorker(url, schema, 2);
  const queue = await startQueue(sql, schema, [probe], false);
  const ours: number[] = [];
  for (let i = 0; i < WARM_UP + SAMPLES; i++) {
    await pause(OUR_PAUSE_MS);
    const id = await queue.enqueue(probe, { key: `cross-${i}`, sentAtMs: nowMs() });
    const latency = await awaitProbeLatency(sql, id);
    if (i >= WARM_UP) ours.push(latency);
  }
  await queue.stop();
  await stopWorker(child);

  // The same worker process at the minimum poll, sent to by plain pg-boss, so no NOTIFY wakes it.
  const baselineSchema = "bench_cross_baseline";
  const baselineChild = await spawnWorker(url, baselineSchema, BASELINE_POLL_SECONDS);
  const boss = await startBaselineBoss(sql, baselineSchema, [probe.name]);
  const baseline: number[] = [];
  for (let i = 0; i < BASELINE_SAMPLES; i++) {
    await pause(BASELINE_PAUSE_MS);
    const payload = { key: `cross-baseline-${i}`, sentAtMs: nowMs(), $v: probe.version };
    const id = await boss.send(probe.name, payload);
    if (id === null) throw new Error("baseline send was refused");
    baseline.push(await awaitProbeLatency(sql, id));
  }
  await boss.stop({ graceful: false, close: false });
  await stopWorker(baselineChild);
  return { ours, baseline };
}

async function ourThroughput(sql: Sql, batchSize: number): Promise<number> {
  const schema = `bench_throughput_${batchSize}`;
  const counter = createCountingJob("throughput", batchSize, THROUGHPUT_JOBS);
  const sender = await startQueue(sql, schema, [counter.job], false);
  await Promise.all(Array.from({ length: THROUGHPUT_JOBS }, (_, i) => sender.enqueue(counter.job, { i })));
  const worker = await startQueue(sql, schema, [counter.job], true);
  const elapsedMs = await counter.done;
  await worker.stop();
  await sender.stop();
  return (THROUGHPUT_JOBS / elapsedMs) * 1000;
}

async function baselineThroughput(sql: Sql, batchSize: number): Promise<number> {
  const boss = await startBaselineBoss(sql, `bench_throughput_baseline_${batchSize}`, ["throughput"]);
  // Not boss.insert(): it passes pre-serialised JSON, which porsager would encode a second time.
  await Promise.all(Array.from({ length: BASELINE_PRELOAD }, (_, i) => boss.send("throughput", { i })));
  let count = 0;
  const options = { pollingIntervalSeconds: BASELINE_POLL_SECONDS, batchSize };
  const started = nowMs();
  await boss.work("throughput", options, async (jobs) => {
    count += jobs.length;
  });
  await new Promise((resolve) => setTimeout(resolve, BASELINE_WINDOW_MS));
  const rate = (count / (nowMs() - started)) * 1000;
  await boss.stop({ graceful: false, close: false });
  return rate;
}

async function enqueueRates(sql: Sql): Promise<{ ours: number; plain: number }> {
  const counter = createCountingJob("enqueue", 1, ENQUEUE_SAMPLES);
  const queue = await startQueue(sql, "bench_enqueue", [counter.job], false);
  let started = nowMs();
  for (let i = 0; i < ENQUEUE_SAMPLES; i++) await queue.enqueue(counter.job, { i });
  const ours = (ENQUEUE_SAMPLES / (nowMs() - started)) * 1000;
  await queue.stop();
  const boss = await startBaselineBoss(sql, "bench_enqueue_baseline", ["enqueue"]);
  started = nowMs();
  for (let i = 0; i < ENQUEUE_SAMPLES; i++) await boss.send("enqueue", { i });
  const plain = (ENQUEUE_SAMPLES / (nowMs() - started)) * 1000;
  await boss.stop({ graceful: false, close: false });
  return { ours, plain };
}

async function main(): Promise<void> {
  const server = await startBenchPostgres("queue");
  const sql = createSql(server.url, { max: POOL_MAX, statementTimeoutMs: 0, applicationName: "bench-queue" });
  try {
    const [settings] = await sql`select current_setting('server_version') as version`;
    console.log(
      `queue bench: pg-boss 10.4.2, PostgreSQL ${settings?.version} (embedded, fsync off), Node ${process.version}, ${availableParallelism()} cores`,
    );

    const local = await inProcessLatency(sql);
    const cross = await crossProcessLatency(sql, server.url);
    const rows = [
      latencyRow("in-process, ours (NOTIFY wake-up)", local.ours),
      latencyRow(`in-process, pg-boss polling ${BASELINE_POLL_SECONDS} s`, local.baseline),
      latencyRow("cross-process, ours (NOTIFY wake-up)", cross.ours),
      latencyRow(`cross-process, pg-boss polling ${BASELINE_POLL_SECONDS} s`, cross.baseline),
    ];
    printTable("latency, enqueue → handler start (ms)", ["n", "p50", "p99"], rows);
    const [localOurs, localBase, crossOurs, crossBase] = rows.map((r) => r.p50) as [
      number,
      number,
      number,
      number,
    ];
    console.log(
      `p50 ratio baseline/ours: in-process ${(localBase / localOurs).toFixed(0)}×, cross-process ${(crossBase / crossOurs).toFixed(0)}×`,
    );

    const throughput: Row[] = [];
    for (const batchSize of [50, 1]) {
      const ours = await ourThroughput(sql, batchSize);
      const baseline = await baselineThroughput(sql, batchSize);
      throughput.push({
        label: `batchSize ${batchSize}, 1 worker`,
        cells: [ours.toFixed(0), baseline.toFixed(0), `${(ours / baseline).toFixed(0)}×`],
      });
    }
    printTable(
      `throughput (jobs/s; ours drains ${THROUGHPUT_JOBS}, baseline over ${BASELINE_WINDOW_MS / 1000} s)`,
      ["ours", "polling", "ratio"],
      throughput,
    );

    const enqueue = await enqueueRates(sql);
    printTable(
      `sequential enqueue (jobs/s, ${ENQUEUE_SAMPLES} sends)`,
      ["rate"],
      [
        { label: "ours (own transaction + NOTIFY)", cells: [enqueue.ours.toFixed(0)] },
        { label: "pg-boss send", cells: [enqueue.plain.toFixed(0)] },
      ],
    );

    const met = localOurs < AIM_P50_MS && crossOurs < AIM_P50_MS;
    console.log(
      `\nverdict: aim p50 < ${AIM_P50_MS} ms ${met ? "MET" : "NOT MET"} (in-process ${localOurs.toFixed(2)} ms, cross-process ${crossOurs.toFixed(2)} ms)`,
    );
  } finally {
    await sql.end();
    await server.stop();
  }
}

await main();
