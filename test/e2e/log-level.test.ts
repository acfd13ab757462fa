/**
 * The log level changed while the server runs (`GET`/`PUT /internal/log-level`), through plain
 * fetch: the access log stops and starts with it on REST and Connect, the change is logged with the
 * key that made it, and only the installation's admin may read or change it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../server/logger.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

type Line = Record<string, unknown>;

const lines: Line[] = [];
let t: TestApp;
beforeAll(async () => {
  const log = createLogger("info", (line) => lines.push(JSON.parse(line) as Line));
  t = await startTestApp({ logLevel: "info" }, { log });
});
afterAll(() => t?.stop());

async function putLevel(body: string, apiKey?: string | null): Promise<Response> {
  return t.fetch("/internal/log-level", {
    method: "PUT",
    body,
    headers: { "content-type": "application/json" },
    ...(apiKey === undefined ? {} : { apiKey }),
  });
}

/** A REST and a Connect call, each with a request id made of `tag`. */
async function callBoth(tag: string): Promise<void> {
  const rest = await t.fetch("/api/v1/whoami", { headers: { "x-request-id": `${tag}-rest` } });
  expect(rest.status).toBe(200);
  const rpc = await fetch(`${t.baseUrl}/agentplane.iam.v1.IdentityService/Whoami`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": t.adminKey, "x-request-id": `${tag}-rpc` },
    body: "{}",
  });
  expect(rpc.status).toBe(200);
  expect(rpc.headers.get("x-request-id")).toBe(`${tag}-rpc`);
}

/** Waits until an access line with this request id is written (it is, once the response closes). */
async function accessLine(requestId: string): Promise<Line> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const found = lines.find((line) => line.message === "request" && line.requestId === requestId);
    if (found) return found;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no access line for request ${requestId}`);
}

describe("/internal/log-level", () => {
  it("switches the access log off and on again without a restart", async () => {
    const read = await t.fetch("/internal/log-level");
    expect(read.status).toBe(200);
    expect(await read.json()).toEqual({ level: "info" });

    await callBoth("before");
    expect(await accessLine("before-rpc")).toMatchObject({ status: 200, level: "info" });
    // The server's logger writes access lines as bytes (json-bytes.ts): the same JSON, key for key.
    const rest = await accessLine("before-rest");
    expect(Object.keys(rest)).toEqual([
      "time",
      "level",
      "message",
      "method",
      "route",
      "status",
      "durationMs",
      "workspaceId",
      "requestId",
    ]);
    expect(rest).toEqual({
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      level: "info",
      message: "request",
      method: "GET",
      route: "/api/v1/whoami",
      status: 200,
      durationMs: expect.any(Number),
      workspaceId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      requestId: "before-rest",
    });

    const quiet = await putLevel('{"level": "error"}');
    expect(quiet.status).toBe(200);
    expect(await quiet.json()).toEqual({ level: "error", previous: "info" });
    expect(await (await t.fetch("/internal/log-level")).json()).toEqual({ level: "error" });
    await callBoth("quiet");

    const loud = await putLevel('{"level": "info"}');
    expect(await loud.json()).toEqual({ level: "info", previous: "error" });
    await callBoth("after");
    await accessLine("after-rest");
    await accessLine("after-rpc");
    // The quiet calls' responses closed before the level went back to info, and every line of a
    // request is written when its response closes: none was.
    expect(lines.filter((line) => String(line.requestId).startsWith("quiet-"))).toEqual([]);

    // Each change is logged by whichever of its two levels writes info lines: the first before the
    // level went to error, the second after it came back.
    expect(lines.filter((line) => line.message === "log level changed")).toEqual([
      expect.objectContaining({
        level: "info",
        newLevel: "error",
        previousLevel: "info",
        apiKeyId: expect.any(String),
      }),
      expect.objectContaining({
        level: "info",
        newLevel: "info",
        previousLevel: "error",
        apiKeyId: expect.any(String),
      }),
    ]);
  });

  it("marks the line of a response cut off by its client as incomplete", async () => {
    const created = await t.fetch("/threads", { method: "POST", body: "{}" });
    const { thread_id: threadId } = (await created.json()) as { thread_id: string };
    const abort = new AbortController();
    const stream = await t.fetch(`/threads/${threadId}/stream`, {
      headers: { "x-request-id": "cut-off" },
      signal: abort.signal,
    });
    expect(stream.status).toBe(200);
    abort.abort();
    const line = await accessLine("cut-off");
    expect(line).toMatchObject({ route: "/threads/{thread_id}/stream", status: 200, incomplete: true });
    expect(Object.keys(line).at(-1)).toBe("incomplete");
    expect((await accessLine("after-rest")).incomplete).toBeUndefined();
  });

  it("refuses a viewer's key (403), no key (401), bad bodies and queries (422), DELETE (405)", async () => {
    const viewer = await t.client().iam.apiKeys.createApiKey({
      kind: "service",
      role: "viewer",
      organizationRole: "viewer",
    });
    const denied = await putLevel('{"level": "debug"}', viewer.key);
    expect(denied.status).toBe(403);
    expect(await denied.json()).toEqual({
      detail: "permission denied: the log level needs an admin key of the installation's organization",
    });
    expect((await t.fetch("/internal/log-level", { apiKey: viewer.key })).status).toBe(403);
    expect((await putLevel('{"level": "debug"}', null)).status).toBe(401);

    const refusals: [string, string][] = [
      ['{"level": "loud"}', 'level must be one of debug, info, warn, error; got "loud"'],
      ["{}", "level is required: one of debug, info, warn, error"],
      ['{"level": "info", "extra": 1}', 'unknown field "extra"; the body takes only "level"'],
      ['{"level": 3}', "level must be a string"],
      ['["info"]', 'the body must be a JSON object such as {"level": "error"}'],
      ["", 'the body must be a JSON object such as {"level": "error"}'],
    ];
    for (const [body, detail] of refusals) {
      const res = await putLevel(body);
      expect(res.status, body).toBe(422);
      expect(await res.json(), body).toEqual({ detail });
    }
    expect((await putLevel("{level")).status).toBe(400);
    expect((await t.fetch("/internal/log-level?level=debug")).status).toBe(422);
    const wrong = await t.fetch("/internal/log-level", { method: "DELETE" });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get("allow")).toBe("GET, PUT, HEAD");
    // Nothing refused changed the level.
    expect(await (await t.fetch("/internal/log-level")).json()).toEqual({ level: "info" });
  });
});
