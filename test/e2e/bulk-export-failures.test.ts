/**
 * How exports end when something goes wrong, through the REST API against a real S3 server: a
 * cancel in the middle of an upload, credentials revoked after the destination was created, and a
 * destination deleted during an export. Each ends in the seed's state without a retry.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { CreateMultipartUploadCommand, ListMultipartUploadsCommand } from "@aws-sdk/client-s3";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createS3Destination,
  listKeys,
  restJson,
  sendTraces,
  utcDay,
  waitForExportStatus,
} from "../support/bulk-export-fixtures.js";
import { type S3Server, startS3Server } from "../support/s3-server.js";
import { startTestApp, TEST_BULK_EXPORT_SETTINGS, type TestApp } from "../support/test-app.js";

const BUCKET = "failures";
let s3: S3Server;
let t: TestApp;
let sql: postgres.Sql;
let projectId: string;

type Json = Record<string, unknown>;

const json = (path: string, init: RequestInit = {}) => restJson(t.fetch, path, init);

function createDestination(credentials: { accessKeyId: string; secretAccessKey: string }, prefix: string) {
  return createS3Destination(t.fetch, s3, { bucket: BUCKET, prefix, credentials });
}

async function createExport(destinationId: string, sessionId = projectId): Promise<string> {
  const res = await json("/api/v1/bulk-exports", {
    method: "POST",
    body: JSON.stringify({
      bulk_export_destination_id: destinationId,
      session_id: sessionId,
      start_time: utcDay(2).toISOString(),
      end_time: utcDay(0).toISOString(),
    }),
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return String(res.body.id);
}

async function runsOf(exportId: string): Promise<Json[]> {
  return (await json(`/api/v1/bulk-exports/${exportId}/runs`)).body;
}

/** How long a stopped attempt may take to finish its job on a loaded machine. */
const JOB_SETTLE = { timeout: 15_000, interval: 100 };

/** The pg-boss jobs of an export's runs: how often each was retried and how it ended. */
async function queueJobs(exportId: string) {
  return sql<{ state: string; retry_count: number }[]>`
    select j.state, j.retry_count from pgboss.job as j
    join bulk_export_runs as r on r.id = (j.data ->> 'runId')::uuid
    where j.name = 'bulk-export.run' and r.bulk_export_id = ${exportId}`;
}

beforeAll(async () => {
  s3 = await startS3Server({ buckets: [BUCKET] });
  t = await startTestApp({
    bulkExport: {
      ...TEST_BULK_EXPORT_SETTINGS,
      // One row per file, many files: uploads to hold on to. Heartbeats every second.
      fileMaxRows: 1,
      leaseSeconds: 4,
      maintenanceIntervalSeconds: 1,
      retryDelaySeconds: 1,
    },
  });
  sql = postgres(t.databaseUrl, { max: 1, onnotice: () => {} });
  const project = `failures-${randomUUID()}`;
  await sendTraces({ baseUrl: t.baseUrl, apiKey: t.adminKey }, project, [
    { start: utcDay(2, 1) },
    { start: utcDay(2, 2) },
    { start: utcDay(1, 1) },
  ]);
  projectId = String(((await json(`/api/v1/sessions?name=${project}`)).body[0] as Json).id);
});

afterAll(async () => {
  await sql?.end();
  await t?.stop();
  await s3?.stop();
});

