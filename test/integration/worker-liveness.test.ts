import postgres from "postgres";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { defineJob, type JobDefinition } from "../../server/jobs/job-definition.js";
import { createQueue, type Queue } from "../../server/jobs/queue.js";
import type { Sql } from "../../server/store/db.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";

/** Progress a loop may skip before it counts as stuck: four of the 0.5 s polls used here. */
const STALL_AFTER_MS = 2_000;
/** The shortest poll pg-boss allows, so that a live loop fetches often. */
const POLL_SECONDS = 0.5;
/** How long a test waits for a condition before failing: generous for a loaded machine. */
const WAIT_MS = 20_000;

let database: TestDatabase;
let sql: Sql;
let schemaCount = 0;
const queues: Queue[] = [];
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  sql = database.sql;
  await sql`create table liveness_effects (key text not null)`;
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  for (const queue of queues.splice(0)) await queue.stop({ graceMs: 1_000 });
});

afterAll(async () => {
  await database?.drop();
});

/** A job that records its key once `gate` (when given) resolves. */
function recordingJob(gate?: () => Promise<void>): JobDefinition<{ key: string }> {
  return defineJob<{ key: string }>({
    name: "liveness.record",
    version: 1,
    retryLimit: 0,
    retryDelaySeconds: 0,
    retryBackoff: false,
    expireInSeconds: 60,
    async handler(payload) {
      await gate?.();
      await sql`insert into liveness_effects (key) values (${payload.key})`;
    },
  });
}

async function startQueue(job: JobDefinition<{ key: string }>): Promise<{ queue: Queue; schema: string }> {
  schemaCount += 1;
  const schema = `liveness_test_${schemaCount}`;
  const queue = createQueue({
    sql,
    schema,
    jobs: [job],
    runWorkers: true,
    pollIntervalSeconds: POLL_SECONDS,
    stallAfterMs: STALL_AFTER_MS,
    log: () => {},
  });
  queues.push(queue);
  await queue.start();
  return { queue, schema };
}

/** Resolves once `check` holds, polling; throws after {@link WAIT_MS}. */
async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${WAIT_MS} ms`);
    // A short pause between polls: the states waited for change within a few seconds.
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const passes = (queue: Queue) =>
  queue.checkWorkers().then(
    () => true,
    () => false,
  );

async function recorded(key: string): Promise<boolean> {
  const rows = await sql`select 1 from liveness_effects where key = ${key}`;
  return rows.length > 0;
}

describe("worker loop liveness", () => {
  it("reports a loop whose fetch is blocked as stuck, and alive again once it fetches", async () => {
    const job = recordingJob();
    const { queue, schema } = await startQueue(job);
    await until("a first fetch", async () => queue.workers()[0]?.idleMs !== undefined);
    await queue.checkWorkers();
    expect(queue.workers()).toMatchObject([{ queue: "liveness.record", alive: true, batches: 0 }]);

    // Postgres stays healthy for everyone else, but the loop's fetch waits on the lock: what a
    // leaked transaction or a starved pool does to a worker while the health check still passes.
    const locker = postgres(database.url, { max: 1, onnotice: () => {} });
    cleanups.push(() => locker.end({ timeout: 1 }));
    const held = await locker.reserve();
    await held`begin`;
    await held`lock table ${held(schema)}.job in access exclusive mode`;
    let released = false;
    const release = async () => {
      if (released) return;
      released = true;
      await held`rollback`;
      held.release();
    };
    cleanups.push(release);

    await until("the loop to count as stuck", async () => !(await passes(queue)));
    await expect(queue.checkWorkers()).rejects.toThrow(
      "job worker loops made no progress within the stall limit: liveness.record",
    );
    expect(queue.workers()[0]?.alive).toBe(false);
    expect(queue.workers()[0]?.idleMs).toBeGreaterThan(STALL_AFTER_MS);

    await release();
    await until("the loop to be alive again", () => passes(queue));
    await queue.enqueue(job, { key: "after-lock" });
    await until("a job to be worked after the lock", () => recorded("after-lock"));
  });

  it("counts a loop running a long batch as alive, and works the job once it finishes", async () => {
    let open: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const job = recordingJob(() => gate);
    const { queue } = await startQueue(job);
    cleanups.push(async () => open());
    await queue.enqueue(job, { key: "long" });
    await until("the batch to start", async () => queue.workers()[0]?.batches === 1);
    // Longer than the stall limit without a fetch: the loop is busy, not stuck.
    await new Promise((resolve) => setTimeout(resolve, STALL_AFTER_MS * 1.5));
    await queue.checkWorkers();
    expect(queue.workers()[0]).toMatchObject({ alive: true, batches: 1 });
    open();
    await until("the job to be recorded", () => recorded("long"));
    await until("the batch to end", async () => queue.workers()[0]?.batches === 0);
    await queue.checkWorkers();
  });

  it("reports no loops for a queue that runs no workers", async () => {
    const queue = createQueue({
      sql,
      schema: "liveness_test_api",
      jobs: [recordingJob()],
      runWorkers: false,
      log: () => {},
    });
    queues.push(queue);
    await queue.start();
    expect(queue.workers()).toEqual([]);
    await queue.checkWorkers();
  });
});
