/**
 * Scheduled exports driven by an injected clock: a schedule spawns consecutive windows, each 10
 * minutes after it ends, catches up after an outage without gaps or duplicates, carries filter and
 * export_fields over, and stops spawning when cancelled while the exports it spawned carry on.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import type { Clock } from "../../server/clock.js";
import {
  createS3Destination,
  restJson,
  sendTraces,
  utcDay,
  waitForExportStatus,
} from "../support/bulk-export-fixtures.js";
import { type S3Server, startS3Server } from "../support/s3-server.js";
import { startTestApp, TEST_BULK_EXPORT_SETTINGS, type TestApp } from "../support/test-app.js";

const BUCKET = "scheduled";
const HOUR = 60 * 60 * 1000;
const MINUTE = 60 * 1000;
/** Midnight three days ago: where the schedule starts. */
const BASE = utcDay(3);
const settings = { ...TEST_BULK_EXPORT_SETTINGS, maintenanceIntervalSeconds: 1 };

/** The clock the server reads; the test moves it. */
const clock: Clock & { at: Date } = {
  at: new Date(BASE.getTime() + 18 * HOUR + 5 * MINUTE),
  now: () => clock.at,
};
let s3: S3Server;
let first: TestApp;
let t: TestApp;
let destinationId: string;
let projectId: string;

type Json = Record<string, unknown>;

const json = (path: string, init: RequestInit = {}) => restJson(t.fetch, path, init);

