/**
 * The in-server loopback client: a graph node that creates `new Client()` from
 * `@langchain/langgraph-sdk` with no URL reaches this server with its run's credentials (a token
 * minted for the attempt, stored hashed, deleted when the attempt ends), acting in the run's
 * workspace only.
 */
import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Client } from "@langchain/langgraph-sdk";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GraphFixture, writeGraphFixture } from "../support/graph-fixture.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const GRAPHS = `
import { Client } from "@langchain/langgraph-sdk";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";

const State = Annotation.Root({
  other_thread: Annotation<string | undefined>,
  other_tenant: Annotation<string | undefined>,
  thread_status: Annotation<string>,
  stored: Annotation<string>,
  other: Annotation<string>,
  tenant: Annotation<string>,
});

async function outcome(call: () => Promise<unknown>): Promise<string> {
  try {
    await call();
    return "ok";
  } catch (error) {
    return String((error as { status?: number }).status ?? (error as Error).message);
  }
}

export const graph = new StateGraph(State)
  .addNode("probe", async (state, config) => {
    const client = new Client({ callerOptions: { maxRetries: 0 } });
    const threadId = config.configurable.thread_id;
    const thread = await client.threads.get(threadId);
    await client.store.putItem(["loopback"], threadId, { from: "node" });
    const item = await client.store.getItem(["loopback"], threadId);
    const other = state.other_thread ? await outcome(() => client.threads.get(state.other_thread)) : "none";
    // Naming another workspace changes nothing: the loopback client acts in the run's.
    const named = new Client({ callerOptions: { maxRetries: 0 }, defaultHeaders: { "x-tenant-id": state.other_tenant ?? "" } });
    const seen = state.other_tenant ? (await named.threads.search({ limit: 1000 })).map((t) => t.thread_id) : [];
    const tenant = !state.other_tenant ? "none" : seen.includes(state.other_thread) ? "leaked" : seen.includes(threadId) ? "own" : "nothing";
    return { thread_status: thread.status, stored: item?.value?.from ?? "missing", other, tenant };
  })
  .addEdge(START, "probe")
  .addEdge("probe", END)
  .compile();

const Exposed = Annotation.Root({
  echo_url: Annotation<string>,
  api_url: Annotation<string>,
  other_tenant: Annotation<string>,
  own: Annotation<number>,
  other: Annotation<number>,
});

/** Starts a run of the \`leaf\` graph through the loopback client and waits for it. */
export const spawner = new StateGraph(Exposed)
  .addNode("spawn", async () => {
    const client = new Client({ callerOptions: { maxRetries: 0 } });
    await client.runs.wait(null, "leaf", { input: {} });
    return {};
  })
  .addEdge(START, "spawn")
  .addEdge("spawn", END)
  .compile();

export const leaf = new StateGraph(Exposed)
  .addNode("leaf", () => ({ own: 1 }))
  .addEdge(START, "leaf")
  .addEdge("leaf", END)
  .compile();

/** Reads its own token back through an echo server, then calls the API with it directly. */
export const exposed = new StateGraph(Exposed)
  .addNode("expose", async (state) => {
    const loopbackFetch = (globalThis as Record<symbol, typeof fetch>)[Symbol.for("langgraph_api:fetch")];
    const token = await (await loopbackFetch(state.echo_url)).text();
    const call = (tenant?: string) =>
      fetch(state.api_url + "/threads/search", {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": token, ...(tenant ? { "x-tenant-id": tenant } : {}) },
        body: "{}",
      }).then((res) => res.status);
    return { own: await call(), other: await call(state.other_tenant) };
  })
  .addEdge(START, "expose")
  .addEdge("expose", END)
  .compile();
