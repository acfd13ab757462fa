/**
 * The graphs file's custom HTTP app and HTTP settings (`http.app`, `mount_prefix`, `cors`,
 * `middleware_order`, `enable_custom_route_auth`, `disable_*`), driven through the official
 * `@langchain/langgraph-sdk` client and plain fetch against real servers.
 */
import { fileURLToPath } from "node:url";
import { Client } from "@langchain/langgraph-sdk";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_WEBHOOK_SETTINGS } from "../../server/config.js";
import { collect } from "../support/runs-app.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/http-app/${name}`, import.meta.url));

function sdk(apiUrl: string, headers: Record<string, string>): Client {
  // apiKey null: the SDK would otherwise read LANGGRAPH_API_KEY and friends from the environment.
  return new Client({ apiUrl, apiKey: null, defaultHeaders: headers, callerOptions: { maxRetries: 0 } });
}

describe("a Hono app, middleware first (the default)", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ graphConfigPath: fixture("langgraph.json") });
  });
  afterAll(async () => {
    await t?.stop();
  });

  it("serves its own routes without a key, before the built-in ones", async () => {
    const res = await fetch(`${t.baseUrl}/custom/hello`);
    expect(res.status).toBe(200);
    expect(res.headers.get("x-app-seen")).toBe("yes");
    expect(await res.json()).toEqual({ hello: "world", user: null });

    const echo = await fetch(`${t.baseUrl}/custom/echo`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ n: 1 }),
    });
    expect(echo.status).toBe(201);
    expect(await echo.json()).toEqual({ echoed: { n: 1 } });

    const stream = await fetch(`${t.baseUrl}/custom/stream`);
    expect(stream.headers.get("content-type")).toBe("text/event-stream");
    expect(await stream.text()).toBe("data: 1\n\ndata: 2\n\ndata: 3\n\n");
  });

  it("runs its middleware for built-in routes: rewritten headers and JSON bodies reach them", async () => {
    // No x-api-key: the middleware turns x-custom-key into one before the built-in route authenticates.
    const client = sdk(t.baseUrl, { "x-custom-key": t.adminKey });
    const thread = await client.threads.create({ metadata: { owner: "ana" } });
    expect(thread.metadata).toEqual({ owner: "ana", stamped_by: "middleware" });
    const read = await client.threads.get(thread.thread_id);
    expect(read.metadata).toMatchObject({ stamped_by: "middleware" });

    // The built-in answer goes back through the middleware, which adds its header.
    const res = await fetch(`${t.baseUrl}/threads/${thread.thread_id}`, {
      headers: { "x-api-key": t.adminKey },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-app-seen")).toBe("yes");
    expect(res.headers.get("content-type")).toBe("application/json");

    // Headers edited in place reach the built-in route too: a key set, a key removed.
    const inplace = await fetch(`${t.baseUrl}/threads/${thread.thread_id}`, {
      headers: { "x-inplace-key": t.adminKey },
    });
    expect(inplace.status).toBe(200);
    const dropped = await fetch(`${t.baseUrl}/threads/${thread.thread_id}`, {
      headers: { "x-api-key": t.adminKey, "x-drop-key": "1" },
    });
    expect(dropped.status).toBe(401);

    // The middleware may read and replace the built-in answer.
    const wrapped = await fetch(`${t.baseUrl}/threads/${thread.thread_id}`, {
      headers: { "x-api-key": t.adminKey, "x-wrap": "1" },
    });
    expect(wrapped.status).toBe(200);
    expect(await wrapped.json()).toEqual({
      wrapped: expect.objectContaining({ thread_id: thread.thread_id }),
    });
  });

  it("streams built-in SSE through the middleware", async () => {
    const client = sdk(t.baseUrl, { "x-custom-key": t.adminKey });
    const thread = await client.threads.create();
    const parts = await collect(
      client.runs.stream(thread.thread_id, "steps", { input: { topic: "mw" }, streamMode: "values" }),
    );
    const last = parts.at(-1);
    expect(last?.event).toBe("values");
    expect(last?.data).toMatchObject({ text: "published: draft about mw", log: ["draft", "publish"] });
  });

  it("refuses a built-in route without credentials after the middleware", async () => {
    const res = await fetch(`${t.baseUrl}/threads/search`, { method: "POST", body: "{}" });
    expect(res.status).toBe(401);
    expect(res.headers.get("x-app-seen")).toBe("yes");
    expect(await res.json()).toEqual({ detail: expect.stringContaining("API key") });
  });

  it("answers the JSON 404 for a path neither knows", async () => {
    const res = await fetch(`${t.baseUrl}/nowhere/at/all`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: "no route for GET /nowhere/at/all" });
  });

  it("applies http.cors: preflight and actual request", async () => {
    const preflight = await fetch(`${t.baseUrl}/custom/echo`, {
      method: "OPTIONS",
      headers: {
        origin: "https://app.example.com",
        "access-control-request-method": "PURGE",
        "access-control-request-headers": "x-custom-key",
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expect(preflight.headers.get("access-control-allow-credentials")).toBe("true");
    expect(preflight.headers.get("access-control-max-age")).toBe("600");
    expect(preflight.headers.get("access-control-allow-methods")).toContain("PURGE");
    expect(preflight.headers.get("access-control-allow-methods")).toContain("POST");
    expect(preflight.headers.get("access-control-allow-headers")).toContain("x-custom-key");
    expect(preflight.headers.get("access-control-allow-headers")).toContain("x-api-key");

    const actual = await fetch(`${t.baseUrl}/custom/hello`, {
      headers: { origin: "https://app.example.com" },
    });
    expect(actual.status).toBe(200);
    expect(actual.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expect(actual.headers.get("access-control-expose-headers")).toContain("x-app-seen");
    expect(actual.headers.get("access-control-expose-headers")).toContain("x-pagination-total");

    // The default origin (AGENTPLANE_CORS_ORIGINS unset: LangGraph Studio) still may call.
    const studio = await fetch(`${t.baseUrl}/ok`, { headers: { origin: "https://smith.langchain.com" } });
    expect(studio.headers.get("access-control-allow-origin")).toBe("https://smith.langchain.com");
    const other = await fetch(`${t.baseUrl}/custom/hello`, {
      method: "OPTIONS",
      headers: { origin: "https://evil.example.com", "access-control-request-method": "GET" },
    });
    expect(other.status).toBe(403);
  });

  it("leaves gRPC and Connect alone: RPC paths do not pass through the middleware", async () => {
    const res = await fetch(`${t.baseUrl}/agentplane.system.v1.SystemService/Ok`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-app-seen")).toBeNull();
  });
});

describe("a Hono app, auth first, with custom route auth", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ graphConfigPath: fixture("auth-first.json") });
  });
  afterAll(async () => {
    await t?.stop();
  });

  it("authenticates custom routes, and the app sees the caller", async () => {
    const anonymous = await fetch(`${t.baseUrl}/custom/hello`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("x-app-seen")).toBeNull();
    expect(await anonymous.json()).toEqual({ detail: expect.stringContaining("x-api-key") });

    const known = await fetch(`${t.baseUrl}/custom/hello`, { headers: { "x-api-key": t.adminKey } });
    expect(known.status).toBe(200);
    const body = (await known.json()) as { user: string };
    expect(body.user).toMatch(/^[0-9a-f-]{36}$/);
    expect(known.headers.get("x-app-seen")).toBe(`yes:${body.user}`);
  });

  it("authenticates built-in routes before the middleware runs", async () => {
    // The middleware would turn x-custom-key into a key, but authentication already refused it.
    const viaMiddleware = sdk(t.baseUrl, { "x-custom-key": t.adminKey });
    await expect(viaMiddleware.threads.create()).rejects.toThrow(/HTTP 401/);

    const client = sdk(t.baseUrl, { "x-api-key": t.adminKey });
    const thread = await client.threads.create({ metadata: { owner: "bo" } });
    expect(thread.metadata).toEqual({ owner: "bo", stamped_by: "middleware" });
  });

  it("keeps public built-in routes public", async () => {
    const ok = await fetch(`${t.baseUrl}/ok`);
    expect(ok.status).toBe(200);
    const info = await fetch(`${t.baseUrl}/info`);
    expect(info.status).toBe(200);
  });
});