describe("cancel", () => {
  it("stops running partitions, aborting their uploads, and cancels the waiting ones", async () => {
    const destinationId = await createDestination(s3, "cancel");
    // Hold each partition's second file: both runs are then in the middle of their partition.
    const hold = s3.hold(
      (method, key) => method === "PUT" && key.startsWith("cancel/") && key.endsWith("-00001.parquet"),
    );
    const exportId = await createExport(destinationId);
    const held = await hold.held(2);
    const cancelled = await json(`/api/v1/bulk-exports/${exportId}`, {
      method: "PATCH",
      body: JSON.stringify({ status: "Cancelled" }),
    });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.status).toBe("Cancelled");
    // The attempts notice at their next heartbeat and give their uploads up.
    await Promise.all(held.map((h) => h.abandoned));
    hold.release();

    const runs = await runsOf(exportId);
    expect(runs.map((r) => r.status)).toEqual(["Cancelled", "Cancelled"]);
    for (const run of runs) {
      expect(run.retry_number).toBe(0);
      expect(run.errors).toEqual({});
    }
    // Both partitions ran at once (each held at its second file); each job ended once, not retried.
    await expect
      .poll(async () => (await queueJobs(exportId)).map((j) => `${j.state}/${j.retry_count}`), JOB_SETTLE)
      .toEqual(["completed/0", "completed/0"]);
    expect(
      (await listKeys(s3.client(), BUCKET, `cancel/export_id=${exportId}/`)).filter((k) =>
        k.endsWith("-00001.parquet"),
      ),
    ).toEqual([]);

    // Cancelling again changes nothing; nothing can restart it.
    const again = await json(`/api/v1/bulk-exports/${exportId}`, {
      method: "PATCH",
      body: JSON.stringify({ status: "Cancelled" }),
    });
    expect(again.body.status).toBe("Cancelled");
    const restart = await json(`/api/v1/bulk-exports/${exportId}`, {
      method: "PATCH",
      body: JSON.stringify({ status: "Running" }),
    });
    expect(restart.status).toBe(422);
    expect(restart.body.detail).toContain('status must be "Cancelled"');
  });

  it("answers 409 for an export that already finished", async () => {
    const exportId = await createExport(await createDestination(s3, "finished"));
    await waitForExportStatus(t.fetch, exportId, ["Completed"]);
    const res = await json(`/api/v1/bulk-exports/${exportId}`, {
      method: "PATCH",
      body: JSON.stringify({ status: "Cancelled" }),
    });
    expect(res.status).toBe(409);
    expect(res.body.detail).toBe(`bulk export ${exportId} is already Completed and cannot be cancelled`);
  });
});

/**
 * The export failed, and each of its runs either failed on its one attempt with `error` (both
 * partitions start at once, so both may meet the problem) or was stopped with the export; no job
 * was retried.
 */
async function expectFailedWithoutRetry(exportId: string, error: RegExp): Promise<void> {
  await waitForExportStatus(t.fetch, exportId, ["Failed"]);
  const runs = await runsOf(exportId);
  expect(runs.filter((r) => r.status === "Failed").length).toBeGreaterThan(0);
  for (const run of runs) {
    if (run.status === "Cancelled") continue;
    expect(run.status).toBe("Failed");
    expect(run.retry_number).toBe(1);
    expect(Object.keys(run.errors as Json)).toEqual(["retry_0"]);
    expect(String((run.errors as Json).retry_0)).toMatch(error);
  }
  await expect
    .poll(
      async () => (await queueJobs(exportId)).every((j) => j.state === "completed" && j.retry_count === 0),
      JOB_SETTLE,
    )
    .toBe(true);
}

