/**
 * Bulk export end to end: traces sent by the official `langsmith` SDK, a destination in an
 * in-process S3 server that checks SigV4 signatures, exports created over REST, and every file read
 * back with DuckDB: row counts per day, column types, filter and export_fields, layout and manifest.
 */
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  downloadPrefix,
  duckdb,
  restJson,
  type SentTrace,
  sendTraces,
  utcDay,
  waitForExportStatus,
} from "../support/bulk-export-fixtures.js";
import { type S3Server, startS3Server } from "../support/s3-server.js";
import { startTestApp, TEST_BULK_EXPORT_SETTINGS, type TestApp } from "../support/test-app.js";

/** A tag with what list and JSON encodings must escape, and text beyond ASCII. */
const AWKWARD_TAG = 'a "quoted", {braced} tag \\ NULL ✓ 测试';
const BUCKET = "exports";
let s3: S3Server;
let t: TestApp;
let workspaceId: string;
let projectId: string;
let destinationId: string;
let sent: SentTrace[];

/** Traces per day: 2 days ago (one before the export's start hour), yesterday, today (after the end). */
const DAY2 = [utcDay(2, 3), utcDay(2, 10), utcDay(2, 11), utcDay(2, 23)];
const DAY1 = [utcDay(1, 0), utcDay(1, 5), utcDay(1, 6)];
/** The export range: 2 days ago 06:00 to yesterday 06:00 (exclusive), so both partitions are partial. */
const RANGE = { start: utcDay(2, 6), end: utcDay(1, 6) };

const json = (path: string, init: RequestInit = {}) => restJson(t.fetch, path, init);

beforeAll(async () => {
  s3 = await startS3Server({ buckets: [BUCKET] });
  t = await startTestApp({
    // Three rows per file, so every partition has several files; quick maintenance passes.
    bulkExport: { ...TEST_BULK_EXPORT_SETTINGS, fileMaxRows: 3, maintenanceIntervalSeconds: 1 },
  });
  workspaceId = (await t.client().iam.workspaces.getCurrentWorkspace({})).id;
  const project = `export-${randomUUID()}`;
  sent = await sendTraces({ baseUrl: t.baseUrl, apiKey: t.adminKey }, project, [
    ...DAY2.map((start, i) => ({
      start,
      tags: [`t${i}`, "day2", ...(i === 1 ? [AWKWARD_TAG] : [])],
      ...(i === 1 ? { error: "boom" } : {}),
    })),
    ...DAY1.map((start) => ({ start, tags: ["day1"] })),
  ]);
  // Another project's traces in the same range must not leak into the export.
  await sendTraces({ baseUrl: t.baseUrl, apiKey: t.adminKey }, `other-${randomUUID()}`, [
    { start: utcDay(2, 12) },
  ]);
  const projects = await json(`/api/v1/sessions?name=${project}`);
  projectId = String((projects.body[0] as { id: string }).id);
  const created = await json("/api/v1/bulk-exports/destinations", {
    method: "POST",
    body: JSON.stringify({
      destination_type: "s3",
      display_name: "test bucket",
      config: { bucket_name: BUCKET, prefix: "traces/prod", endpoint_url: s3.endpoint, region: s3.region },
      credentials: { access_key_id: s3.accessKeyId, secret_access_key: s3.secretAccessKey },
    }),
  });
  expect(created.status).toBe(200);
  destinationId = String(created.body.id);
});

afterAll(async () => {
  await t?.stop();
  await s3?.stop();
});

/** Rows the source has in the export range: two runs per trace whose root starts in it. */
function expectedPerDay(): Map<number, number> {
  const perDay = new Map<number, number>();
  for (const trace of sent) {
    if (trace.start < RANGE.start || trace.start >= RANGE.end) continue;
    const day = trace.start.getUTCDate();
    perDay.set(day, (perDay.get(day) ?? 0) + 2);
  }
  return perDay;
}

