/**
 * Bad input on every bulk-export endpoint answers a 4xx whose `detail` says what to fix, and
 * stores nothing; destination checks name the seed's problems; plans and permissions are enforced.
 */
import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { restJson, sendTraces, utcDay } from "../support/bulk-export-fixtures.js";
import { type S3Server, startS3Server } from "../support/s3-server.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const BUCKET = "validation";
let s3: S3Server;
let t: TestApp;
let destinationId: string;
let projectId: string;

type Json = Record<string, unknown>;

function call(method: string, path: string, body?: unknown, apiKey?: string) {
  return restJson(t.fetch, path, {
    method,
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
    ...(apiKey ? { apiKey } : {}),
  } as RequestInit);
}

/** A destination body for the test S3 server, with `config` and `credentials` changed as given. */
function destination(config: Json = {}, credentials: Json | null = {}): Json {
  return {
    display_name: "d",
    config: { bucket_name: BUCKET, prefix: "p", endpoint_url: s3.endpoint, ...config },
    ...(credentials === null
      ? {}
      : {
          credentials: {
            access_key_id: s3.accessKeyId,
            secret_access_key: s3.secretAccessKey,
            ...credentials,
          },
        }),
  };
}

/** An export body for the test destination and project, with the fields changed as given. */
function exportBody(fields: Json = {}): Json {
  return {
    bulk_export_destination_id: destinationId,
    session_id: projectId,
    start_time: utcDay(2).toISOString(),
    end_time: utcDay(1).toISOString(),
    ...fields,
  };
}

beforeAll(async () => {
  s3 = await startS3Server({ buckets: [BUCKET] });
  t = await startTestApp();
  const project = `validation-${randomUUID()}`;
  await sendTraces({ baseUrl: t.baseUrl, apiKey: t.adminKey }, project, [{ start: utcDay(2, 1) }]);
  projectId = String(((await call("GET", `/api/v1/sessions?name=${project}`)).body[0] as Json).id);
  const created = await call("POST", "/api/v1/bulk-exports/destinations", destination());
  expect(created.status).toBe(200);
  destinationId = String(created.body.id);
});

afterAll(async () => {
  await t?.stop();
  await s3?.stop();
});

describe("POST /api/v1/bulk-exports/destinations", () => {
  it.each<[string, () => unknown, number, string]>([
    ["malformed JSON", () => "{", 400, ""],
    [
      "no display_name",
      () => ({ ...destination(), display_name: "" }),
      422,
      "display_name must be 1 to 200 characters",
    ],
    [
      "another type",
      () => ({ ...destination(), destination_type: "gcs" }),
      422,
      'destination_type must be "s3"',
    ],
    ["no config", () => ({ display_name: "d" }), 422, "config is required"],
    [
      "a short bucket name",
      () => destination({ bucket_name: "b" }),
      422,
      "config.bucket_name must be 3 to 63",
    ],
    ["a prefix with ..", () => destination({ prefix: "a/../b" }), 422, "config.prefix must be a path"],
    [
      "neither region nor endpoint",
      () => destination({ endpoint_url: "" }),
      422,
      "config.region is required for AWS S3",
    ],
    [
      "an ftp endpoint",
      () => destination({ endpoint_url: "ftp://example.com" }),
      422,
      "config.endpoint_url must be an http://",
    ],
    [
      "a region with spaces",
      () => destination({ region: "us east" }),
      422,
      "config.region must be a region name",
    ],
    [
      "an empty access key id",
      () => destination({}, { access_key_id: "" }),
      422,
      "credentials.access_key_id must be 1 to 255",
    ],
    [
      "a wrong secret",
      () => destination({}, { secret_access_key: "wrong" }),
      422,
      "Failed to validate S3 destination: Access denied",
    ],
    [
      "an unknown key id",
      () => destination({}, { access_key_id: "AKIAUNKNOWN000000000" }),
      422,
      "Failed to validate S3 destination: Key ID you provided does not exist",
    ],
    [
      "a missing bucket",
      () => destination({ bucket_name: "no-such-bucket" }),
      422,
      "Failed to validate S3 destination: Bucket is not valid",
    ],
    [
      "a closed port",
      () => destination({ endpoint_url: "http://127.0.0.1:1" }),
      422,
      "Failed to validate S3 destination: Invalid endpoint",
    ],
  ])("refuses %s", async (_, body, status, detail) => {
    const before = (await call("GET", "/api/v1/bulk-exports/destinations")).body.length;
    const res = await call("POST", "/api/v1/bulk-exports/destinations", body());
    expect(res.status).toBe(status);
    expect(typeof res.body.detail).toBe("string");
    expect(String(res.body.detail)).toContain(detail);
    expect((await call("GET", "/api/v1/bulk-exports/destinations")).body).toHaveLength(before);
  });

  it("refuses an endpoint that is not an S3 store", async () => {
    const res = await call(
      "POST",
      "/api/v1/bulk-exports/destinations",
      destination({ endpoint_url: t.baseUrl }),
    );
    expect(res.status).toBe(422);
    expect(res.body.detail).toBe(
      "Failed to validate S3 destination: Invalid endpoint (the endpoint does not answer like an S3-compatible store)",
    );
  });
});

