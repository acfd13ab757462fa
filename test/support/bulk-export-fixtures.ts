import { createHash } from "node:crypto";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { GetObjectCommand, ListObjectsV2Command, type S3Client } from "@aws-sdk/client-s3";
import { DuckDBInstance } from "@duckdb/node-api";
import { Client, RunTree } from "langsmith";
import { vi } from "vitest";
import type { S3Server } from "./s3-server.js";

/** One trace to send: a root chain with one llm child, both starting at `start`. */
export interface TraceSpec {
  start: Date;
  /** Tags of both runs. */
  tags?: string[];
  /** Makes the child fail with this error. */
  error?: string;
  /** Text put in the root's inputs as `padding`: rows of a chosen size. */
  padding?: string;
}

/** What {@link sendTraces} sent: per trace its root and child run ids. */
export interface SentTrace {
  rootId: string;
  childId: string;
  start: Date;
}

/**
 * Sends traces with the official `langsmith` SDK's RunTree (which derives dotted_order and ids the
 * way traceable does) to `baseUrl` with `apiKey`, into `project`, and waits until they are ingested.
 */
export async function sendTraces(
  target: { baseUrl: string; apiKey: string; tenantId?: string },
  project: string,
  traces: readonly TraceSpec[],
): Promise<SentTrace[]> {
  const client = new Client({
    apiUrl: `${target.baseUrl}/api/v1`,
    apiKey: target.apiKey,
    ...(target.tenantId ? { workspaceId: target.tenantId } : {}),
  });
  const sent: SentTrace[] = [];
  for (const [i, spec] of traces.entries()) {
    const ms = spec.start.getTime();
    const root = new RunTree({
      name: "pipeline",
      run_type: "chain",
      inputs: {
        question: `q${i}`,
        nested: { n: i, list: [1, "two"] },
        ...(spec.padding === undefined ? {} : { padding: spec.padding }),
      },
      project_name: project,
      client,
      start_time: ms,
      tags: spec.tags ?? [],
      metadata: { index: i },
    });
    await root.postRun();
    const child = root.createChild({
      name: "fake-llm",
      run_type: "llm",
      inputs: { prompt: `p${i}` },
      start_time: ms + 1,
      tags: spec.tags ?? [],
    });
    await child.postRun();
    await child.end(
      {
        text: `answer ${i}`,
        usage_metadata: { input_tokens: 7 + i, output_tokens: 5, total_tokens: 12 + i },
      },
      spec.error,
      ms + 20,
    );
    await child.patchRun();
    await root.end({ answer: `answer ${i}` }, undefined, ms + 30);
    await root.patchRun();
    sent.push({ rootId: root.id, childId: child.id, start: spec.start });
  }
  await client.awaitPendingTraceBatches();
  return sent;
}

/** A local copy of objects in a bucket. */
export interface DownloadedObject {
  key: string;
  path: string;
  bytes: Buffer;
  sha256: string;
}

/** Lists every object under `prefix` (all pages). */
export async function listKeys(client: S3Client, bucket: string, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const page = await client.send(
      new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }),
    );
    for (const o of page.Contents ?? []) if (o.Key) keys.push(o.Key);
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return keys.sort();
}

/** Downloads every object under `prefix` into a fresh temporary directory, keeping the key paths. */
export async function downloadPrefix(
  s3: S3Server,
  bucket: string,
  prefix: string,
): Promise<{ dir: string; objects: DownloadedObject[] }> {
  const client = s3.client();
  const dir = await mkdtemp(join(tmpdir(), "agentplane-export-"));
  const objects: DownloadedObject[] = [];
  for (const key of await listKeys(client, bucket, prefix)) {
    const res = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    const bytes = Buffer.from(
      await (res.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray(),
    );
    const path = join(dir, key);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, bytes);
    objects.push({ key, path, bytes, sha256: createHash("sha256").update(bytes).digest("hex") });
  }
  return { dir, objects };
}

/** Runs a query in an in-memory DuckDB and returns its rows as JSON-friendly objects. */
export async function duckdb(sql: string): Promise<Record<string, unknown>[]> {
  const instance = await DuckDBInstance.create(":memory:");
  try {
    const connection = await instance.connect();
    try {
      return (await connection.runAndReadAll(sql)).getRowObjectsJson() as Record<string, unknown>[];
    } finally {
      connection.closeSync();
    }
  } finally {
    instance.closeSync();
  }
}

/**
 * Polls a bulk export over REST, as a user watches one, until its status is one of `statuses`;
 * returns its body.
 */
export async function waitForExportStatus(
  fetchJson: (path: string) => Promise<Response>,
  id: string,
  statuses: readonly string[],
  timeout = 30_000,
): Promise<Record<string, unknown>> {
  return vi.waitFor(
    async () => {
      const body = (await (await fetchJson(`/api/v1/bulk-exports/${id}`)).json()) as Record<string, unknown>;
      if (!statuses.includes(String(body.status))) throw new Error(`export ${id} is ${String(body.status)}`);
      return body;
    },
    { timeout, interval: 100 },
  );
}

/** A UTC midnight `daysAgo` days before today, plus `hours`. */
export function utcDay(daysAgo: number, hours = 0): Date {
  const now = new Date();
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - daysAgo, hours));
}

/** A REST answer: its status and JSON body (an object, or an array for the list routes). */
export interface RestAnswer {
  status: number;
  body: Record<string, unknown> & Record<string, unknown>[];
}

/** Calls `path` with `fetcher` (a TestApp's `fetch`, which adds the key) and reads the JSON answer. */
export async function restJson(
  fetcher: (path: string, init?: RequestInit) => Promise<Response>,
  path: string,
  init: RequestInit = {},
): Promise<RestAnswer> {
  const res = await fetcher(path, init);
  return { status: res.status, body: (await res.json()) as RestAnswer["body"] };
}

/**
 * Creates a destination in bucket `bucket` of the test S3 server under `prefix`, with `credentials`
 * (the server's own pair by default); returns its id.
 */
export async function createS3Destination(
  fetcher: (path: string, init?: RequestInit) => Promise<Response>,
  s3: S3Server,
  target: { bucket: string; prefix: string; credentials?: { accessKeyId: string; secretAccessKey: string } },
): Promise<string> {
  const credentials = target.credentials ?? s3;
  const res = await restJson(fetcher, "/api/v1/bulk-exports/destinations", {
    method: "POST",
    body: JSON.stringify({
      display_name: target.prefix,
      config: { bucket_name: target.bucket, prefix: target.prefix, endpoint_url: s3.endpoint },
      credentials: { access_key_id: credentials.accessKeyId, secret_access_key: credentials.secretAccessKey },
    }),
  });
  if (res.status !== 200)
    throw new Error(`destination not created: ${res.status} ${JSON.stringify(res.body)}`);
  return String(res.body.id);
}
