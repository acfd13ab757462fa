/**
 * Custom auth (`auth.path` of the graphs file) through real clients: the official LangGraph SDK
 * as two JWT users, each seeing only their own threads, runs, crons and store items; a caller
 * without a token answered with the handler's 401 and headers; the same isolation over gRPC and
 * Connect; API keys as operator access; and bad handler results answered with a clear error.
 */
import { fileURLToPath } from "node:url";
import { createClient as createRpcClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signHs256 } from "../../examples/custom-auth/hs256-jwt.js";
import { ThreadService } from "../../gen/agentplane/agents/v1/thread_service_pb.js";
import { createClient } from "../../sdk/index.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const GRAPHS = fileURLToPath(new URL("./fixtures/custom-auth/agentplane.json", import.meta.url));
const SECRET = "custom-auth-test-secret-0123456789abcdef";
const token = (sub: string) => signHs256({ sub, exp: Math.floor(Date.now() / 1000) + 3600 }, SECRET);

let t: TestApp;
let alice: Client;
let bob: Client;
const lg = (sub: string) =>
  new Client({
    apiUrl: t.baseUrl,
    apiKey: null,
    defaultHeaders: { Authorization: `Bearer ${token(sub)}` },
    callerOptions: { maxRetries: 0 },
  });

beforeAll(async () => {
  t = await startTestApp({ graphConfigPath: GRAPHS });
  alice = lg("alice");
  bob = lg("bob");
}, 120_000);
afterAll(async () => {
  await t?.stop();
});

/** Status of a rejected SDK call. */
async function statusOf(call: Promise<unknown>): Promise<number | undefined> {
  try {
    await call;
    return 200;
  } catch (error) {
    return (error as { status?: number }).status;
  }
}

