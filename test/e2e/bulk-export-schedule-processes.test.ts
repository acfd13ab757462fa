/**
 * A scheduled export served by two server processes on one database (two apps on one Postgres, both
 * running maintenance passes every second and working the export queue, with one injected clock):
 * every window that comes due is spawned once, not once per process, and exported once: one run,
 * one manifest, and its rows in the bucket once.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import type { Clock } from "../../server/clock.js";
import {
  createS3Destination,
  downloadPrefix,
  restJson,
  sendTraces,
  utcDay,
  waitForExportStatus,
} from "../support/bulk-export-fixtures.js";
import { type S3Server, startS3Server } from "../support/s3-server.js";
import { startTestApp, TEST_BULK_EXPORT_SETTINGS, type TestApp } from "../support/test-app.js";

const BUCKET = "two-processes";
const HOUR = 60 * 60 * 1000;
const MINUTE = 60 * 1000;
/** Midnight two days ago: the schedule's start. */
const BASE = utcDay(2);
/** Traces sent, one an hour from BASE on: every hourly window due in the test holds one. */
const TRACES = 8;
/** Runs per trace that sendTraces sends (a root and a child). */
const RUNS_PER_TRACE = 2;
const settings = { ...TEST_BULK_EXPORT_SETTINGS, maintenanceIntervalSeconds: 1 };
/** One AGENTPLANE_SECRET_KEY for both processes, as a deployment has: either opens the credentials. */
const secretKey = randomBytes(32).toString("hex");

/** The clock both processes read: before BASE's first window ends, so nothing is due yet. */
const clock: Clock & { at: Date } = { at: new Date(BASE.getTime() + 30 * MINUTE), now: () => clock.at };
let s3: S3Server;
let one: TestApp;
let two: TestApp;
let destinationId: string;
let projectId: string;

type Json = Record<string, unknown>;

const json = (app: TestApp, path: string, init: RequestInit = {}) => restJson(app.fetch, path, init);

/** The exports `scheduleId` spawned, oldest window first, as process `app` lists them. */
async function spawned(app: TestApp, scheduleId: string): Promise<Json[]> {
  const all = (await json(app, "/api/v1/bulk-exports?limit=1000")).body;
  return all
    .filter((e) => e.source_bulk_export_id === scheduleId)
    .sort((a, b) => Date.parse(String(a.start_time)) - Date.parse(String(b.start_time)));
}

/** Start and end of each export, in hours after BASE. */
const windows = (exports: Json[]) =>
  exports.map((e) => [
    (Date.parse(String(e.start_time)) - BASE.getTime()) / HOUR,
    (Date.parse(String(e.end_time)) - BASE.getTime()) / HOUR,
  ]);

/**
 * Waits until maintenance passes have run at the clock's time: two witnesses, one-hour schedules
 * created one after the other (through each process), each with one window due. The second is
 * created once the first was spawned, so the pass that spawned it saw the new time and started
 * after the one that spawned the first: by then the due windows of the schedule under test have been
 * through at least two passes of either process (both run one a second, so they overlap).
 */
async function afterMaintenancePasses(): Promise<void> {
  for (const app of [one, two]) {
    const res = await json(app, "/api/v1/bulk-exports", {
      method: "POST",
      body: JSON.stringify({
        bulk_export_destination_id: destinationId,
        session_id: projectId,
        start_time: new Date(clock.at.getTime() - HOUR - 20 * MINUTE).toISOString(),
        interval_hours: 1,
      }),
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    await vi.waitFor(
      async () => {
        if ((await spawned(app, String(res.body.id))).length === 0) throw new Error("witness not spawned");
      },
      { timeout: 20_000, interval: 100 },
    );
  }
}

beforeAll(async () => {
  s3 = await startS3Server({ buckets: [BUCKET] });
  one = await startTestApp({ bulkExport: settings, secretKey }, { hooks: { clock } });
  two = await startTestApp(
    { databaseUrl: one.databaseUrl, bootstrapApiKey: one.adminKey, bulkExport: settings, secretKey },
    { hooks: { clock } },
  );
  const project = `two-processes-${randomUUID()}`;
  await sendTraces(
    { baseUrl: one.baseUrl, apiKey: one.adminKey },
    project,
    Array.from({ length: TRACES }, (_, i) => ({ start: new Date(BASE.getTime() + i * HOUR + 5 * MINUTE) })),
  );
  projectId = String(((await json(one, `/api/v1/sessions?name=${project}`)).body[0] as Json).id);
  destinationId = await createS3Destination(one.fetch, s3, { bucket: BUCKET, prefix: "s" });
});

afterAll(async () => {
  await two?.stop();
  await one?.stop();
  await s3?.stop();
});

it("spawns and exports each due window once when two processes run the schedule", async () => {
  const created = await json(one, "/api/v1/bulk-exports", {
    method: "POST",
    body: JSON.stringify({
      bulk_export_destination_id: destinationId,
      session_id: projectId,
      start_time: BASE.toISOString(),
      interval_hours: 1,
      export_fields: ["id", "start_time"],
    }),
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const scheduleId = String(created.body.id);

  // Six windows come due at once, for both processes' passes; later two more.
  for (const [at, due] of [
    [6, 6],
    [8, 8],
  ] as const) {
    clock.at = new Date(BASE.getTime() + at * HOUR + 10 * MINUTE);
    await afterMaintenancePasses();
    for (const app of [one, two]) {
      expect(windows(await spawned(app, scheduleId))).toEqual(
        Array.from({ length: due }, (_, i) => [i, i + 1]),
      );
    }
  }

  const exports = await spawned(two, scheduleId);
  for (const e of exports) {
    const id = String(e.id);
    const status = (await waitForExportStatus(one.fetch, id, ["Completed", "Failed"])).status;
    const runs = (await json(two, `/api/v1/bulk-exports/${id}/runs`)).body;
    expect(status, JSON.stringify(runs)).toBe("Completed");
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ status: "Completed", rows_exported: RUNS_PER_TRACE });
    const { objects } = await downloadPrefix(s3, BUCKET, `s/export_id=${id}/`);
    const manifests = objects.filter((o) => /\/_manifest-[^/]+\.json$/.test(o.key));
    expect(manifests).toHaveLength(1);
    const manifest = JSON.parse(String(manifests[0]?.bytes)) as {
      row_count: number;
      files: { key: string }[];
    };
    expect(manifest.row_count).toBe(RUNS_PER_TRACE);
    // Nothing in the bucket but the manifest and the files it names: no second attempt's leftovers.
    expect(objects.map((o) => o.key).sort()).toEqual(
      [String(manifests[0]?.key), ...manifest.files.map((f) => f.key)].sort(),
    );
  }
}, 120_000);
