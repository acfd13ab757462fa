/**
 * Crons served by two server processes on one database (two apps on one Postgres, both ticking
 * every second and both working the run queue, with one injected clock): when a burst of crons comes
 * due (more than one tick batch, so helper passes spread over both processes), each fires exactly
 * once per due time, not once per process; a second due time fires each once more. Crons are created
 * through both processes with the official SDK; runs are counted in Postgres by the `cron_id` their
 * metadata carries.
 */
import postgres from "postgres";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Clock } from "../../server/clock.js";
import { RUNS_GRAPHS, sdkClient, waitFor } from "../support/runs-app.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** Crons in the burst: three tick batches, so the tick asks for helper passes. */
const CRONS = 150;
/** The clock both processes read; the crons' first time is 10:05. */
const clock: Clock & { at: Date } = { at: new Date("2032-06-01T10:00:00.000Z"), now: () => clock.at };

let one: TestApp;
let two: TestApp;
let db: postgres.Sql;

beforeAll(async () => {
  const hooks = { clock, cronTickSeconds: 1 };
  one = await startTestApp({ graphConfigPath: RUNS_GRAPHS }, { hooks });
  two = await startTestApp({ graphConfigPath: RUNS_GRAPHS, databaseUrl: one.databaseUrl }, { hooks });
  db = postgres(one.databaseUrl, { max: 1, onnotice: () => {} });
});
afterAll(async () => {
  await db?.end();
  await two?.stop();
  await one?.stop();
});

/** Runs per cron, from the runs' metadata; crons with none are absent. */
async function runsPerCron(): Promise<Map<string, number>> {
  const rows = await db<{ cron_id: string; runs: number }[]>`
    select metadata->>'cron_id' as cron_id, count(*)::int as runs from agent_runs
    where metadata ? 'cron_id' group by 1`;
  return new Map(rows.map((r) => [r.cron_id, r.runs]));
}

/** Waits until every cron has `n` runs and all of them ended, then checks none has more. */
async function expectEachFired(cronIds: readonly string[], n: number): Promise<void> {
  const counts = await waitFor(runsPerCron, (m) => cronIds.every((id) => (m.get(id) ?? 0) >= n), 90_000);
  expect(cronIds.filter((id) => counts.get(id) !== n)).toEqual([]);
  await waitFor(
    async () => (await db`select 1 from agent_runs where status in ('pending', 'running')`).length,
    (active) => active === 0,
    90_000,
  );
  const settled = await runsPerCron();
  expect(cronIds.filter((id) => settled.get(id) !== n)).toEqual([]);
}

it("a burst of due crons fires each exactly once per due time across two processes", async () => {
  const clients = [sdkClient(one.baseUrl, one.adminKey), sdkClient(two.baseUrl, one.adminKey)];
  const cronIds: string[] = [];
  for (let i = 0; i < CRONS; i += 1) {
    const client = clients[i % 2];
    const cron = await client?.crons.create("echo", {
      schedule: "5 * * * *",
      onRunCompleted: "keep",
      metadata: { burst: i },
    });
    cronIds.push(cron?.cron_id ?? "");
  }
  expect((await runsPerCron()).size).toBe(0);

  clock.at = new Date("2032-06-01T10:05:00.000Z");
  await expectEachFired(cronIds, 1);
  const [cron] = (await clients[0]?.crons.search({ metadata: { burst: 0 } })) ?? [];
  expect(cron?.next_run_date).toBe("2032-06-01T11:05:00.000Z");

  clock.at = new Date("2032-06-01T11:05:30.000Z");
  await expectEachFired(cronIds, 2);
}, 240_000);