describe("custom auth over REST with the official SDK", () => {
  it("answers a caller without a token with the handler's 401 and its headers", async () => {
    const res = await fetch(`${t.baseUrl}/threads/search`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe('Bearer realm="agentplane-test"');
    expect(await res.json()).toEqual({ detail: "send a JWT in the Authorization header" });
    const stream = await fetch(`${t.baseUrl}/threads/00000000-0000-4000-8000-000000000000/stream`);
    expect(stream.status).toBe(401);
    expect(stream.headers.get("www-authenticate")).toBe('Bearer realm="agentplane-test"');
  });

  it("keeps each user's threads, runs and streams their own", async () => {
    const a = await alice.threads.create({ metadata: { topic: "a" } });
    const b = await bob.threads.create({ metadata: { topic: "b" } });
    expect(a.metadata).toMatchObject({ owner: "alice", topic: "a" });
    expect(b.metadata).toMatchObject({ owner: "bob" });

    const aliceSees = await alice.threads.search({ limit: 100 });
    expect(aliceSees.map((x) => x.thread_id)).toEqual([a.thread_id]);
    expect(await alice.threads.count()).toBe(1);
    expect(await bob.threads.count()).toBe(1);

    expect(await statusOf(bob.threads.get(a.thread_id))).toBe(404);
    expect(await statusOf(bob.threads.getState(a.thread_id))).toBe(404);
    expect(await statusOf(bob.threads.getHistory(a.thread_id))).toBe(404);
    // As the LangGraph JS server answers it: 409, for another's thread and a missing one alike.
    expect(await statusOf(bob.threads.copy(a.thread_id))).toBe(409);
    expect(await statusOf(bob.threads.copy(crypto.randomUUID()))).toBe(409);
    expect(await statusOf(bob.threads.update(a.thread_id, { metadata: { owner: "bob" } }))).toBe(404);
    expect(await statusOf(bob.threads.delete(a.thread_id))).toBe(404);
    // Another user's thread id on create collides, without showing the thread.
    expect(await statusOf(bob.threads.create({ threadId: a.thread_id, ifExists: "do_nothing" }))).toBe(409);

    const copy = await alice.threads.copy(a.thread_id);
    expect(copy.metadata).toMatchObject({ owner: "alice" });

    const run = await alice.runs.wait(a.thread_id, "agent", {
      input: { messages: [{ role: "user", content: "hi" }] },
    });
    expect(run).toBeTruthy();
    const runs = await alice.runs.list(a.thread_id);
    expect(runs).toHaveLength(1);
    expect(runs[0]?.metadata).toMatchObject({ owner: "alice" });
    const runId = runs[0]?.run_id as string;
    expect(await statusOf(bob.runs.list(a.thread_id))).toBe(404);
    expect(await statusOf(bob.runs.get(a.thread_id, runId))).toBe(404);
    expect(await statusOf(bob.runs.join(a.thread_id, runId))).toBe(404);
    expect(await statusOf(bob.runs.create(a.thread_id, "agent", { input: {} }))).toBe(404);

    // Join stream and thread stream: the owner streams, the other user is not found.
    const joined: string[] = [];
    for await (const part of alice.runs.joinStream(a.thread_id, runId)) joined.push(part.event);
    const refused = await fetch(`${t.baseUrl}/threads/${a.thread_id}/runs/${runId}/stream`, {
      headers: { Authorization: `Bearer ${token("bob")}` },
    });
    expect(refused.status).toBe(404);
    const threadStream = await fetch(`${t.baseUrl}/threads/${a.thread_id}/stream`, {
      headers: { Authorization: `Bearer ${token("bob")}` },
    });
    expect(threadStream.status).toBe(404);

    await alice.threads.delete(copy.thread_id);
    expect(await alice.threads.count()).toBe(1);
  });

  it("stateless runs work for custom users", async () => {
    const out = await alice.runs.wait(null, "agent", {
      input: { messages: [{ role: "user", content: "x" }] },
    });
    expect(out).toBeTruthy();
  });

  it("keeps each user's crons their own", async () => {
    const thread = await alice.threads.create();
    const cron = await alice.crons.createForThread(thread.thread_id, "agent", { schedule: "0 0 1 1 *" });
    expect(
      await statusOf(bob.crons.createForThread(thread.thread_id, "agent", { schedule: "0 0 1 1 *" })),
    ).toBe(404);
    const mine = await alice.crons.search({});
    expect(mine.map((c) => c.cron_id)).toEqual([cron.cron_id]);
    expect(await bob.crons.search({})).toEqual([]);
    expect(await bob.crons.count({})).toBe(0);
    expect(await alice.crons.count({})).toBe(1);
    expect(await statusOf(bob.crons.delete(cron.cron_id))).toBe(404);
    await alice.crons.delete(cron.cron_id);
  });

  it("keeps each user's store items under their own namespace", async () => {
    await alice.store.putItem(["notes"], "k", { text: "alice's" });
    await bob.store.putItem(["notes"], "k", { text: "bob's" });
    expect((await alice.store.getItem(["notes"], "k"))?.value).toEqual({ text: "alice's" });
    expect((await bob.store.getItem(["notes"], "k"))?.value).toEqual({ text: "bob's" });
    const found = await alice.store.searchItems(["notes"]);
    expect(found.items.map((i) => i.value)).toEqual([{ text: "alice's" }]);
    await bob.store.deleteItem(["notes"], "k");
    expect((await alice.store.getItem(["notes"], "k"))?.value).toEqual({ text: "alice's" });
  });

  it("API keys still work as operator access and see every user's threads", async () => {
    const res = await t.fetch("/threads/search", { method: "POST", body: JSON.stringify({ limit: 100 }) });
    expect(res.status).toBe(200);
    const owners = new Set(
      ((await res.json()) as { metadata: { owner?: string } }[]).map((x) => x.metadata.owner),
    );
    expect(owners).toEqual(new Set(["alice", "bob"]));
  });

  it("keeps users apart when their concurrent reads go to Postgres together", async () => {
    // Users of their own: later tests count carol's and dave's threads.
    const erin = lg("erin");
    const frank = lg("frank");
    const own = await Promise.all(
      [erin, frank].flatMap((user) => [0, 1, 2].map(() => user.threads.create({ metadata: {} }))),
    );
    // Every user asks for every thread at once: the server batches lookups in flight together.
    const asks = [erin, frank].flatMap((user, u) =>
      own.map(async (thread, i) => ({
        mine: Math.floor(i / 3) === u,
        id: thread.thread_id,
        answer: await user.threads.get(thread.thread_id).then(
          (found) => found.thread_id,
          (error: { status?: number }) => error.status,
        ),
      })),
    );
    for (const { mine, id, answer } of await Promise.all(asks)) expect(answer).toBe(mine ? id : 404);
  });
});

describe("bad handler results", () => {
  const search = async (sub: string) => {
    const res = await fetch(`${t.baseUrl}/threads/search`, {
      method: "POST",
      headers: { "content-type": "application/json", Authorization: `Bearer ${sub}` },
      body: "{}",
    });
    return { status: res.status, headers: res.headers, body: (await res.json()) as { detail: string } };
  };

  it("answers an unknown operator, an oversized $or and a throwing handler with 403 naming the handler", async () => {
    const unknown = await search(token("bad-operator"));
    expect(unknown.status).toBe(403);
    expect(unknown.body.detail).toBe(
      "the auth handler for threads:search returned an invalid filter: filter.owner: unknown operator $ne; use $eq or $contains",
    );
    const big = await search(token("big-or"));
    expect(big.status).toBe(403);
    expect(big.body.detail).toMatch(
      /threads:search returned an invalid filter: filter\.\$or must be an array of 1 to 10/,
    );
    const array = await search(token("not-an-object"));
    expect(array.status).toBe(403);
    expect(array.body.detail).toBe(
      "the auth handler for threads:search returned an invalid filter: filter must be an object, got an array",
    );
    const thrown = await search(token("thrower"));
    expect(thrown.status).toBe(403);
    expect(thrown.body.detail).toBe(
      "the auth handler for threads:search failed (the server log has its error)",
    );
  });

  it("answers an HTTPException of a handler with its status and headers", async () => {
    const teapot = await search(token("teapot"));
    expect(teapot.status).toBe(418);
    expect(teapot.headers.get("x-teapot")).toBe("short");
    expect(teapot.body).toEqual({ detail: "no threads for teapots" });
  });

  it("answers authenticate returning no user with 401 saying so", async () => {
    const bad = await search("not-a-user");
    expect(bad.status).toBe(401);
    expect(bad.body.detail).toMatch(/the auth handler returned number/);
  });
});

describe("custom auth over gRPC and Connect", () => {
  const bearer = (sub: string) => ({
    interceptors: [
      // biome-ignore lint/suspicious/noExplicitAny: an interceptor passes any request through
      (next: any) => async (req: any) => {
        req.header.set("authorization", `Bearer ${token(sub)}`);
        return next(req);
      },
    ],
  });

  it("isolates users over Connect (the sdk) and gRPC", async () => {
    const carol = createClient({ baseUrl: t.baseUrl, ...bearer("carol") });
    const dave = createClient({ baseUrl: t.baseUrl, ...bearer("dave") });
    const created = await carol.agents.threads.createThread({});
    expect(created.metadata).toMatchObject({ owner: "carol" });
    await expect(dave.agents.threads.getThread({ threadId: created.threadId })).rejects.toMatchObject({
      code: 5,
    });
    expect((await dave.agents.threads.countThreads({})).count).toBe(0);
    expect((await carol.agents.threads.countThreads({})).count).toBe(1);

    const grpc = createGrpcTransport({ baseUrl: t.baseUrl, ...bearer("dave") });
    const daveGrpc = createRpcClient(ThreadService, grpc);
    await expect(daveGrpc.getThread({ threadId: created.threadId })).rejects.toMatchObject({ code: 5 });
    expect((await daveGrpc.searchThreads({})).threads).toEqual([]);
    const carolGrpc = createRpcClient(
      ThreadService,
      createGrpcTransport({ baseUrl: t.baseUrl, ...bearer("carol") }),
    );
    expect((await carolGrpc.searchThreads({})).threads.map((x) => x.threadId)).toEqual([created.threadId]);

    const anonymous = createRpcClient(ThreadService, createGrpcTransport({ baseUrl: t.baseUrl }));
    await expect(anonymous.countThreads({})).rejects.toMatchObject({ code: 16 });
  });
});

describe("API keys and Studio with AGENTPLANE_CUSTOM_AUTH_API_KEYS=deny (a second server on the same database)", () => {
  let denying: TestApp;
  beforeAll(async () => {
    denying = await startTestApp({
      graphConfigPath: GRAPHS,
      databaseUrl: t.databaseUrl,
      bootstrapApiKey: t.adminKey,
      customAuth: { apiKeys: "deny", workspaceId: undefined, role: "editor" },
    });
  }, 120_000);
  afterAll(async () => {
    await denying?.stop();
  });

  it("sends key requests to the handler, lets Studio in with a key, and keeps users apart across servers", async () => {
    const byKey = await denying.fetch("/threads/search", { method: "POST", body: "{}" });
    expect(byKey.status).toBe(401);
    expect(byKey.headers.get("www-authenticate")).toBe('Bearer realm="agentplane-test"');
    const studio = await denying.fetch("/threads/count", {
      method: "POST",
      body: "{}",
      headers: { "x-auth-scheme": "langsmith" },
    });
    expect(studio.status).toBe(200);
    expect(await studio.json()).toBeGreaterThan(1);
    // A thread alice made on the first server is hers on the second too, and hidden from bob there.
    const a = await alice.threads.create();
    const bobHere = new Client({
      apiUrl: denying.baseUrl,
      apiKey: null,
      defaultHeaders: { Authorization: `Bearer ${token("bob")}` },
      callerOptions: { maxRetries: 0 },
    });
    expect(await statusOf(bobHere.threads.get(a.thread_id))).toBe(404);
    const aliceHere = new Client({
      apiUrl: denying.baseUrl,
      apiKey: null,
      defaultHeaders: { Authorization: `Bearer ${token("alice")}` },
      callerOptions: { maxRetries: 0 },
    });
    expect((await aliceHere.threads.get(a.thread_id)).metadata).toMatchObject({ owner: "alice" });
  });
});
