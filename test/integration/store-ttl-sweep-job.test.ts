/** The store TTL sweeper: deletes expired items in batches through a real queue, and keeps itself scheduled. */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { createQueue, type Queue } from "../../server/jobs/queue.js";
import { createStoreTtlSweepJob, scheduleStoreTtlSweep } from "../../server/jobs/store-ttl-sweep-job.js";
import { PostgresStore } from "../../server/runtime/postgres-store.js";
import type { Sql } from "../../server/store/db.js";
import { useTestDatabase } from "../support/database.js";
import { createTestWorkspace } from "../support/tenancy.js";

const database = useTestDatabase();
let sql: Sql;
let store: PostgresStore;

beforeAll(async () => {
  sql = database().sql;
  const workspaceId = await createTestWorkspace(sql);
  store = new PostgresStore(sql, workspaceId);
});

describe("store TTL sweep job", () => {
  const queues: Queue[] = [];
  afterEach(async () => {
    for (const queue of queues.splice(0)) await queue.stop({ graceMs: 1_000 });
  });

  it("deletes expired items in batches and schedules the next sweep", async () => {
    const ns = ["sweep"];
    await store.batch(
      Array.from({ length: 5 }, (_, i) => ({ namespace: ns, key: `old${i}`, value: { i }, ttl: 1 })),
    );
    await store.batch([
      { namespace: ns, key: "young", value: {}, ttl: 60 },
      { namespace: ns, key: "forever", value: {} },
    ]);
    await sql`update store_items set expires_at = now() - interval '1 second' where namespace = ${ns} and key like 'old%'`;

    const errors: unknown[] = [];
    const holder: { queue?: Queue } = {};
    const job = createStoreTtlSweepJob({
      sql,
      queue: () => holder.queue!,
      intervalMinutes: 30,
      batchSize: 2,
    });
    const schema = "store_sweep_test";
    const queue = createQueue({
      sql,
      schema,
      jobs: [job],
      runWorkers: true,
      log: (level, msg, fields) => {
        if (level === "error" || level === "warn") errors.push({ msg, ...fields });
      },
    });
    holder.queue = queue;
    queues.push(queue);
    await queue.start();
    await scheduleStoreTtlSweep(queue, job, 0);

    const deadline = Date.now() + 15_000;
    let next: { start_after: Date }[] = [];
    while (Date.now() < deadline) {
      const left = await sql<
        { key: string }[]
      >`select key from store_items where namespace = ${ns} order by key`;
      next = await sql<{ start_after: Date }[]>`
        select start_after from ${sql(schema)}.job where name = 'store.ttl-sweep' and state = 'created'`;
      if (left.length === 2 && next.length === 1) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const left = await sql<
      { key: string }[]
    >`select key from store_items where namespace = ${ns} order by key`;
    expect(left.map((r) => r.key)).toEqual(["forever", "young"]);
    expect(next).toHaveLength(1);
    expect(next[0]!.start_after.getTime()).toBeGreaterThan(Date.now() + 25 * 60_000);
    // Seeding again while the next sweep waits is refused by the singleton key, and ignored.
    await scheduleStoreTtlSweep(queue, job, 0);
    const queued = await sql<{ n: number }[]>`
      select count(*)::int as n from ${sql(schema)}.job where name = 'store.ttl-sweep' and state = 'created'`;
    expect(queued[0]?.n).toBe(1);
    expect(errors).toEqual([]);
  });
});