describe("a Fetch-style handler under a mount prefix", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ graphConfigPath: fixture("fetch-prefixed.json") });
  });
  afterAll(async () => {
    await t?.stop();
  });

  it("answers its routes and lets its 404s fall through to the built-in routes", async () => {
    const hi = await fetch(`${t.baseUrl}/agents/v2/fetch/hi`);
    expect(hi.status).toBe(200);
    expect(await hi.json()).toEqual({ fetch: true, path: "/fetch/hi" });

    const echo = await fetch(`${t.baseUrl}/agents/v2/fetch/echo`, { method: "POST", body: '{"a":[1]}' });
    expect(await echo.json()).toEqual({ echoed: { a: [1] } });

    const missing = await fetch(`${t.baseUrl}/agents/v2/fetch/nothing`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ detail: "no route for GET /fetch/nothing" });
  });

  it("serves the SDK at the prefix, runs included", async () => {
    const client = sdk(`${t.baseUrl}/agents/v2`, { "x-api-key": t.adminKey });
    const assistants = await client.assistants.search({ graphId: "steps" });
    expect(assistants.map((a) => a.graph_id)).toEqual(["steps"]);
    const thread = await client.threads.create({ metadata: { via: "prefix" } });
    expect(thread.metadata).toEqual({ via: "prefix" });
    const values = await client.runs.wait(thread.thread_id, "steps", { input: { topic: "p" } });
    expect(values).toMatchObject({ text: "published: draft about p" });
  });

  it("answers 404 outside the prefix", async () => {
    const res = await fetch(`${t.baseUrl}/threads/search`, {
      method: "POST",
      headers: { "x-api-key": t.adminKey },
      body: "{}",
    });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: expect.stringContaining("served under /agents/v2") });
    expect((await fetch(`${t.baseUrl}/agents/v2/ok`)).status).toBe(200);
  });
});