describe("destination errors fail at once, without retries", () => {
  it("credentials revoked after the destination was created", async () => {
    const key = s3.addCredentials();
    const destinationId = await createDestination(key, "revoked");
    s3.revokeCredentials(key.accessKeyId);
    const exportId = await createExport(destinationId);
    await expectFailedWithoutRetry(exportId, /^Key ID you provided does not exist: /);
  });

  it("credentials sealed under another secret key", async () => {
    // A second server on the same database with a data directory, so a generated secret key, of its own.
    const other = await startTestApp({ databaseUrl: t.databaseUrl, bootstrapApiKey: t.adminKey });
    let destinationId: string;
    try {
      destinationId = await createS3Destination(other.fetch, s3, { bucket: BUCKET, prefix: "other-key" });
    } finally {
      await other.app.stop();
    }
    const exportId = await createExport(destinationId);
    await expectFailedWithoutRetry(
      exportId,
      /^Credentials cannot be decrypted: sealed secret was encrypted with another key: every process must use the same AGENTPLANE_SECRET_KEY; restore the key/,
    );
  });

  it("a destination deleted while its partitions are in the middle of multipart uploads", async () => {
    // One trace a day whose root carries 12 MiB of base64 (9 MiB of entropy, which zstd cannot
    // shrink): each partition's first file is a multipart upload of two parts (a part is 8 MiB).
    const project = `multipart-${randomUUID()}`;
    const padding = () => randomBytes(9 * 1024 * 1024).toString("base64");
    await sendTraces({ baseUrl: t.baseUrl, apiKey: t.adminKey }, project, [
      { start: utcDay(2, 1), padding: padding() },
      { start: utcDay(1, 1), padding: padding() },
    ]);
    const sessionId = String(((await json(`/api/v1/sessions?name=${project}`)).body[0] as Json).id);
    const destinationId = await createDestination(s3, "deleted-multipart");
    const uploads = async () =>
      (
        await s3
          .client()
          .send(new ListMultipartUploadsCommand({ Bucket: BUCKET, Prefix: "deleted-multipart/" }))
      ).Uploads ?? [];
    // Hold the parts of both partitions' first files: both uploads are open, a part in flight.
    const hold = s3.hold(
      (method, key) =>
        method === "PUT" && key.startsWith("deleted-multipart/") && key.endsWith("-00000.parquet"),
    );
    const exportId = await createExport(destinationId, sessionId);
    await hold.held(2);
    expect(await uploads()).toHaveLength(2);
    expect(
      (await json(`/api/v1/bulk-exports/destinations/${destinationId}`, { method: "DELETE" })).status,
    ).toBe(200);
    // Both stop at their next heartbeat, their parts still held by the store: each gives its part
    // up and aborts its upload.
    await expectFailedWithoutRetry(
      exportId,
      /^Destination was deleted: recreate the destination and create a new export$/,
    );
    await expect.poll(uploads, JOB_SETTLE).toEqual([]);
    hold.release();
    expect(await listKeys(s3.client(), BUCKET, "deleted-multipart/export_id=")).toEqual([]);
  });

  it("a file the bucket does not give back as it was written (the file check after upload)", async () => {
    const destinationId = await createDestination(s3, "corrupt");
    const restore = s3.corruptReads((key) => key.startsWith("corrupt/") && key.endsWith(".parquet"));
    try {
      const exportId = await createExport(destinationId);
      await expectFailedWithoutRetry(
        exportId,
        /^File check failed: corrupt\/export_id=[^ ]+\/runs-[0-9a-f-]+-00000\.parquet in the bucket is \d+ bytes with SHA-256 [0-9a-f]{64}; the export wrote \d+ bytes with SHA-256 [0-9a-f]{64}$/,
      );
      // A file that failed its check is never recorded as exported.
      for (const run of await runsOf(exportId))
        expect((run.metadata as { result: Json }).result.exported_files).toEqual([]);
    } finally {
      restore();
    }
  });

  it("skips the file check where the credentials may not read (s3:GetObject is optional)", async () => {
    const allow = s3.deny((method, key) => method === "GET" && key.startsWith("unreadable/"));
    try {
      const from = s3.requests().length;
      const exportId = await createExport(await createDestination(s3, "unreadable"));
      await waitForExportStatus(t.fetch, exportId, ["Completed"]);
      const files = (await runsOf(exportId)).flatMap(
        (run) => (run.metadata as { result: { exported_files: string[] } }).result.exported_files,
      );
      // One row per file: the three traces' six runs.
      expect(files).toHaveLength(6);
      // Each partition tried to read its first file back, was refused, and read nothing more.
      const reads = s3
        .requests()
        .slice(from)
        .filter((r) => r.method === "GET" && r.key.startsWith(`unreadable/export_id=${exportId}/`));
      expect(reads.map((r) => r.key).sort()).toEqual(
        files.filter((f) => f.endsWith("-00000.parquet")).sort(),
      );
    } finally {
      allow();
    }
  });

  it("a destination deleted during the export", async () => {
    const destinationId = await createDestination(s3, "deleted");
    const hold = s3.hold(
      (method, key) => method === "PUT" && key.startsWith("deleted/") && key.endsWith("-00001.parquet"),
    );
    const exportId = await createExport(destinationId);
    const held = await hold.held(2);
    expect(
      (await json(`/api/v1/bulk-exports/destinations/${destinationId}`, { method: "DELETE" })).status,
    ).toBe(200);
    await Promise.all(held.map((h) => h.abandoned));
    hold.release();
    await expectFailedWithoutRetry(
      exportId,
      /^Destination was deleted: recreate the destination and create a new export$/,
    );
    expect((await json(`/api/v1/bulk-exports/destinations/${destinationId}`)).status).toBe(404);
    // A new export cannot name it.
    const refused = await json("/api/v1/bulk-exports", {
      method: "POST",
      body: JSON.stringify({
        bulk_export_destination_id: destinationId,
        session_id: projectId,
        start_time: utcDay(2).toISOString(),
        end_time: utcDay(1).toISOString(),
      }),
    });
    expect(refused.status).toBe(404);
  });
});

