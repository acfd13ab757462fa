/**
 * What agentplane tells LangSmith clients about its scope: `/api/v1/info` reports a version the
 * `langsmith` SDK accepts, and the LangSmith areas it does not serve answer 404 with a detail that
 * says so, whatever the method.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/test-app.js";

let t: TestApp;

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t?.stop());

describe("GET /api/v1/info", () => {
  it("reports at least the LangSmith version the SDK's v2 resources require", async () => {
    const res = await t.fetch("/api/v1/info", { apiKey: null });
    expect(res.status).toBe(200);
    const info = (await res.json()) as { version: string; instance_flags: Record<string, unknown> };
    const [major = 0, minor = 0] = info.version.split(".").map(Number);
    // langsmith 0.10.5 warns below 0.16.0 (client.runs, traces, threads).
    expect(major > 0 || minor >= 16).toBe(true);
    // No flag claims a feature agentplane does not serve: gzip and zstd multipart bodies it decodes.
    expect(info.instance_flags).toEqual({
      gzip_body_enabled: true,
      zstd_compression_enabled: true,
      dataset_examples_multipart_enabled: false,
      examples_multipart_enabled: false,
    });
  });
});

describe("LangSmith areas agentplane does not serve", () => {
  const id = randomUUID();
  const requests: [string, string][] = [
    ["GET", "/api/v1/datasets"],
    ["POST", "/api/v1/datasets"],
    ["GET", `/api/v1/datasets/${id}/versions/diff`],
    ["POST", `/api/v2/datasets/${id}/experiment-runs`],
    ["POST", "/api/v1/examples/bulk"],
    ["DELETE", `/api/v1/examples/${id}`],
    ["GET", `/api/v1/annotation-queues/${id}/runs`],
    ["POST", `/api/v1/platform/annotation-queues/${id}/items`],
    ["GET", "/api/v1/repos/me/prompt"],
    ["POST", "/api/v1/commits/me/prompt"],
    ["POST", "/api/v1/likes/me/prompt"],
    ["GET", "/api/v1/prompts"],
    ["PUT", "/api/v2/sandboxes/boxes/b1/start"],
    ["PUT", `/api/v1/runs/${id}/share`],
    ["DELETE", `/api/v2/runs/${id}/share`],
    ["GET", `/api/v1/public/${id}/run`],
    ["POST", `/api/v2/public/${id}/runs/query`],
  ];

  it.each(requests)("%s %s answers 404 'not supported by agentplane'", async (method, path) => {
    const res = await t.fetch(path, { method, ...(method === "GET" ? {} : { body: "{}" }) });
    expect(res.status).toBe(404);
    const { detail } = (await res.json()) as { detail: string };
    expect(detail).toMatch(/not supported by agentplane/);
  });

  it("leaves the routes it serves, and truly unknown ones, as they were", async () => {
    expect((await t.fetch("/api/v1/feedback?limit=1")).status).toBe(200);
    const unknown = await t.fetch("/api/v1/no-such-area");
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { detail: string }).detail).toMatch(/no route/);
  });
});