async function createExport(body: Record<string, unknown>) {
  const created = await json("/api/v1/bulk-exports", {
    method: "POST",
    body: JSON.stringify({
      bulk_export_destination_id: destinationId,
      session_id: projectId,
      start_time: RANGE.start.toISOString(),
      end_time: RANGE.end.toISOString(),
      format_version: "v2_beta",
      ...body,
    }),
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  return created.body;
}

describe("destinations", () => {
  it("shows the destination without credential values", async () => {
    const got = await json(`/api/v1/bulk-exports/destinations/${destinationId}`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({
      id: destinationId,
      tenant_id: workspaceId,
      destination_type: "s3",
      display_name: "test bucket",
      config: {
        bucket_name: BUCKET,
        prefix: "traces/prod",
        endpoint_url: s3.endpoint,
        include_bucket_in_prefix: false,
      },
      credentials_keys: ["access_key_id", "secret_access_key"],
    });
    expect(JSON.stringify(got.body)).not.toContain(s3.secretAccessKey);
    const list = await json("/api/v1/bulk-exports/destinations");
    expect(list.body.map((d) => (d as { id: string }).id)).toContain(destinationId);
  });
});

describe("a one-off export", () => {
  let exportId: string;
  let runs: Record<string, unknown>[];

  beforeAll(async () => {
    const created = await createExport({});
    exportId = String(created.id);
    expect(created).toMatchObject({
      status: "Created",
      format: "Parquet",
      format_version: "v2_beta",
      export_fields: [],
      // A one-off export: no schedule spawned it, and the key says so rather than being left out.
      source_bulk_export_id: null,
    });
    const done = await waitForExportStatus(t.fetch, exportId, ["Completed", "Failed"]);
    expect(done.status).toBe("Completed");
    expect(done.source_bulk_export_id).toBeNull();
    runs = (await json(`/api/v1/bulk-exports/${exportId}/runs`)).body as unknown as Record<string, unknown>[];
  });

  it("has one completed run per UTC day, the first and last partial", async () => {
    const ms = (value: unknown) => new Date(String(value)).toISOString();
    expect(runs.map((r) => [r.status, ms(r.start_time), ms(r.end_time)])).toEqual([
      ["Completed", RANGE.start.toISOString(), utcDay(1).toISOString()],
      ["Completed", utcDay(1).toISOString(), RANGE.end.toISOString()],
    ]);
    for (const run of runs) expect(run.errors).toEqual({});
  });

  it("writes each day's rows exactly once, readable by DuckDB with v2_beta types", async () => {
    const { dir, objects } = await downloadPrefix(s3, BUCKET, `traces/prod/export_id=${exportId}/`);
    const parquet = objects.filter((o) => o.key.endsWith(".parquet"));
    // Three rows per file at most: day 2 has 3 traces (6 rows, 2 files), day 1 has 2 (4 rows, 2 files).
    expect([...expectedPerDay().values()]).toEqual([6, 4]);
    expect(parquet).toHaveLength(4);
    for (const o of objects) {
      expect(o.key).toMatch(
        new RegExp(
          `^traces/prod/export_id=${exportId}/tenant_id=${workspaceId}/session_id=${projectId}/runs/year=\\d{4}/month=\\d{1,2}/day=\\d{1,2}/(runs-[0-9a-f-]{36}-\\d{5}\\.parquet|_manifest-[0-9a-f-]{36}\\.json)$`,
        ),
      );
    }
    const glob = join(dir, "**", "*.parquet");
    const perDay = await duckdb(
      `select day, count(*)::int as n, count(distinct id)::int as ids from read_parquet('${glob}', hive_partitioning = true) group by day order by day`,
    );
    expect(new Map(perDay.map((r) => [Number(r.day), r.n]))).toEqual(expectedPerDay());
    for (const row of perDay) expect(row.ids).toBe(row.n);

    const types = await duckdb(
      `select column_name, column_type from (describe select * from read_parquet('${parquet[0]?.path}', hive_partitioning = false))`,
    );
    // In this order (docs/bulk-export.md lists it): the columns of every file, with their types.
    expect(types.map((r) => [r.column_name, r.column_type])).toEqual([
      ["id", "VARCHAR"],
      ["tenant_id", "VARCHAR"],
      ["session_id", "VARCHAR"],
      ["trace_id", "VARCHAR"],
      ["parent_run_id", "VARCHAR"],
      ["parent_run_ids", "VARCHAR[]"],
      ["reference_example_id", "VARCHAR"],
      ["name", "VARCHAR"],
      ["run_type", "VARCHAR"],
      ["start_time", "TIMESTAMP WITH TIME ZONE"],
      ["end_time", "TIMESTAMP WITH TIME ZONE"],
      ["status", "VARCHAR"],
      ["is_root", "BOOLEAN"],
      ["dotted_order", "VARCHAR"],
      ["trace_tier", "VARCHAR"],
      ["inputs", "VARCHAR"],
      ["outputs", "VARCHAR"],
      ["error", "VARCHAR"],
      ["extra", "VARCHAR"],
      ["events", "VARCHAR"],
      ["tags", "VARCHAR[]"],
      ["feedback_stats", "VARCHAR"],
      ["total_tokens", "BIGINT"],
      ["prompt_tokens", "BIGINT"],
      ["completion_tokens", "BIGINT"],
      ["total_cost", "DOUBLE"],
      ["prompt_cost", "DOUBLE"],
      ["completion_cost", "DOUBLE"],
      ["first_token_time", "TIMESTAMP WITH TIME ZONE"],
    ]);

    // Values survive the trip: the failed child of the second trace, its tokens, JSON and lists.
    const trace = sent[1] as SentTrace;
    const [child] = await duckdb(
      `select id, tenant_id, session_id, trace_id, parent_run_ids, status, error, is_root, tags, total_tokens,
              json_extract(inputs, '$.prompt')::varchar as prompt, epoch_us(start_time) as start_us,
              json_extract_string(outputs, '$.text') as text
       from read_parquet('${glob}') where id = '${trace.childId}'`,
    );
    expect(child).toMatchObject({
      id: trace.childId,
      tenant_id: workspaceId,
      session_id: projectId,
      trace_id: trace.rootId,
      parent_run_ids: [trace.rootId],
      status: "error",
      error: "boom",
      is_root: false,
      tags: ["t1", "day2", AWKWARD_TAG],
      total_tokens: "13",
      prompt: '"p1"',
      text: "answer 1",
    });
    // Microsecond timestamps, exactly as stored (the SDK adds microseconds of its own).
    const stored = String((await json(`/api/v1/runs/${trace.childId}`)).body.start_time);
    const [, whole, fraction] = /^(.*)\.(\d{6})Z$/.exec(stored) ?? [];
    expect(BigInt(String(child?.start_us))).toBe(
      BigInt(Date.parse(`${whole}Z`)) * 1000n + BigInt(fraction ?? "x"),
    );
  });

  it("lists progress and writes a manifest that matches the files", async () => {
    const { objects } = await downloadPrefix(s3, BUCKET, `traces/prod/export_id=${exportId}/`);
    const byKey = new Map(objects.map((o) => [o.key, o]));
    for (const run of runs) {
      const result = (run.metadata as { result: Record<string, unknown> }).result;
      const files = result.files as { key: string; rows: number; bytes: number; sha256: string }[];
      expect(result.exported_files).toEqual(files.map((f) => f.key));
      expect(run.rows_exported).toBe(files.reduce((n, f) => n + f.rows, 0));
      expect(result.latest_cursor).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z\/[0-9a-f-]{36}$/);
      const manifest = JSON.parse(String(byKey.get(String(result.manifest_path))?.bytes)) as {
        row_count: number;
        files: { key: string; rows: number; bytes: number; sha256: string }[];
        schema: { name: string; logical_type: string }[];
      };
      expect(manifest.row_count).toBe(run.rows_exported);
      expect(manifest.files).toEqual(files);
      for (const f of manifest.files) {
        const object = byKey.get(f.key);
        expect(object?.bytes.length).toBe(f.bytes);
        expect(object?.sha256).toBe(f.sha256);
        const [count] = await duckdb(`select count(*)::int as n from read_parquet('${object?.path}')`);
        expect(count?.n).toBe(f.rows);
      }
      expect(manifest.schema.map((c) => c.name)).toContain("inputs");
      expect(manifest.schema.find((c) => c.name === "start_time")?.logical_type).toBe(
        "TIMESTAMP(MICROS, UTC)",
      );
    }
  });
});

describe("filter and export_fields", () => {
  it("exports only the matching runs and only the named columns", async () => {
    const created = await createExport({
      filter: 'and(eq(run_type, "llm"), has(tags, "day2"))',
      export_fields: ["id", "name", "start_time", "total_tokens", "tags"],
    });
    expect(created.export_fields).toEqual(["id", "name", "start_time", "total_tokens", "tags"]);
    const exportId = String(created.id);
    expect((await waitForExportStatus(t.fetch, exportId, ["Completed", "Failed"])).status).toBe("Completed");
    const { dir } = await downloadPrefix(s3, BUCKET, `traces/prod/export_id=${exportId}/`);
    const rows = await duckdb(
      `select * exclude (export_id, tenant_id, session_id, year, month, day) from read_parquet('${join(dir, "**", "*.parquet")}', hive_partitioning = true) order by start_time`,
    );
    const expected = sent.filter(
      (s) => s.start >= RANGE.start && s.start < RANGE.end && DAY2.includes(s.start),
    );
    expect(rows.map((r) => r.id)).toEqual(expected.map((s) => s.childId));
    for (const row of rows) {
      expect(Object.keys(row)).toEqual(["id", "name", "start_time", "total_tokens", "tags"]);
      expect(row.name).toBe("fake-llm");
    }
  });
});

describe("include_bucket_in_prefix", () => {
  it("puts the bucket name in front of every key", async () => {
    const destination = await json("/api/v1/bulk-exports/destinations", {
      method: "POST",
      body: JSON.stringify({
        display_name: "legacy layout",
        config: {
          bucket_name: BUCKET,
          prefix: "",
          endpoint_url: s3.endpoint,
          include_bucket_in_prefix: true,
        },
        credentials: { access_key_id: s3.accessKeyId, secret_access_key: s3.secretAccessKey },
      }),
    });
    expect(destination.status).toBe(200);
    const created = await createExport({
      bulk_export_destination_id: destination.body.id,
      export_fields: ["id"],
    });
    const exportId = String(created.id);
    expect((await waitForExportStatus(t.fetch, exportId, ["Completed", "Failed"])).status).toBe("Completed");
    const { objects } = await downloadPrefix(s3, BUCKET, `${BUCKET}/export_id=${exportId}/`);
    expect(objects.filter((o) => o.key.endsWith(".parquet")).length).toBeGreaterThan(0);
    const runs = (await json(`/api/v1/bulk-exports/${exportId}/runs`)).body as unknown as {
      metadata: { result: { exported_files: string[] } };
    }[];
    for (const key of runs.flatMap((r) => r.metadata.result.exported_files))
      expect(key.startsWith(`${BUCKET}/export_id=`)).toBe(true);
  });
});

describe("the same RPCs on every protocol", () => {
  it("reads exports with the SDK over Connect and gRPC-Web, and with buf curl over gRPC", async () => {
    const rest = (await json("/api/v1/bulk-exports")).body as unknown as { id: string; status: string }[];
    expect(rest.length).toBeGreaterThan(0);
    for (const protocol of ["connect", "connect-binary", "grpc-web"] as const) {
      const { bulkExports } = await t.client({ protocol }).export.bulkExports.listBulkExports({});
      expect(
        bulkExports.map((e) => [e.id, e.status]),
        protocol,
      ).toEqual(rest.map((e) => [e.id, e.status]));
      const [first] = bulkExports;
      const { runs } = await t
        .client({ protocol })
        .export.bulkExports.listBulkExportRuns({ bulkExportId: first?.id ?? "" });
      expect(runs.every((r) => r.bulkExportId === first?.id)).toBe(true);
    }
    const { stdout } = await promisify(execFile)(
      "node_modules/.bin/buf",
      [
        "curl",
        "--protocol",
        "grpc",
        "-H",
        `x-api-key: ${t.adminKey}`,
        "-d",
        JSON.stringify({ destinationId }),
        `${t.baseUrl}/agentplane.export.v1.BulkExportService/GetDestination`,
      ],
      { timeout: 20_000 },
    );
    const destination = JSON.parse(stdout) as {
      id: string;
      config: { bucketName: string };
      credentialsKeys: string[];
    };
    expect(destination).toMatchObject({ id: destinationId, config: { bucketName: BUCKET } });
    expect(stdout).not.toContain(s3.secretAccessKey);
  });
});