async function createSchedule(body: Json): Promise<Json> {
  const res = await json("/api/v1/bulk-exports", {
    method: "POST",
    body: JSON.stringify({ bulk_export_destination_id: destinationId, session_id: projectId, ...body }),
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

/** The exports `scheduleId` spawned, oldest window first. */
async function spawned(scheduleId: string): Promise<Json[]> {
  const all = (await json("/api/v1/bulk-exports?limit=1000")).body;
  return all
    .filter((e) => e.source_bulk_export_id === scheduleId)
    .sort((a, b) => Date.parse(String(a.start_time)) - Date.parse(String(b.start_time)));
}

/** Waits until `scheduleId` has spawned `count` exports. */
function waitForSpawned(scheduleId: string, count: number): Promise<Json[]> {
  return vi.waitFor(
    async () => {
      const found = await spawned(scheduleId);
      if (found.length < count) throw new Error(`${found.length} of ${count} windows spawned`);
      return found;
    },
    { timeout: 20_000, interval: 100 },
  );
}

/** Start and end of each export, in hours after BASE. */
const windows = (exports: Json[]) =>
  exports.map((e) => [
    (Date.parse(String(e.start_time)) - BASE.getTime()) / HOUR,
    (Date.parse(String(e.end_time)) - BASE.getTime()) / HOUR,
  ]);

beforeAll(async () => {
  s3 = await startS3Server({ buckets: [BUCKET] });
  first = await startTestApp({ bulkExport: settings }, { hooks: { clock } });
  t = first;
  const project = `scheduled-${randomUUID()}`;
  await sendTraces({ baseUrl: t.baseUrl, apiKey: t.adminKey }, project, [
    { start: new Date(BASE.getTime() + 1 * HOUR) },
    { start: new Date(BASE.getTime() + 7 * HOUR) },
  ]);
  projectId = String(((await json(`/api/v1/sessions?name=${project}`)).body[0] as Json).id);
  destinationId = await createS3Destination(t.fetch, s3, { bucket: BUCKET, prefix: "s" });
});

afterAll(async () => {
  await t?.stop();
  await first?.stop();
  await s3?.stop();
});

it("spawns each window 10 minutes after it ends, catches up after an outage, and stops when cancelled", async () => {
  const schedule = await createSchedule({
    start_time: BASE.toISOString(),
    interval_hours: 6,
    filter: 'eq(run_type, "llm")',
    export_fields: ["id", "start_time"],
  });
  expect(schedule).toMatchObject({ status: "IntervalScheduled", interval_hours: 6 });
  expect(schedule.end_time).toBeUndefined();
  const scheduleId = String(schedule.id);

  // 18:05: the windows ending at 06:00 and 12:00 are due, the one ending at 18:00 is not yet.
  let exports = await waitForSpawned(scheduleId, 2);
  expect(windows(exports)).toEqual([
    [0, 6],
    [6, 12],
  ]);
  clock.at = new Date(BASE.getTime() + 18 * HOUR + 10 * MINUTE);
  exports = await waitForSpawned(scheduleId, 3);
  expect(windows(exports)).toEqual([
    [0, 6],
    [6, 12],
    [12, 18],
  ]);
  for (const e of exports) {
    expect(e).toMatchObject({ filter: 'eq(run_type, "llm")', export_fields: ["id", "start_time"] });
    expect((await waitForExportStatus(t.fetch, String(e.id), ["Completed", "Failed"])).status).toBe(
      "Completed",
    );
  }

  // An outage of 30 hours: the server is down while five more windows come due.
  await first.app.stop();
  clock.at = new Date(BASE.getTime() + 48 * HOUR + 10 * MINUTE);
  t = await startTestApp(
    { databaseUrl: first.databaseUrl, bootstrapApiKey: first.adminKey, bulkExport: settings },
    { hooks: { clock } },
  );
  exports = await waitForSpawned(scheduleId, 8);
  expect(windows(exports)).toEqual(Array.from({ length: 8 }, (_, i) => [6 * i, 6 * i + 6]));

  // Cancelled: no more windows; the spawned exports carry on.
  const cancelled = await json(`/api/v1/bulk-exports/${scheduleId}`, {
    method: "PATCH",
    body: JSON.stringify({ status: "Cancelled" }),
  });
  expect(cancelled.body.status).toBe("Cancelled");
  clock.at = new Date(BASE.getTime() + 72 * HOUR + 10 * MINUTE);
  // A second schedule shows when a maintenance pass has run with the new time.
  const witness = await createSchedule({
    start_time: new Date(BASE.getTime() + 60 * HOUR).toISOString(),
    interval_hours: 1,
  });
  await waitForSpawned(String(witness.id), 1);
  expect(await spawned(scheduleId)).toHaveLength(8);
  for (const e of await spawned(scheduleId)) expect(e.status).not.toBe("Cancelled");
}, 60_000);

it("lists the runs of every export a schedule spawned, and only those", async () => {
  // Two 12-hour windows ended at least 10 minutes ago: exactly two exports are due.
  const start = new Date(clock.at.getTime() - 24 * HOUR - 10 * MINUTE);
  const schedule = await createSchedule({ start_time: start.toISOString(), interval_hours: 12 });
  const scheduleId = String(schedule.id);
  const exports = await waitForSpawned(scheduleId, 2);
  const one = await createSchedule({
    start_time: BASE.toISOString(),
    end_time: new Date(BASE.getTime() + 6 * HOUR).toISOString(),
  });

  const listed = await json(`/api/v1/bulk-exports/runs?source_bulk_export_id=${scheduleId}`);
  expect(listed.status).toBe(200);
  const expected: unknown[] = [];
  for (const e of exports) expected.push(...(await json(`/api/v1/bulk-exports/${e.id}/runs`)).body);
  const ids = (runs: unknown[]) => runs.map((r) => [(r as Json).bulk_export_id, (r as Json).id]);
  expect(ids(listed.body)).toEqual(ids(expected));
  expect(new Set(listed.body.map((r) => r.bulk_export_id))).toEqual(new Set(exports.map((e) => e.id)));

  // A one-off export spawned nothing; a missing or malformed id is the caller's to fix.
  expect((await json(`/api/v1/bulk-exports/runs?source_bulk_export_id=${one.id}`)).body).toEqual([]);
  const missing = await json("/api/v1/bulk-exports/runs");
  expect(missing.status).toBe(422);
  expect(missing.body.detail).toBe("source_bulk_export_id is required: the id of a scheduled bulk export");
  const unknown = await json(`/api/v1/bulk-exports/runs?source_bulk_export_id=${randomUUID()}`);
  expect(unknown.status).toBe(404);
  const { runs } = await t
    .client()
    .export.bulkExports.listScheduledExportRuns({ sourceBulkExportId: scheduleId });
  expect(runs.map((r) => r.id)).toEqual(listed.body.map((r) => r.id));
}, 60_000);
