/**
 * The exporter writes a file's rows while the file before it completes in the bucket and is
 * checkpointed; a file still completes only after the one before is checkpointed, so the bucket never
 * holds more than one complete file past the last checkpoint (what a retry rewrites), and every row is
 * in exactly one file.
 */

import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GetObjectCommand, HeadObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, expect, it } from "vitest";
import { exportPartition } from "../../server/export/partition-exporter.js";
import { destinationPolicy } from "../../server/export/s3-destination.js";
import { loadZstdCompressor } from "../../server/export/zstd-compressor.js";
import { uuidv7 } from "../../server/ids.js";
import type { ExportedFile, RunCursor } from "../../server/store/export/bulk-export-run-store.js";
import { unconfined } from "../../server/store/tracing/workspace-scope.js";
import { duckdb } from "../support/bulk-export-fixtures.js";
import { useTestDatabase } from "../support/database.js";
import { type S3Server, startS3Server } from "../support/s3-server.js";

const db = useTestDatabase();
const BUCKET = "files";
const org = uuidv7();
const ws = uuidv7();
const project = uuidv7();
const DAY = new Date("2024-03-01T00:00:00Z");
const RUNS = 35;
const FILE_ROWS = 10;
/** How long checkpoint 0 waits for a file 1 that must not complete before it returns. */
const PREMATURE_WAIT_MS = 1_500;
let s3: S3Server;
let client: S3Client;
let dir: string;

beforeAll(async () => {
  s3 = await startS3Server({ buckets: [BUCKET] });
  client = s3.client();
  dir = await mkdtemp(join(tmpdir(), "agentplane-export-files-"));
  const sql = db().sql;
  await sql`insert into organizations (id, display_name, plan) values (${org}, 'o', 'enterprise')`;
  await sql`insert into workspaces (id, organization_id, display_name, tenant_handle) values (${ws}, ${org}, 'w', 'w')`;
  await sql`insert into tracing_projects (id, workspace_id, name) values (${project}, ${ws}, 'p')`;
  for (let i = 0; i < RUNS; i++) {
    const id = uuidv7();
    await sql`
      insert into runs (id, workspace_id, session_id, trace_id, name, run_type, start_time, status, is_root, dotted_order)
      values (${id}, ${ws}, ${project}, ${id}, ${`run-${i}`}, 'llm', ${new Date(DAY.getTime() + i * 1000)},
              'success', true, ${id})`;
  }
});
afterAll(async () => {
  await s3?.stop();
  await rm(dir, { recursive: true, force: true });
});

async function exists(key: string): Promise<boolean> {
  return client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key })).then(
    () => true,
    () => false,
  );
}

it("checkpoints files in order, each complete before the next completes, with every row once", async () => {
  const seen: { file: ExportedFile; cursor: RunCursor; nextExisted: boolean }[] = [];
  /** The key of file `n` of the partition that `key` is a file of (names are zero-padded). */
  const nextKey = (key: string, n: number) =>
    key.replace(/-(\d+)\.parquet$/, (_, seq: string) => `-${String(n).padStart(seq.length, "0")}.parquet`);
  await exportPartition(
    unconfined(db().sql),
    {
      workspaceId: ws,
      exportId: uuidv7(),
      runId: uuidv7(),
      sessionId: project,
      start: DAY,
      end: new Date(DAY.getTime() + 86_400_000),
      condition: undefined,
      fields: ["id", "name", "start_time"],
      formatVersion: "v2_beta",
      target: {
        location: {
          bucketName: BUCKET,
          prefix: "p",
          region: s3.region,
          endpointUrl: s3.endpoint,
          includeBucketInPrefix: false,
        },
        credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
        policy: destinationPolicy(true),
      },
      cursor: null,
      files: [],
      retried: false,
    },
    { fileMaxRows: FILE_ROWS, fileMaxBytes: Number.MAX_SAFE_INTEGER },
    await loadZstdCompressor(),
    {
      signal: new AbortController().signal,
      async checkpoint(file, cursor) {
        expect(await exists(file.key)).toBe(true);
        const next = nextKey(file.key, seen.length + 1);
        // The next file's rows are being written now; it must not complete before this returns.
        if (seen.length === 0) {
          const deadline = Date.now() + PREMATURE_WAIT_MS;
          while (Date.now() < deadline && !(await exists(next)))
            await new Promise((resolve) => setTimeout(resolve, 50));
        }
        seen.push({ file, cursor, nextExisted: await exists(next) });
      },
    },
  );
  expect(seen.map((s) => s.file.rows)).toEqual([10, 10, 10, 5]);
  expect(seen.map((s) => s.nextExisted)).toEqual([false, false, false, false]);
  expect(seen.map((s) => s.file.key)).toEqual(seen.map((s, i) => nextKey(s.file.key, i)));
  // Each checkpoint's cursor is the last row of its file: strictly after the one before.
  const cursors = seen.map((s) => s.cursor.startTime);
  expect([...cursors].sort()).toEqual(cursors);
  expect(new Set(cursors).size).toBe(cursors.length);
  const paths: string[] = [];
  for (const [i, { file }] of seen.entries()) {
    const res = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: file.key }));
    const path = join(dir, `${i}.parquet`);
    await writeFile(
      path,
      await (res.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray(),
    );
    paths.push(`'${path}'`);
  }
  const [summary] = await duckdb(
    `select count(*)::int as n, count(distinct id)::int as ids, min(name) as first
     from read_parquet([${paths.join(", ")}])`,
  );
  expect(summary).toEqual({ n: RUNS, ids: RUNS, first: "run-0" });
});