describe("other errors", () => {
  it("are retried after the delay, each attempt's error kept, and the run resumes", async () => {
    const destinationId = await createDestination(s3, "flaky");
    // The SDK tries each request three times: four failed uploads of the second file of one
    // partition fail that run's first attempt (and the first try of its second).
    const day = utcDay(2);
    const folder = `/month=${day.getUTCMonth() + 1}/day=${day.getUTCDate()}/`;
    s3.failNext(
      (method, key) =>
        method === "PUT" &&
        key.startsWith("flaky/") &&
        key.includes(folder) &&
        key.endsWith("-00001.parquet"),
      4,
    );
    const exportId = await createExport(destinationId);
    expect((await waitForExportStatus(t.fetch, exportId, ["Completed", "Failed"])).status).toBe("Completed");
    const runs = await runsOf(exportId);
    const retried = runs.filter((r) => r.retry_number === 1);
    expect(retried).toHaveLength(1);
    const run = retried[0] as Json;
    expect(Object.keys(run.errors as Json)).toEqual(["retry_0"]);
    expect(String((run.errors as Json).retry_0)).toMatch(/^InternalError: /);
    // Resumed from its checkpoint: its first file was written once, and it has every row.
    const files = (run.metadata as { result: { exported_files: string[] } }).result.exported_files;
    expect(files.map((k) => k.slice(-14))).toEqual(files.map((_, i) => `-0000${i}.parquet`));
    expect(run.rows_exported).toBe(files.length);
  });

  it("are followed, on retry, by aborting what the failed attempt left unfinished in the bucket", async () => {
    const destinationId = await createDestination(s3, "dangling");
    // The second file of day 2's partition is held; meanwhile a multipart upload of the same key
    // is left unfinished, as an attempt that died mid-file leaves it.
    const hold = s3.hold(
      (method, key) => method === "PUT" && key.startsWith("dangling/") && key.endsWith("-00001.parquet"),
    );
    const exportId = await createExport(destinationId);
    const [held] = await hold.held(1);
    const key = String(held?.key);
    const client = s3.client();
    // (Started only: a part sent now would be held too.)
    await client.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: key }));
    expect(
      (await client.send(new ListMultipartUploadsCommand({ Bucket: BUCKET, Prefix: "dangling/" }))).Uploads,
    ).toHaveLength(1);
    // Its manifest fails all three tries of the SDK: the attempt fails and the run is retried.
    const runId = /runs-([0-9a-f-]{36})-00001\.parquet$/.exec(key)?.[1];
    s3.failNext((method, k) => method === "PUT" && k.endsWith(`/_manifest-${runId}.json`), 3);
    hold.release();
    expect((await waitForExportStatus(t.fetch, exportId, ["Completed", "Failed"])).status).toBe("Completed");
    expect((await runsOf(exportId)).find((r) => r.id === runId)?.retry_number).toBe(1);
    const unfinished = await client.send(
      new ListMultipartUploadsCommand({ Bucket: BUCKET, Prefix: "dangling/" }),
    );
    expect(unfinished.Uploads ?? []).toEqual([]);
  });
});
