/**
 * CORS answers only the configured origins (and the server's own pages). With authentication off,
 * a page from any other origin cannot act at all: not through a preflighted call, not through a
 * plain POST that browsers send without one, and not through a DNS name rebound to 127.0.0.1.
 */
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Logger } from "../../server/logger.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const STUDIO = "https://smith.langchain.com";
const EVIL = "https://evil.example";

function preflight(baseUrl: string, path: string, origin: string): Promise<Response> {
  return fetch(`${baseUrl}${path}`, {
    method: "OPTIONS",
    headers: {
      origin,
      "access-control-request-method": "POST",
      "access-control-request-headers": "content-type, x-api-key",
    },
  });
}

/** A request with a Host header of our choosing (fetch may not set Host), as a rebound DNS name sends. */
function requestWithHost(
  baseUrl: string,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; body: string }> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, path, method: "POST", headers }, (res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => {
        body += chunk.toString();
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end("{}");
  });
}

describe("with API keys (default origins)", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t?.stop());

  it("answers the preflight of the default Studio origin", async () => {
    const res = await preflight(t.baseUrl, "/threads/search", STUDIO);
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe(STUDIO);
    expect(res.headers.get("access-control-allow-headers")).toContain("x-api-key");
  });

  it("refuses the preflight of any other origin, saying which setting allows it", async () => {
    const res = await preflight(t.baseUrl, "/threads/search", EVIL);
    expect(res.status).toBe(403);
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
    expect(await res.json()).toEqual({
      detail: `cross-origin requests from ${EVIL} are not allowed: add the origin to AGENTPLANE_CORS_ORIGINS`,
    });
  });

  it("gives an unlisted origin's actual request no CORS headers, a listed one its origin", async () => {
    const evil = await t.fetch("/api/v1/whoami", { headers: { origin: EVIL } });
    expect(evil.headers.get("access-control-allow-origin")).toBeNull();
    const studio = await t.fetch("/api/v1/whoami", { headers: { origin: STUDIO } });
    expect(studio.status).toBe(200);
    expect(studio.headers.get("access-control-allow-origin")).toBe(STUDIO);
    expect(studio.headers.get("access-control-expose-headers")).toContain("x-pagination-total");
  });

  it("treats the server's own pages as same-origin", async () => {
    const res = await t.fetch("/threads/search", {
      method: "POST",
      body: "{}",
      headers: { origin: t.baseUrl },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBe(t.baseUrl);
  });
});

describe("with authentication off", () => {
  let t: TestApp;
  const warnings: string[] = [];
  const log: Logger = {
    debug: () => {},
    info: () => {},
    warn: (message) => warnings.push(message),
    error: () => {},
  };
  beforeAll(async () => {
    t = await startTestApp({ auth: "none", corsOrigins: ["https://studio.example"] }, { log });
  });
  afterAll(() => t?.stop());

  async function keyCount(): Promise<number> {
    const res = await t.fetch("/api/v1/api-key", { apiKey: null });
    expect(res.status).toBe(200);
    return ((await res.json()) as unknown[]).length;
  }

  it("warns at start that authentication is off", () => {
    expect(
      warnings.some((message) => message.startsWith("authentication is off (AGENTPLANE_AUTH=none)")),
    ).toBe(true);
  });

  it("refuses an unlisted origin's preflight and its request, creating nothing", async () => {
    const before = await keyCount();
    expect((await preflight(t.baseUrl, "/api/v1/api-key", EVIL)).status).toBe(403);
    for (const contentType of ["application/json", "text/plain"]) {
      const res = await t.fetch("/api/v1/api-key", {
        apiKey: null,
        method: "POST",
        headers: { origin: EVIL, "content-type": contentType },
        body: JSON.stringify({ kind: "service", role: "admin", organization_role: "admin" }),
      });
      expect(res.status, contentType).toBe(403);
      expect(res.headers.get("access-control-allow-origin")).toBeNull();
    }
    expect(await keyCount()).toBe(before);
  });

  it("serves a configured origin and the server's own loopback pages", async () => {
    for (const origin of ["https://studio.example", t.baseUrl]) {
      const res = await t.fetch("/threads", {
        apiKey: null,
        method: "POST",
        body: "{}",
        headers: { origin },
      });
      expect(res.status, origin).toBe(200);
      expect(res.headers.get("access-control-allow-origin")).toBe(origin);
    }
  });

  it("refuses a page whose DNS name was rebound to this server", async () => {
    const port = new URL(t.baseUrl).port;
    const res = await requestWithHost(t.baseUrl, "/threads", {
      host: `rebound.example:${port}`,
      origin: `http://rebound.example:${port}`,
      "content-type": "application/json",
    });
    expect(res.status).toBe(403);
    expect(JSON.parse(res.body).detail).toContain("AGENTPLANE_CORS_ORIGINS");
  });

  it("leaves requests without Origin (curl, SDKs) alone", async () => {
    expect((await t.fetch("/threads", { apiKey: null, method: "POST", body: "{}" })).status).toBe(200);
  });
});