describe("disabled route groups", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      graphConfigPath: fixture("disabled.json"),
      webhooks: { ...DEFAULT_WEBHOOK_SETTINGS, allowPrivateAddresses: true },
    });
  });
  afterAll(async () => {
    await t?.stop();
  });

  it.each([
    ["GET", "/assistants/search", "assistants"],
    ["POST", "/threads", "threads"],
    ["POST", "/store/items/search", "store"],
    ["GET", "/ok", "meta"],
    ["GET", "/info", "meta"],
    ["GET", "/metrics", "meta"],
    ["POST", "/mcp", "mcp"],
    ["GET", "/.well-known/agent-card.json", "a2a"],
  ])("%s %s answers the JSON 404 (%s)", async (method, path) => {
    const res = await t.fetch(path, { method, ...(method === "POST" ? { body: "{}" } : {}) });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: `no route for ${method} ${path}` });
  });

  it("does not call a run's webhook with disable_webhooks", async () => {
    const client = sdk(t.baseUrl, { "x-api-key": t.adminKey });
    const values = await client.runs.wait(null, "steps", {
      input: { topic: "quiet" },
      webhook: "http://127.0.0.1:9/hook",
    });
    expect(values).toMatchObject({ text: "published: draft about quiet" });
    const sql = postgres(t.databaseUrl, { max: 1, onnotice: () => {} });
    try {
      const [jobs] = await sql<
        { n: number }[]
      >`select count(*)::int as n from pgboss.job where name = 'agent.webhook'`;
      expect(jobs?.n).toBe(0);
    } finally {
      await sql.end();
    }
  });

  it("answers the JSON 404 for runs and crons with disable_runs", async () => {
    const off = await startTestApp({ graphConfigPath: fixture("runs-disabled.json") });
    try {
      for (const [method, path] of [
        ["POST", "/runs/wait"],
        ["POST", "/runs/crons/search"],
      ] as const) {
        const res = await off.fetch(path, { method, body: "{}" });
        expect(res.status).toBe(404);
      }
      const client = sdk(off.baseUrl, { "x-api-key": off.adminKey });
      const thread = await client.threads.create();
      await expect(client.runs.wait(thread.thread_id, "steps", { input: { topic: "x" } })).rejects.toThrow(
        /HTTP 404/,
      );
    } finally {
      await off.stop();
    }
  });
});

describe("a graphs file whose http.app is not an app", () => {
  it("stops start-up naming http.app and what to export", async () => {
    await expect(startTestApp({ graphConfigPath: fixture("missing-export.json") })).rejects.toThrow(
      /http\.app "\.\/fetch-app\.ts:api": .*fetch-app\.ts exports no "api"; export a Hono app or a \(request\) => Response function/,
    );
  });
});
