/**
 * Destinations after creation and the endpoint policy: PATCH replaces only the credentials, after
 * checking them as creation does; endpoints on loopback or private networks need the server's
 * permission, and link-local addresses (cloud metadata) are refused always.
 */
import { randomUUID } from "node:crypto";
import { GetObjectCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createS3Destination, listKeys, restJson } from "../support/bulk-export-fixtures.js";
import { type S3Server, startS3Server } from "../support/s3-server.js";
import { startTestApp, TEST_BULK_EXPORT_SETTINGS, type TestApp } from "../support/test-app.js";

const BUCKET = "destinations";
let s3: S3Server;
/** Private endpoints allowed (the test S3 server is on loopback). */
let t: TestApp;
/** The default policy: no loopback or private endpoints. */
let strict: TestApp;

type Json = Record<string, unknown>;

const call = (app: TestApp, method: string, path: string, body?: unknown) =>
  restJson(app.fetch, path, { method, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });

function destinationBody(endpoint: string): Json {
  return {
    display_name: "d",
    config: { bucket_name: BUCKET, prefix: "p", endpoint_url: endpoint },
    credentials: { access_key_id: s3.accessKeyId, secret_access_key: s3.secretAccessKey },
  };
}

beforeAll(async () => {
  s3 = await startS3Server({ buckets: [BUCKET] });
  t = await startTestApp();
  strict = await startTestApp({ bulkExport: { ...TEST_BULK_EXPORT_SETTINGS, allowPrivateEndpoints: false } });
});

afterAll(async () => {
  await strict?.stop();
  await t?.stop();
  await s3?.stop();
});

describe("the test file a new destination is checked with", () => {
  /** The requests the test S3 server received under `prefix`, from `from` on. */
  const requestsUnder = (prefix: string, from: number) =>
    s3
      .requests()
      .slice(from)
      .filter((r) => r.key.startsWith(prefix))
      .map((r) => `${r.method} ${r.key}`);

  it("is written under <prefix>/tmp/, read back and deleted when deleting is allowed", async () => {
    const from = s3.requests().length;
    const id = await createS3Destination(t.fetch, s3, { bucket: BUCKET, prefix: "probe-deleted" });
    const probe = `probe-deleted/tmp/agentplane-destination-check-${id}.txt`;
    expect(requestsUnder("probe-deleted/", from)).toEqual([
      `PUT ${probe}`,
      `GET ${probe}`,
      `GET ${probe}.absent`,
      `DELETE ${probe}`,
    ]);
    expect(await listKeys(s3.client(), BUCKET, "probe-deleted/")).toEqual([]);
  });

  it("stays under <prefix>/tmp/ when the credentials may not delete, and the destination is created", async () => {
    const allow = s3.deny((method, key) => method === "DELETE" && key.startsWith("probe-kept/"));
    try {
      const id = await createS3Destination(t.fetch, s3, { bucket: BUCKET, prefix: "probe-kept" });
      const probe = `probe-kept/tmp/agentplane-destination-check-${id}.txt`;
      expect(await listKeys(s3.client(), BUCKET, "probe-kept/")).toEqual([probe]);
      const kept = await s3.client().send(new GetObjectCommand({ Bucket: BUCKET, Key: probe }));
      expect(await kept.Body?.transformToString()).toMatch(
        /^agentplane checks that it can write bulk exports here/,
      );
      expect((await call(t, "GET", `/api/v1/bulk-exports/destinations/${id}`)).status).toBe(200);
    } finally {
      allow();
    }
  });

  it("is not read back when the credentials may not read, and the destination is created", async () => {
    const allow = s3.deny((method, key) => method === "GET" && key.startsWith("probe-unread/"));
    try {
      const id = await createS3Destination(t.fetch, s3, { bucket: BUCKET, prefix: "probe-unread" });
      expect((await call(t, "GET", `/api/v1/bulk-exports/destinations/${id}`)).status).toBe(200);
      expect(await listKeys(s3.client(), BUCKET, "probe-unread/")).toEqual([]);
    } finally {
      allow();
    }
  });
});

