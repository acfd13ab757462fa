/**
 * The export time limit, through the REST API against a real S3 server: an export that runs past
 * it ends TimedOut with its runs, and nothing retries them. The server is alone on its database:
 * the limit is read by whichever process runs the maintenance pass, so every process of a
 * deployment must share `AGENTPLANE_EXPORT_TIMEOUT_SECONDS` (as with every other setting).
 */
import { randomUUID } from "node:crypto";
import postgres from "postgres";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  createS3Destination,
  restJson,
  sendTraces,
  utcDay,
  waitForExportStatus,
} from "../support/bulk-export-fixtures.js";
import { type S3Server, startS3Server } from "../support/s3-server.js";
import { startTestApp, TEST_BULK_EXPORT_SETTINGS, type TestApp } from "../support/test-app.js";

const BUCKET = "time-limit";
/** How long a stopped attempt may take to finish its job on a loaded machine. */
const JOB_SETTLE = { timeout: 15_000, interval: 100 };

let s3: S3Server;
let t: TestApp;
let sql: postgres.Sql;
let projectId: string;

beforeAll(async () => {
  s3 = await startS3Server({ buckets: [BUCKET] });
  t = await startTestApp({
    bulkExport: {
      ...TEST_BULK_EXPORT_SETTINGS,
      // Exports may take one second; maintenance looks every second.
      exportTimeoutSeconds: 1,
      leaseSeconds: 4,
      maintenanceIntervalSeconds: 1,
    },
  });
  sql = postgres(t.databaseUrl, { max: 1, onnotice: () => {} });
  const project = `time-limit-${randomUUID()}`;
  await sendTraces({ baseUrl: t.baseUrl, apiKey: t.adminKey }, project, [
    { start: utcDay(2, 1) },
    { start: utcDay(1, 1) },
  ]);
  projectId = String(
    ((await restJson(t.fetch, `/api/v1/sessions?name=${project}`)).body[0] as { id: string }).id,
  );
});

afterAll(async () => {
  await sql?.end();
  await t?.stop();
  await s3?.stop();
});

it("ends an export that runs past it TimedOut, its runs too, without retries", {
  timeout: 60_000,
}, async () => {
  const destinationId = await createS3Destination(t.fetch, s3, {
    bucket: BUCKET,
    prefix: "timeout",
    credentials: s3,
  });
  const hold = s3.hold((method, key) => method === "PUT" && key.startsWith("timeout/"));
  // Uploads are held, so the export cannot finish before its time limit ends it.
  const created = await restJson(t.fetch, "/api/v1/bulk-exports", {
    method: "POST",
    body: JSON.stringify({
      bulk_export_destination_id: destinationId,
      session_id: projectId,
      start_time: utcDay(2).toISOString(),
      end_time: utcDay(0).toISOString(),
    }),
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const exportId = String(created.body.id);
  await waitForExportStatus(t.fetch, exportId, ["TimedOut"]);
  hold.release();
  const runs = (await restJson(t.fetch, `/api/v1/bulk-exports/${exportId}/runs`)).body;
  expect(runs.map((r) => r.status)).toEqual(["TimedOut", "TimedOut"]);
  // Nothing restarts them: every job of the export ends, none retried.
  const queueJobs = () => sql<{ state: string; retry_count: number }[]>`
    select j.state, j.retry_count from pgboss.job as j
    join bulk_export_runs as r on r.id = (j.data ->> 'runId')::uuid
    where j.name = 'bulk-export.run' and r.bulk_export_id = ${exportId}`;
  await expect
    .poll(
      async () =>
        (await queueJobs()).map((j) => `${j.state}/${j.retry_count}`).filter((j) => j !== "completed/0"),
      JOB_SETTLE,
    )
    .toEqual([]);
  expect((await queueJobs()).length).toBeGreaterThanOrEqual(2);
});