/** How a fake store answers a request. */
type FakeAnswer = { status: number; headers?: Record<string, string>; body?: string };

/**
 * A plain HTTP server that is not S3, answering as `answer` says; `stored` holds the bodies of the
 * PUTs so far, by path. Runs `check` with its base URL.
 */
async function withFakeStore(
  answer: (method: string, path: string, stored: Map<string, string>) => FakeAnswer,
  check: (endpoint: string) => Promise<void>,
): Promise<void> {
  const stored = new Map<string, string>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const path = (req.url ?? "/").split("?")[0] ?? "/";
      const { status, headers = {}, body = "" } = answer(req.method ?? "GET", path, stored);
      if (req.method === "PUT") stored.set(path, Buffer.concat(chunks).toString());
      res.writeHead(status, headers);
      res.end(req.method === "HEAD" ? undefined : body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    await check(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

/** A fake that keeps what is PUT (answering with an ETag) and gives it back; `unknown` answers other keys. */
function keeping(unknown: FakeAnswer, alter: (body: string) => string = (body) => body) {
  return (method: string, path: string, stored: Map<string, string>): FakeAnswer => {
    if (method === "PUT") return { status: 200, headers: { etag: '"0123456789abcdef0123456789abcdef"' } };
    if (method === "DELETE") return { status: 204 };
    const body = stored.get(path);
    return body === undefined ? unknown : { status: 200, body: alter(body) };
  };
}

describe("a server that is not S3", () => {
  const page = { status: 404, headers: { "content-type": "text/html" }, body: "<h1>Not Found</h1>" };
  it.each<[string, (method: string, path: string, stored: Map<string, string>) => FakeAnswer, string]>([
    [
      "answers 200 to every PUT, GET and DELETE",
      () => ({ status: 200 }),
      "its answer to a PUT carries no ETag",
    ],
    [
      "keeps objects but answers a missing key with a web page",
      keeping(page),
      "a key that does not exist is not answered with an S3 error document (NotFound, HTTP 404)",
    ],
    [
      "keeps objects but answers for keys it does not have",
      keeping({ status: 200, body: "hello" }),
      "it answers a key that does not exist",
    ],
    [
      "gives back other bytes than it was given",
      keeping(page, (body) => body.toUpperCase()),
      "the object read back differs from the one written",
    ],
  ])("is refused when it %s", async (_, answer, why) => {
    await withFakeStore(answer, async (endpoint) => {
      const before = (await call("GET", "/api/v1/bulk-exports/destinations")).body.length;
      const res = await call(
        "POST",
        "/api/v1/bulk-exports/destinations",
        destination({ endpoint_url: endpoint }),
      );
      expect(res.status).toBe(422);
      expect(res.body.detail).toBe(
        `Failed to validate S3 destination: Invalid endpoint (the endpoint does not answer like an S3-compatible store: ${why})`,
      );
      expect((await call("GET", "/api/v1/bulk-exports/destinations")).body).toHaveLength(before);
    });
  });
});

describe("destination reads", () => {
  it.each([
    ["GET", "/api/v1/bulk-exports/destinations/nope", 422, "destination_id must be a UUID"],
    ["GET", `/api/v1/bulk-exports/destinations/${randomUUID()}`, 404, "not found in this workspace"],
    ["DELETE", `/api/v1/bulk-exports/destinations/${randomUUID()}`, 404, "not found in this workspace"],
  ])("%s %s answers %i", async (method, path, status, detail) => {
    const res = await call(method, path);
    expect(res.status).toBe(status);
    expect(String(res.body.detail)).toContain(detail);
  });
});

describe("POST /api/v1/bulk-exports", () => {
  it.each<[string, Json, number, string]>([
    ["no destination", { bulk_export_destination_id: "" }, 422, "bulk_export_destination_id is required"],
    [
      "a destination that is not a UUID",
      { bulk_export_destination_id: "x" },
      422,
      "bulk_export_destination_id must be a UUID",
    ],
    ["an unknown destination", { bulk_export_destination_id: randomUUID() }, 404, "destination"],
    ["no project", { session_id: "" }, 422, "session_id is required"],
    ["an unknown project", { session_id: randomUUID() }, 404, "tracing project"],
    ["no start_time", { start_time: undefined }, 422, "start_time is required"],
    ["a start_time that is not a time", { start_time: "yesterday" }, 422, "start_time"],
    [
      "no end_time and no interval",
      { end_time: undefined },
      422,
      "end_time is required for an export without interval_hours",
    ],
    [
      "an end before the start",
      { end_time: utcDay(3).toISOString() },
      422,
      "end_time must be after start_time",
    ],
    [
      "an end_time with interval_hours",
      { interval_hours: 6 },
      422,
      "end_time must be omitted for a scheduled export",
    ],
    [
      "interval_hours 0",
      { interval_hours: 0, end_time: undefined },
      422,
      "interval_hours must be 1 to 168; got 0",
    ],
    [
      "interval_hours 169",
      { interval_hours: 169, end_time: undefined },
      422,
      "interval_hours must be 1 to 168; got 169",
    ],
    ["a filter with a syntax error", { filter: 'eq(run_type, "llm"' }, 422, "invalid filter at position 18"],
    ["a filter on an unknown field", { filter: 'eq(nme, "x")' }, 422, "invalid filter at position 3"],
    [
      "an unknown export field",
      { export_fields: ["id", "secret"] },
      422,
      'export_fields: "secret" is not an exportable field',
    ],
    ["a repeated export field", { export_fields: ["id", "id"] }, 422, 'export_fields names "id" twice'],
    ["format_version v1", { format_version: "v1" }, 422, 'format_version must be "v2_beta"'],
    ["gzip compression", { compression: "gzip" }, 422, 'compression must be "zstandard"'],
    ["a CSV format", { format: "CSV" }, 422, 'format must be "Parquet"'],
    [
      "eleven years",
      { start_time: new Date(Date.UTC(2014, 0, 1)).toISOString() },
      422,
      "an export covers at most 3660",
    ],
    ["an unknown field", { bogus: 1 }, 422, "bogus"],
  ])("refuses %s", async (_, fields, status, detail) => {
    const before = (await call("GET", "/api/v1/bulk-exports")).body.length;
    const res = await call("POST", "/api/v1/bulk-exports", exportBody(fields));
    expect(res.status).toBe(status);
    expect(String(res.body.detail)).toContain(detail);
    expect((await call("GET", "/api/v1/bulk-exports")).body).toHaveLength(before);
  });
});

describe("export reads and updates", () => {
  it.each([
    ["GET", "/api/v1/bulk-exports/nope", undefined, 422, "bulk_export_id must be a UUID"],
    ["GET", `/api/v1/bulk-exports/${randomUUID()}`, undefined, 404, "not found in this workspace"],
    ["GET", `/api/v1/bulk-exports/${randomUUID()}/runs`, undefined, 404, "not found in this workspace"],
    [
      "GET",
      `/api/v1/bulk-exports/${randomUUID()}/runs/${randomUUID()}`,
      undefined,
      404,
      "not found in this workspace",
    ],
    ["GET", "/api/v1/bulk-exports?limit=0", undefined, 422, "limit must be 1 to 1000"],
    ["GET", "/api/v1/bulk-exports?offset=-1", undefined, 422, "offset must not be negative"],
    [
      "PATCH",
      `/api/v1/bulk-exports/${randomUUID()}`,
      { status: "Cancelled" },
      404,
      "not found in this workspace",
    ],
    [
      "PATCH",
      `/api/v1/bulk-exports/${randomUUID()}`,
      { status: "Paused" },
      422,
      'status must be "Cancelled"',
    ],
  ])("%s %s answers %i", async (method, path, body, status, detail) => {
    const res = await call(method, path, body);
    expect(res.status).toBe(status);
    expect(String(res.body.detail)).toContain(detail);
  });

  it("finds a run of an export by id, and not under another export", async () => {
    const created = await call("POST", "/api/v1/bulk-exports", exportBody());
    const [run] = (await call("GET", `/api/v1/bulk-exports/${created.body.id}/runs`)).body;
    const got = await call("GET", `/api/v1/bulk-exports/${created.body.id}/runs/${run?.id}`);
    expect(got.status).toBe(200);
    expect(got.body.id).toBe(run?.id);
    const other = await call("POST", "/api/v1/bulk-exports", exportBody());
    expect((await call("GET", `/api/v1/bulk-exports/${other.body.id}/runs/${run?.id}`)).status).toBe(404);
  });
});

describe("who may export", () => {
  it("lets viewers read but not manage", async () => {
    const admin = t.client();
    const workspaceId = (await admin.iam.workspaces.getCurrentWorkspace({})).id;
    const viewer = (
      await admin.iam.apiKeys.createApiKey({ kind: "service", workspaceIds: [workspaceId], role: "viewer" })
    ).key;
    expect((await call("GET", "/api/v1/bulk-exports", undefined, viewer)).status).toBe(200);
    expect(
      (await call("GET", `/api/v1/bulk-exports/destinations/${destinationId}`, undefined, viewer)).status,
    ).toBe(200);
    const refused = await call("POST", "/api/v1/bulk-exports", exportBody(), viewer);
    expect(refused.status).toBe(403);
    expect(refused.body.detail).toBe("permission denied: this call needs the bulk-exports:manage permission");
  });

  it("refuses the Developer plan", async () => {
    const developer = await startTestApp({ plan: "developer" });
    try {
      const res = await developer.fetch("/api/v1/bulk-exports/destinations", {
        method: "POST",
        body: JSON.stringify(destination()),
      });
      expect(res.status).toBe(403);
      expect(((await res.json()) as Json).detail).toBe(
        "bulk export needs the Plus or Enterprise plan; this organization is on the developer plan",
      );
      const list = await developer.fetch("/api/v1/bulk-exports/destinations");
      expect(await list.json()).toEqual([]);
    } finally {
      await developer.stop();
    }
  });
});
