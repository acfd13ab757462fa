/**
 * Custom auth on the agent protocols, through their official clients: A2A (`@a2a-js/sdk`) and MCP
 * (`@modelcontextprotocol/sdk`) as two JWT users, each running only on what they may see and
 * seeing only their own tasks, threads and assistant tools; a caller without a token answered with
 * the handler's 401 and headers; and Studio's `x-auth-scheme: langsmith` with
 * `auth.disable_studio_auth` false (this server) and true (a second server on the same database).
 */
import { fileURLToPath } from "node:url";
import type { Message, Task } from "@a2a-js/sdk";
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from "@a2a-js/sdk/client";
import { Client } from "@langchain/langgraph-sdk";
import { Client as McpClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signHs256 } from "../../examples/custom-auth/hs256-jwt.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const FIXTURES = new URL("./fixtures/custom-auth-assistants/", import.meta.url);
const GRAPHS = fileURLToPath(new URL("agentplane.json", FIXTURES));
const STUDIO_DISABLED = fileURLToPath(new URL("studio-auth-disabled.json", FIXTURES));
const SECRET = "custom-auth-assistants-secret-0123456789";
const token = (sub: string) => signHs256({ sub, exp: Math.floor(Date.now() / 1000) + 3600 }, SECRET);
const bearer = (sub: string) => ({ Authorization: `Bearer ${token(sub)}` });

let t: TestApp;
let seq = 0;

beforeAll(async () => {
  t = await startTestApp({ graphConfigPath: GRAPHS });
}, 120_000);
afterAll(async () => {
  await t?.stop();
});

const lg = (sub: string) =>
  new Client({
    apiUrl: t.baseUrl,
    apiKey: null,
    defaultHeaders: bearer(sub),
    callerOptions: { maxRetries: 0 },
  });

/** `fetch` that adds `headers` to every request. */
const fetchWith =
  (headers: Record<string, string>): typeof fetch =>
  (input, init) => {
    const merged = new Headers(init?.headers);
    for (const [name, value] of Object.entries(headers)) merged.set(name, value);
    return fetch(input, { ...init, headers: merged });
  };

/** An `@a2a-js/sdk` client of an assistant for a JWT user, built from its agent card. */
function a2aAs(sub: string, assistant: string) {
  const fetchImpl = fetchWith(bearer(sub));
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  });
  return factory.createFromUrl(
    t.baseUrl,
    `/.well-known/agent-card.json?assistant_id=${encodeURIComponent(assistant)}`,
  );
}

/** An MCP client (the official SDK's) on `/mcp` for a JWT user. */
async function mcpAs(sub: string): Promise<McpClient> {
  const client = new McpClient({ name: "custom-auth-test", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL("/mcp", t.baseUrl), { requestInit: { headers: bearer(sub) } }),
  );
  return client;
}

function userMessage(text: string, extra: Partial<Message> = {}): Message {
  seq += 1;
  return { kind: "message", messageId: `m-${seq}`, role: "user", parts: [{ kind: "text", text }], ...extra };
}

