/**
 * Concurrency limits (runs per export, exports per workspace: further work waits) and a
 * destination without credentials, which uses the server's AWS environment credential chain.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createS3Destination,
  restJson,
  sendTraces,
  utcDay,
  waitForExportStatus,
} from "../support/bulk-export-fixtures.js";
import { type S3Server, startS3Server } from "../support/s3-server.js";
import { startTestApp, TEST_BULK_EXPORT_SETTINGS, type TestApp } from "../support/test-app.js";

const BUCKET = "limits";
let s3: S3Server;
let t: TestApp;
let projectId: string;
let destinationId: string;

type Json = Record<string, unknown>;

const json = (path: string, init: RequestInit = {}) => restJson(t.fetch, path, init);

async function createExport(destination: string): Promise<string> {
  const res = await json("/api/v1/bulk-exports", {
    method: "POST",
    body: JSON.stringify({
      bulk_export_destination_id: destination,
      session_id: projectId,
      start_time: utcDay(3).toISOString(),
      end_time: utcDay(1).toISOString(),
    }),
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return String(res.body.id);
}

const statuses = async (exportId: string) =>
  ((await json(`/api/v1/bulk-exports/${exportId}/runs`)).body as Json[]).map((r) => r.status);

beforeAll(async () => {
  s3 = await startS3Server({ buckets: [BUCKET] });
  t = await startTestApp({
    bulkExport: {
      ...TEST_BULK_EXPORT_SETTINGS,
      maxConcurrentRunsPerExport: 1,
      maxConcurrentExportsPerWorkspace: 1,
      maintenanceIntervalSeconds: 1,
    },
  });
  const project = `limits-${randomUUID()}`;
  await sendTraces({ baseUrl: t.baseUrl, apiKey: t.adminKey }, project, [
    { start: utcDay(3, 1) },
    { start: utcDay(2, 1) },
  ]);
  projectId = String(((await json(`/api/v1/sessions?name=${project}`)).body[0] as Json).id);
  destinationId = await createS3Destination(t.fetch, s3, { bucket: BUCKET, prefix: "limits" });
});

afterAll(async () => {
  await t?.stop();
  await s3?.stop();
});

describe("concurrency limits", () => {
  it("runs one partition of one export at a time when the limits are 1; the rest waits", async () => {
    const hold = s3.hold(
      (method, key) => method === "PUT" && key.startsWith("limits/") && key.endsWith(".parquet"),
    );
    const first = await createExport(destinationId);
    const second = await createExport(destinationId);
    await hold.held(1);
    expect(await statuses(first)).toEqual(["Running", "Created"]);
    expect(await statuses(second)).toEqual(["Created", "Created"]);
    expect((await json(`/api/v1/bulk-exports/${second}`)).body.status).toBe("Created");
    hold.release();
    for (const id of [first, second]) {
      expect((await waitForExportStatus(t.fetch, id, ["Completed", "Failed"])).status).toBe("Completed");
      expect(await statuses(id)).toEqual(["Completed", "Completed"]);
    }
  });
});

describe("a destination without credentials", () => {
  const saved = { ...process.env };
  afterAll(() => {
    for (const name of ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_EC2_METADATA_DISABLED"]) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
  });

  it("uses the AWS environment credential chain of the server", async () => {
    // The SDK's chain reads these (this test's server runs in this process). Instance metadata
    // is switched off so nothing is asked of any other host.
    process.env.AWS_ACCESS_KEY_ID = s3.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = s3.secretAccessKey;
    process.env.AWS_EC2_METADATA_DISABLED = "true";
    const created = await json("/api/v1/bulk-exports/destinations", {
      method: "POST",
      body: JSON.stringify({
        display_name: "environment",
        config: { bucket_name: BUCKET, prefix: "env", endpoint_url: s3.endpoint },
      }),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body.credentials_keys).toEqual([]);
    const exportId = await createExport(String(created.body.id));
    expect((await waitForExportStatus(t.fetch, exportId, ["Completed", "Failed"])).status).toBe("Completed");
    const runs = (await json(`/api/v1/bulk-exports/${exportId}/runs`)).body as unknown as {
      metadata: { result: { exported_files: string[] } };
    }[];
    expect(
      runs.flatMap((r) => r.metadata.result.exported_files).every((k) => k.startsWith("env/export_id=")),
    ).toBe(true);
  });
});
