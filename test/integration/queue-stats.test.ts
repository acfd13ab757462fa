import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineJob } from "../../server/jobs/job-definition.js";
import { createQueue, type Queue } from "../../server/jobs/queue.js";
import { readQueueStats } from "../../server/jobs/queue-stats.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";

const SCHEMA = "queue_stats_test";

let database: TestDatabase;
let queue: Queue;
const job = (name: string) =>
  defineJob<{ n: number }>({
    name,
    version: 1,
    retryLimit: 0,
    retryDelaySeconds: 0,
    retryBackoff: false,
    expireInSeconds: 60,
    handler: async () => {},
  });
const waiting = job("stats.waiting");
const idle = job("stats.idle");

beforeAll(async () => {
  database = await createTestDatabase();
  // No workers: what is sent stays queued, as behind workers that are all busy or down.
  queue = createQueue({
    sql: database.sql,
    schema: SCHEMA,
    jobs: [waiting, idle],
    runWorkers: false,
    log: () => {},
  });
  await queue.start();
});

afterAll(async () => {
  await queue?.stop({ graceMs: 1_000 });
  await database?.drop();
});

describe("readQueueStats", () => {
  it("counts unfinished jobs per queue and ages the oldest due one, not the ones scheduled later", async () => {
    expect(await readQueueStats(database.sql, SCHEMA)).toEqual([
      { queue: "stats.idle", created: 0, retry: 0, active: 0, oldestWaitSeconds: 0 },
      { queue: "stats.waiting", created: 0, retry: 0, active: 0, oldestWaitSeconds: 0 },
    ]);
    await queue.enqueue(waiting, { n: 1 });
    await queue.enqueue(waiting, { n: 2 });
    await queue.enqueue(idle, { n: 3 }, { startAfterSeconds: 3_600 });
    // Long enough for the due jobs' wait to show in whole seconds.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const stats = await readQueueStats(database.sql, SCHEMA);
    expect(stats.find((s) => s.queue === "stats.waiting")).toMatchObject({ created: 2, retry: 0, active: 0 });
    expect(stats.find((s) => s.queue === "stats.waiting")?.oldestWaitSeconds).toBeGreaterThanOrEqual(1);
    // Scheduled an hour from now: queued, but nobody is late for it.
    expect(stats.find((s) => s.queue === "stats.idle")).toEqual({
      queue: "stats.idle",
      created: 1,
      retry: 0,
      active: 0,
      oldestWaitSeconds: 0,
    });
  });
});