`;

let fixture: GraphFixture;
let t: TestApp;
let sdk: Client;
let sql: postgres.Sql;

beforeAll(async () => {
  fixture = await writeGraphFixture(
    { "graphs.ts": GRAPHS },
    {
      graphs: {
        loopback: "./graphs.ts:graph",
        exposed: "./graphs.ts:exposed",
        spawner: "./graphs.ts:spawner",
        leaf: "./graphs.ts:leaf",
      },
    },
  );
  // An API key in the environment is for some other server: the loopback client must not send it.
  process.env.LANGGRAPH_API_KEY = "lsv2_not_for_this_server";
  t = await startTestApp({ graphConfigPath: fixture.configFile });
  sdk = new Client({ apiUrl: t.baseUrl, apiKey: t.adminKey, callerOptions: { maxRetries: 0 } });
  sql = postgres(t.databaseUrl, { max: 1 });
});
afterAll(async () => {
  delete process.env.LANGGRAPH_API_KEY;
  await sql?.end();
  await t?.stop();
  await fixture?.remove();
});

describe("new Client() with no URL inside a node", () => {
  it("reaches this server as the run, in the run's workspace", async () => {
    const thread = await sdk.threads.create();
    const values = (await sdk.runs.wait(thread.thread_id, "loopback", { input: {} })) as Record<
      string,
      unknown
    >;
    expect(values).toMatchObject({ thread_status: "busy", stored: "node", other: "none", tenant: "none" });
    // What the node stored is in the run's workspace.
    const item = await sdk.store.getItem(["loopback"], thread.thread_id);
    expect(item?.value).toEqual({ from: "node" });
  });

  it("cannot reach another workspace's threads, even naming that workspace", async () => {
    const other = (await t.client().iam.workspaces.createWorkspace({ displayName: "Other" })).id;
    const otherSdk = new Client({
      apiUrl: t.baseUrl,
      apiKey: t.adminKey,
      defaultHeaders: { "x-tenant-id": other },
      callerOptions: { maxRetries: 0 },
    });
    const foreign = await otherSdk.threads.create();
    const thread = await sdk.threads.create();
    const values = (await sdk.runs.wait(thread.thread_id, "loopback", {
      input: { other_thread: foreign.thread_id, other_tenant: other },
    })) as Record<string, unknown>;
    expect(values).toMatchObject({ stored: "node", other: "404", tenant: "own" });
    // Nothing the run wrote landed in the other workspace.
    expect(await otherSdk.store.getItem(["loopback"], thread.thread_id)).toBeNull();
  });

  it("uses a token stored only as a hash, gone when the run ends, refused once gone", async () => {
    const thread = await sdk.threads.create();
    await sdk.runs.wait(thread.thread_id, "loopback", { input: {} });
    // The attempt deletes its token just after the run's end is published (the run's status
    // already refuses it, below), so the row goes a moment after the wait returns.
    await expect
      .poll(async () => (await sql<{ n: number }[]>`select count(*)::int as n from agent_run_tokens`)[0]?.n)
      .toBe(0);
    const res = await t.fetch("/threads/search", {
      method: "POST",
      body: "{}",
      apiKey: `ap_rt_${"A".repeat(43)}`,
    });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { detail: string }).detail).toMatch(/run token/);
  });

  it("creates runs whose traces count in usage under the key that created its own run", async () => {
    const workspaceId = (await t.client().iam.identity.whoami({})).workspace?.id ?? "";
    const created = await t.client().iam.apiKeys.createApiKey({
      kind: "service",
      workspaceIds: [workspaceId],
      role: "editor",
      organizationRole: "viewer",
    });
    const asService = new Client({
      apiUrl: t.baseUrl,
      apiKey: created.key,
      callerOptions: { maxRetries: 0 },
    });
    await asService.runs.wait(null, "spawner", { input: {} });
    const now = Date.now();
    const search = new URLSearchParams({
      start_time: new Date(now - 3_600_000).toISOString(),
      end_time: new Date(now + 3_600_000).toISOString(),
      workspace_ids: workspaceId,
      group_by: "api_key",
    });
    // The spawner's trace and the leaf's, once their records are written (in the background).
    await expect
      .poll(async () => {
        const res = await t.fetch(`/api/v1/orgs/current/billing/granular-usage?${search}`);
        const { usage } = (await res.json()) as {
          usage: { dimensions: { api_key_short_key: string | null }; traces: number }[];
        };
        return usage.filter((r) => r.dimensions.api_key_short_key === created.shortKey).map((r) => r.traces);
      })
      .toEqual([2]);
  });

  it("acts only in the run's workspace at the authenticator, and only while the run runs", async () => {
    // An echo server: answers the x-api-key the loopback fetch sent, and keeps it.
    const seen: string[] = [];
    const echo: Server = createServer((req, res) => {
      const key = String(req.headers["x-api-key"] ?? "");
      seen.push(key);
      res.end(key);
    });
    await new Promise<void>((resolve) => echo.listen(0, "127.0.0.1", resolve));
    try {
      const other = (await t.client().iam.workspaces.createWorkspace({ displayName: "Elsewhere" })).id;
      const thread = await sdk.threads.create();
      const values = (await sdk.runs.wait(thread.thread_id, "exposed", {
        input: {
          echo_url: `http://127.0.0.1:${(echo.address() as AddressInfo).port}/`,
          api_url: t.baseUrl,
          other_tenant: other,
        },
      })) as Record<string, unknown>;
      expect(values).toMatchObject({ own: 200, other: 403 });
      const token = seen[0] ?? "";
      expect(token).toMatch(/^ap_rt_[A-Za-z0-9_-]{43}$/);
      // Only its hash was stored, and the attempt deleted even that when it ended.
      const hash = createHash("sha256").update(token).digest();
      await expect
        .poll(async () => (await sql`select 1 from agent_run_tokens where token_hash = ${hash}`).length)
        .toBe(0);
      const after = await t.fetch("/threads/search", { method: "POST", body: "{}", apiKey: token });
      expect(after.status).toBe(401);
    } finally {
      await new Promise((resolve) => echo.close(resolve));
    }
  });
});