describe("A2A as custom users", () => {
  it("runs each user's tasks on their own threads, and hides them from the other user", async () => {
    const alice = await a2aAs("alice", "agent");
    const task = (await alice.sendMessage({ message: userMessage("hello") })) as Task;
    expect(task.kind).toBe("task");
    expect(task.status.state).toBe("completed");
    // The task's context is a thread of alice's, stamped by her threads:create_run handler.
    expect((await lg("alice").threads.get(task.contextId)).metadata).toMatchObject({ owner: "alice" });
    expect((await alice.getTask({ id: task.id })).status.state).toBe("completed");

    const bob = await a2aAs("bob", "agent");
    await expect(bob.getTask({ id: task.id })).rejects.toThrow(/not found/i);
    // Another user's context collides without showing anything of it.
    await expect(
      bob.sendMessage({ message: userMessage("mine now", { contextId: task.contextId }) }),
    ).rejects.toThrow(`thread ${task.contextId} already exists`);
    const bobs = (await bob.sendMessage({ message: userMessage("hi") })) as Task;
    expect(bobs.contextId).not.toBe(task.contextId);
    expect((await lg("bob").threads.search()).map((x) => x.thread_id)).toEqual([bobs.contextId]);
    expect((await lg("alice").threads.search()).map((x) => x.thread_id)).toEqual([task.contextId]);
  });

  it("serves an assistant's card only to the users who may read it", async () => {
    const hers = await lg("alice").assistants.create({ graphId: "agent", name: "alice-a2a" });
    const card = (sub: string) =>
      fetch(`${t.baseUrl}/.well-known/agent-card.json?assistant_id=${hers.assistant_id}`, {
        headers: bearer(sub),
      });
    expect((await card("alice")).status).toBe(200);
    expect((await card("bob")).status).toBe(404);
    const rpc = await fetch(`${t.baseUrl}/a2a/${hers.assistant_id}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...bearer("bob") },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "message/send",
        params: { message: userMessage("x") },
      }),
    });
    expect(rpc.status).toBe(404);
  });

  it("answers a caller without a token with the handler's 401 and headers", async () => {
    const card = await fetch(`${t.baseUrl}/.well-known/agent-card.json?assistant_id=agent`);
    expect(card.status).toBe(401);
    expect(card.headers.get("www-authenticate")).toBe('Bearer realm="assistants-test"');
    const rpc = await fetch(`${t.baseUrl}/a2a/agent`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tasks/get", params: { id: "x" } }),
    });
    expect(rpc.status).toBe(401);
    expect(rpc.headers.get("www-authenticate")).toBe('Bearer realm="assistants-test"');
  });
});

describe("MCP as custom users", () => {
  it("lists each user's own assistants as tools (the system ones fail their filter), and runs only those", async () => {
    await lg("carol").assistants.create({ graphId: "agent", name: "carol-tool" });
    await lg("dave").assistants.create({ graphId: "agent", name: "dave-tool" });
    const carol = await mcpAs("carol");
    const dave = await mcpAs("dave");
    try {
      expect((await carol.listTools()).tools.map((x) => x.name).sort()).toEqual(["carol-tool"]);
      expect((await dave.listTools()).tools.map((x) => x.name).sort()).toEqual(["dave-tool"]);
      const ran = await carol.callTool({
        name: "carol-tool",
        arguments: { messages: [{ role: "human", content: "what time is it?" }] },
      });
      expect(ran.isError).toBeFalsy();
      expect((ran.content as { text: string }[])[0]?.text).toMatch(/^The time is/);
      await expect(dave.callTool({ name: "carol-tool", arguments: {} })).rejects.toThrow(
        /tool "carol-tool" not found/,
      );
      // A tool call is a stateless run: it leaves the user no thread.
      expect(await lg("carol").threads.count()).toBe(0);
    } finally {
      await carol.close();
      await dave.close();
    }
  });

  it("answers a caller without a token with the handler's 401 and headers", async () => {
    const res = await fetch(`${t.baseUrl}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
    });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe('Bearer realm="assistants-test"');
  });
});

describe("Studio (x-auth-scheme: langsmith)", () => {
  /** Threads a request counts with Studio's header, an API key and erin's JWT. */
  const studioCount = (app: TestApp, withKey: boolean) =>
    app.fetch("/threads/count", {
      method: "POST",
      body: "{}",
      apiKey: withKey ? app.adminKey : null,
      headers: { "x-auth-scheme": "langsmith", ...bearer("erin") },
    });
  let disabled: TestApp;
  beforeAll(async () => {
    await lg("erin").threads.create();
    disabled = await startTestApp({
      graphConfigPath: STUDIO_DISABLED,
      databaseUrl: t.databaseUrl,
      bootstrapApiKey: t.adminKey,
      customAuth: { apiKeys: "deny", workspaceId: undefined, role: "editor" },
    });
  }, 120_000);
  afterAll(async () => {
    await disabled?.stop();
  });

  it("with disable_studio_auth false, a valid key with the header acts as Studio's user (no handler filters)", async () => {
    const studio = await studioCount(t, true);
    expect(studio.status).toBe(200);
    expect(await studio.json()).toBeGreaterThan(1);
    // Without a key the header proves nothing: the request is erin's.
    const noKey = await studioCount(t, false);
    expect(await noKey.json()).toBe(1);
  });

  it("with disable_studio_auth true, the same request goes through authenticate and the handlers", async () => {
    const asErin = await studioCount(disabled, true);
    expect(asErin.status).toBe(200);
    expect(await asErin.json()).toBe(1);
    const keyOnly = await disabled.fetch("/threads/count", {
      method: "POST",
      body: "{}",
      headers: { "x-auth-scheme": "langsmith" },
    });
    expect(keyOnly.status).toBe(401);
    expect(keyOnly.headers.get("www-authenticate")).toBe('Bearer realm="assistants-test"');
  });
});