describe("PATCH /api/v1/bulk-exports/destinations/{id}", () => {
  it("replaces the credentials after checking them, and nothing else", async () => {
    const id = await createS3Destination(t.fetch, s3, { bucket: BUCKET, prefix: "patch" });
    const before = (await call(t, "GET", `/api/v1/bulk-exports/destinations/${id}`)).body;
    const res = await call(t, "PATCH", `/api/v1/bulk-exports/destinations/${id}`, {
      credentials: {
        access_key_id: s3.accessKeyId,
        secret_access_key: s3.secretAccessKey,
        session_token: "tok",
      },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({
      id,
      config: before.config,
      display_name: before.display_name,
      credentials_keys: ["access_key_id", "secret_access_key", "session_token"],
    });
    expect(JSON.stringify(res.body)).not.toContain(s3.secretAccessKey);
    expect(Date.parse(String(res.body.updated_at))).toBeGreaterThan(Date.parse(String(before.updated_at)));
    expect((await call(t, "GET", `/api/v1/bulk-exports/destinations/${id}`)).body).toEqual(res.body);
    const moved = await call(t, "PATCH", `/api/v1/bulk-exports/destinations/${id}`, {
      credentials: { access_key_id: s3.accessKeyId, secret_access_key: s3.secretAccessKey },
      config: { bucket_name: "elsewhere" },
    });
    expect(moved.status).toBe(422);
    expect(moved.body.detail).toBe(
      'field "config" of the request body is not a known field; the known fields here are: destination_id, credentials',
    );
  });

  it("keeps the old credentials when the new ones cannot write", async () => {
    const id = await createS3Destination(t.fetch, s3, { bucket: BUCKET, prefix: "patch-bad" });
    const before = (await call(t, "GET", `/api/v1/bulk-exports/destinations/${id}`)).body;
    const unknownKey = await call(t, "PATCH", `/api/v1/bulk-exports/destinations/${id}`, {
      credentials: { access_key_id: "AKIAUNKNOWN000000000", secret_access_key: s3.secretAccessKey },
    });
    expect(unknownKey.status).toBe(422);
    expect(unknownKey.body.detail).toMatch(
      /^Failed to validate S3 destination: Key ID you provided does not exist/,
    );
    const wrongSecret = await call(t, "PATCH", `/api/v1/bulk-exports/destinations/${id}`, {
      credentials: { access_key_id: s3.accessKeyId, secret_access_key: "not-the-secret" },
    });
    expect(wrongSecret.status).toBe(422);
    expect(wrongSecret.body.detail).toMatch(/^Failed to validate S3 destination: Access denied/);
    expect((await call(t, "GET", `/api/v1/bulk-exports/destinations/${id}`)).body).toEqual(before);
  });

  it.each<[string, () => Promise<{ path: string; body: unknown }>, number, string]>([
    [
      "no credentials",
      async () => ({ path: await newDestination(), body: {} }),
      422,
      'credentials is required: {"access_key_id": ..., "secret_access_key": ..., "session_token"?: ...}',
    ],
    [
      "an empty secret",
      async () => ({
        path: await newDestination(),
        body: { credentials: { access_key_id: "a", secret_access_key: "" } },
      }),
      422,
      "credentials.secret_access_key must be 1 to 2048 characters",
    ],
    [
      "an unknown destination",
      async () => ({
        path: `/api/v1/bulk-exports/destinations/${randomUUID()}`,
        body: { credentials: { access_key_id: "a", secret_access_key: "b" } },
      }),
      404,
      "",
    ],
  ])("answers %s with a clear 4xx", async (_name, request, status, detail) => {
    const { path, body } = await request();
    const res = await call(t, "PATCH", path, body);
    expect(res.status).toBe(status);
    if (detail) expect(res.body.detail).toBe(detail);
    else expect(String(res.body.detail)).toMatch(/not found/);
  });
});

/** A new destination's path. */
async function newDestination(): Promise<string> {
  return `/api/v1/bulk-exports/destinations/${await createS3Destination(t.fetch, s3, { bucket: BUCKET, prefix: "v" })}`;
}

describe("endpoint policy", () => {
  it("refuses loopback endpoints, by address and by name, unless the server allows them", async () => {
    const byAddress = await call(
      strict,
      "POST",
      "/api/v1/bulk-exports/destinations",
      destinationBody(s3.endpoint),
    );
    expect(byAddress.status).toBe(422);
    expect(byAddress.body.detail).toBe(
      "Failed to validate S3 destination: Invalid endpoint (127.0.0.1 is a loopback or private-network address; a server admin can allow these with AGENTPLANE_EXPORT_ALLOW_PRIVATE_ENDPOINTS=true)",
    );
    const byName = await call(
      strict,
      "POST",
      "/api/v1/bulk-exports/destinations",
      destinationBody(s3.endpoint.replace("127.0.0.1", "localhost")),
    );
    expect(byName.status).toBe(422);
    expect(byName.body.detail).toMatch(
      /^Failed to validate S3 destination: Invalid endpoint \(localhost resolves to .* is a loopback or private-network address/,
    );
    expect((await call(strict, "GET", "/api/v1/bulk-exports/destinations")).body).toEqual([]);
    const allowed = await call(t, "POST", "/api/v1/bulk-exports/destinations", destinationBody(s3.endpoint));
    expect(allowed.status).toBe(200);
  });

  it.each(["http://169.254.169.254", "http://[fe80::1]:9000", "http://0.0.0.0:9000"])(
    "never reaches %s, even where private endpoints are allowed",
    async (endpoint) => {
      const res = await call(t, "POST", "/api/v1/bulk-exports/destinations", destinationBody(endpoint));
      expect(res.status).toBe(422);
      expect(res.body.detail).toMatch(
        /^Failed to validate S3 destination: Invalid endpoint \(.* is a link-local, unspecified, multicast or reserved address, which the server may never reach\)$/,
      );
    },
  );
});
