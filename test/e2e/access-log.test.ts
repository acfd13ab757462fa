/**
 * Operations basics through real clients: one access-log line per request (route template, status,
 * duration, workspace, request id; never keys, path values or bodies), `x-request-id` taken or made
 * and echoed, HEAD wherever GET answers, and a JSON index at `/`.
 */
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LogFields, Logger } from "../../server/logger.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

interface Line {
  level: string;
  message: string;
  fields: LogFields;
}

const lines: Line[] = [];
const record =
  (level: string) =>
  (message: string, fields: LogFields = {}) =>
    lines.push({ level, message, fields });
const log: Logger = {
  debug: record("debug"),
  info: record("info"),
  warn: record("warn"),
  error: record("error"),
};

let t: TestApp;
let workspaceId: string;
beforeAll(async () => {
  t = await startTestApp({ logLevel: "info" }, { log });
  const me = (await (await t.fetch("/api/v1/whoami")).json()) as { workspace?: { id: string } };
  workspaceId = me.workspace?.id ?? "";
  expect(workspaceId).not.toBe("");
});
afterAll(() => t?.stop());

/** The access line of the request with this id; it is written when the response closes. */
async function accessLine(requestId: string): Promise<LogFields> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const found = lines.find((line) => line.message === "request" && line.fields.requestId === requestId);
    if (found) {
      expect(found.level).toBe("info");
      return found.fields;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no access line for request ${requestId}`);
}

describe("access log", () => {
  it("writes one line per REST request with the route template, status, workspace and id", async () => {
    const created = await t.fetch("/threads", {
      method: "POST",
      body: JSON.stringify({ metadata: { secret: "body-value-never-logged" } }),
      headers: { "x-request-id": "req-create-1" },
    });
    expect(created.status).toBe(200);
    expect(created.headers.get("x-request-id")).toBe("req-create-1");
    const { thread_id: threadId } = (await created.json()) as { thread_id: string };

    const read = await t.fetch(`/threads/${threadId}`, { headers: { "x-request-id": "req-read-1" } });
    expect(read.status).toBe(200);
    const line = await accessLine("req-read-1");
    expect(line).toEqual({
      method: "GET",
      route: "/threads/{thread_id}",
      status: 200,
      durationMs: expect.any(Number),
      workspaceId,
      requestId: "req-read-1",
    });
    expect(await accessLine("req-create-1")).toMatchObject({
      method: "POST",
      route: "/threads",
      status: 200,
    });
    expect(lines.filter((l) => l.fields.requestId === "req-read-1")).toHaveLength(1);

    const everything = JSON.stringify(lines);
    for (const secret of [t.adminKey, threadId, "body-value-never-logged"])
      expect(everything).not.toContain(secret);
  });

  it("logs Connect calls by RPC path, and refusals and unknown paths with their status", async () => {
    const rpc = await fetch(`${t.baseUrl}/agentplane.iam.v1.IdentityService/Whoami`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": t.adminKey, "x-request-id": "req-rpc" },
      body: "{}",
    });
    expect(rpc.status).toBe(200);
    expect(await accessLine("req-rpc")).toMatchObject({
      route: "/agentplane.iam.v1.IdentityService/Whoami",
      status: 200,
    });

    const denied = await t.fetch("/threads/search", {
      method: "POST",
      body: "{}",
      apiKey: "ap_pt_not_a_real_key_000000000000",
      headers: { "x-request-id": "req-401" },
    });
    expect(denied.status).toBe(401);
    expect(await accessLine("req-401")).toMatchObject({
      route: "/threads/search",
      status: 401,
      workspaceId: null,
    });

    const missing = await fetch(`${t.baseUrl}/no/such/path`, { headers: { "x-request-id": "req-404" } });
    expect(missing.status).toBe(404);
    expect(await accessLine("req-404")).toMatchObject({ method: "GET", route: null, status: 404 });
  });

  it("makes a request id when none or an unsafe one is sent, and echoes it", async () => {
    for (const sent of [undefined, "has spaces", "x".repeat(129), "semi;colon"]) {
      const res = await fetch(`${t.baseUrl}/ok`, {
        headers: sent === undefined ? {} : { "x-request-id": sent },
      });
      const id = res.headers.get("x-request-id") ?? "";
      expect(id, String(sent)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      expect(await accessLine(id)).toMatchObject({ route: "/ok", status: 200 });
    }
  });
});

describe("access log behind a custom app's middleware", () => {
  let app: TestApp;
  beforeAll(async () => {
    const graphs = fileURLToPath(new URL("../fixtures/http-app/langgraph.json", import.meta.url));
    app = await startTestApp({ logLevel: "info", graphConfigPath: graphs }, { log });
  });
  afterAll(() => app?.stop());

  it("keeps the route and workspace of a request the middleware replaced", async () => {
    // x-custom-key makes the fixture's middleware build a new Request carrying the key: the built-in
    // route serves that replacement, and labels it (the route metrics count with, too).
    const res = await fetch(`${app.baseUrl}/api/v1/whoami`, {
      headers: { "x-custom-key": app.adminKey, "x-request-id": "req-replaced" },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-app-seen")).toBe("yes");
    const me = (await res.json()) as { workspace?: { id: string } };
    expect(await accessLine("req-replaced")).toEqual({
      method: "GET",
      route: "/api/v1/whoami",
      status: 200,
      durationMs: expect.any(Number),
      workspaceId: me.workspace?.id,
      requestId: "req-replaced",
    });
  });
});

describe("HEAD and the index", () => {
  it("answers HEAD wherever GET answers, without a body", async () => {
    for (const path of ["/ok", "/info", "/", "/settings/billing/usage"]) {
      const res = await fetch(`${t.baseUrl}${path}`, { method: "HEAD" });
      expect(res.status, path).toBe(200);
      expect(await res.text(), path).toBe("");
    }
    const thread = await t.fetch("/threads/00000000-0000-7000-8000-000000000000", { method: "HEAD" });
    expect(thread.status).toBe(404);
  });

  it("lists HEAD beside GET in Allow, and refuses HEAD where no GET answers", async () => {
    const wrong = await fetch(`${t.baseUrl}/ok`, { method: "DELETE" });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get("allow")).toBe("GET, HEAD");
    const postOnly = await fetch(`${t.baseUrl}/runs/batch`, { method: "HEAD" });
    expect(postOnly.status).toBe(405);
    expect(postOnly.headers.get("allow")).toBe("POST");
  });

  it("answers GET / with a JSON index: version and where to go next", async () => {
    const res = await fetch(`${t.baseUrl}/`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      name: "agentplane",
      version: "0.1.0",
      links: {
        docs: "/docs",
        openapi: "/openapi.json",
        usage: "/settings/billing/usage",
        health: "/ok",
        info: "/info",
      },
    });
  });
});
