/**
 * Custom auth's `assistants:*` handlers through real clients: the official LangGraph SDK, our sdk
 * over Connect and a gRPC client as JWT users who each own the assistants they create. Other users'
 * assistants read 404 in every assistant RPC and never appear in search or count; runs and crons
 * cannot reach them; system assistants are filtered like any assistant (hidden from users whose
 * filter they fail, as on the LangGraph JS server) yet every graph still runs by its graph id;
 * handlers pick by the documented priority; bad handler results answer
 * 403 naming the handler, and the log names it too.
 */
import { fileURLToPath } from "node:url";
import { createClient as createRpcClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signHs256 } from "../../examples/custom-auth/hs256-jwt.js";
import { AssistantService } from "../../gen/agentplane/agents/v1/assistant_service_pb.js";
import { createClient } from "../../sdk/index.js";
import { createLogger } from "../../server/logger.js";
import { systemAssistantId } from "../../server/runtime/system-assistant-id.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const GRAPHS = fileURLToPath(new URL("./fixtures/custom-auth-assistants/agentplane.json", import.meta.url));
const SECRET = "custom-auth-assistants-secret-0123456789";
const token = (sub: string) => signHs256({ sub, exp: Math.floor(Date.now() / 1000) + 3600 }, SECRET);
const SYSTEM = systemAssistantId("agent");

let t: TestApp;
const logLines: string[] = [];
const lg = (sub: string) =>
  new Client({
    apiUrl: t.baseUrl,
    apiKey: null,
    defaultHeaders: { Authorization: `Bearer ${token(sub)}` },
    callerOptions: { maxRetries: 0 },
  });

beforeAll(async () => {
  t = await startTestApp(
    { graphConfigPath: GRAPHS },
    { log: createLogger("error", (line) => logLines.push(line)) },
  );
}, 120_000);
afterAll(async () => {
  await t?.stop();
});

/** Status of a rejected SDK call (200 when it succeeded). */
async function statusOf(call: Promise<unknown>): Promise<number | undefined> {
  try {
    await call;
    return 200;
  } catch (error) {
    return (error as { status?: number }).status;
  }
}

describe("assistants per user over REST with the official SDK", () => {
  it("stamps the owner on create and hides other users' assistants from every read, write, search and count", async () => {
    const alice = lg("alice");
    const bob = lg("bob");
    const mine = await alice.assistants.create({
      graphId: "agent",
      name: "alice's",
      metadata: { topic: "a" },
    });
    const bobs = await bob.assistants.create({ graphId: "agent", name: "bob's" });
    expect(mine.metadata).toEqual({ topic: "a", owner: "alice" });
    expect(bobs.metadata).toEqual({ owner: "bob" });

    // Search and count: their own only; the graph's system assistant has no owner, so the
    // filter hides it as the LangGraph JS server does.
    const seen = await alice.assistants.search({ limit: 100 });
    expect(seen.map((a) => a.assistant_id)).toEqual([mine.assistant_id]);
    expect(await alice.assistants.count()).toBe(1);
    expect(await bob.assistants.count()).toBe(1);
    expect(await bob.assistants.count({ metadata: { topic: "a" } })).toBe(0);
    expect(await alice.assistants.count({ metadata: { topic: "a" } })).toBe(1);

    const id = mine.assistant_id;
    expect(await statusOf(bob.assistants.get(id))).toBe(404);
    expect(await statusOf(bob.assistants.getGraph(id))).toBe(404);
    expect(await statusOf(bob.assistants.getSchemas(id))).toBe(404);
    expect(await statusOf(bob.assistants.getSubgraphs(id))).toBe(404);
    expect(await statusOf(bob.assistants.getVersions(id))).toBe(404);
    expect(await statusOf(bob.assistants.update(id, { metadata: { owner: "bob" } }))).toBe(404);
    expect(await statusOf(bob.assistants.setLatest(id, 1))).toBe(404);
    expect(await statusOf(bob.assistants.delete(id))).toBe(404);
    // Another user's id on create collides without showing the assistant.
    expect(
      await statusOf(bob.assistants.create({ graphId: "agent", assistantId: id, ifExists: "do_nothing" })),
    ).toBe(409);
    expect(
      (await alice.assistants.create({ graphId: "agent", assistantId: id, ifExists: "do_nothing" })).name,
    ).toBe("alice's");

    // The owner reads and changes it; the handler stamps the update and keeps the owner.
    expect((await alice.assistants.get(id)).name).toBe("alice's");
    expect(await alice.assistants.getSchemas(id)).toMatchObject({ graph_id: "agent" });
    const updated = await alice.assistants.update(id, { metadata: { topic: "b" } });
    expect(updated.metadata).toEqual({ topic: "b", owner: "alice", edited_by: "alice" });
    expect((await alice.assistants.getVersions(id)).map((v) => v.version)).toEqual([2, 1]);
    expect((await alice.assistants.setLatest(id, 1)).metadata).toEqual({ topic: "a", owner: "alice" });

    // An operator's API key is not filtered.
    const res = await t.fetch("/assistants/count", { method: "POST", body: "{}" });
    expect(await res.json()).toBe(3);
  });

  it("hides a graph's system assistant from users its filter fails, runs the graph by id for them, and lets no user change it", async () => {
    const bob = lg("bob");
    expect(await statusOf(bob.assistants.get("agent"))).toBe(404);
    expect(await statusOf(bob.assistants.get(SYSTEM))).toBe(404);
    expect(await statusOf(bob.assistants.getGraph("agent"))).toBe(404);
    expect(await statusOf(bob.assistants.getSchemas("agent"))).toBe(404);
    expect(await statusOf(bob.assistants.getVersions("agent"))).toBe(404);
    // The operator still reads it.
    expect((await (await t.fetch(`/assistants/${SYSTEM}`)).json()) as object).toMatchObject({
      metadata: { created_by: "system" },
    });
    expect(await statusOf(bob.assistants.update("agent", { metadata: { owner: "bob" } }))).toBe(404);
    expect(await statusOf(bob.assistants.setLatest(SYSTEM, 1))).toBe(404);
    expect(await statusOf(bob.assistants.delete(SYSTEM))).toBe(404);
    const out = await bob.runs.wait(null, "agent", {
      input: { messages: [{ role: "user", content: "hi" }] },
    });
    expect(out).toBeTruthy();
  });

  it("keeps runs and crons off assistants the caller cannot read", async () => {
    const alice = lg("alice");
    const bob = lg("bob");
    const hers = await alice.assistants.create({ graphId: "agent", name: "private" });
    const thread = await bob.threads.create();
    const input = { messages: [{ role: "user", content: "x" }] };
    expect(await statusOf(bob.runs.wait(null, hers.assistant_id, { input }))).toBe(404);
    expect(await statusOf(bob.runs.create(thread.thread_id, hers.assistant_id, { input }))).toBe(404);
    expect(await statusOf(bob.runs.wait(thread.thread_id, hers.assistant_id, { input }))).toBe(404);
    expect(
      await statusOf(
        bob.crons.createForThread(thread.thread_id, hers.assistant_id, { schedule: "0 0 1 1 *" }),
      ),
    ).toBe(404);
    expect(await statusOf(bob.crons.create(hers.assistant_id, { schedule: "0 0 1 1 *" }))).toBe(404);
    // The owner runs it.
    const mine = await alice.threads.create();
    expect(await alice.runs.wait(mine.thread_id, hers.assistant_id, { input })).toBeTruthy();
  });

  it("deletes with delete_threads only the threads the caller's threads:delete handler lets it delete", async () => {
    const alice = lg("alice");
    const hers = await alice.assistants.create({ graphId: "agent", name: "to delete" });
    const metadata = { assistant_id: hers.assistant_id };
    const own = await alice.threads.create({ metadata });
    const operators = await t.fetch("/threads", { method: "POST", body: JSON.stringify({ metadata }) });
    const operatorThread = ((await operators.json()) as { thread_id: string }).thread_id;
    await alice.assistants.delete(hers.assistant_id, { deleteThreads: true });
    expect(await statusOf(alice.threads.get(own.thread_id))).toBe(404);
    expect((await t.fetch(`/threads/${own.thread_id}`)).status).toBe(404);
    expect((await t.fetch(`/threads/${operatorThread}`)).status).toBe(200);
  });

  it("picks handlers in the documented order and answers false with 403", async () => {
    const alice = lg("alice");
    // assistants:delete goes to "assistants" (ahead of "*:delete"), so the owner deletes.
    const gone = await alice.assistants.create({ graphId: "agent" });
    await alice.assistants.delete(gone.assistant_id);
    expect(await statusOf(alice.assistants.get(gone.assistant_id))).toBe(404);
    // crons have no handler of their own: "*:delete" (ahead of "*") refuses their deletion.
    const cron = await alice.crons.create("agent", { schedule: "0 0 1 1 *" });
    expect(await statusOf(alice.crons.delete(cron.cron_id))).toBe(403);

    // "assistants" answers false for this user: 403 on reads, writes and runs that name an
    // assistant; "assistants:search" is ahead of it and still filters.
    const refused = lg("no-assistants");
    expect(await statusOf(refused.assistants.get("agent"))).toBe(403);
    expect(await statusOf(refused.assistants.getSchemas("agent"))).toBe(403);
    expect(await statusOf(refused.assistants.update("agent", { name: "x" }))).toBe(403);
    expect(await statusOf(refused.runs.wait(null, "agent", { input: {} }))).toBe(403);
    expect((await refused.assistants.search()).map((a) => a.assistant_id)).toEqual([]);
    expect((await refused.assistants.create({ graphId: "agent" })).metadata).toEqual({
      owner: "no-assistants",
    });
  });

  it("answers a caller without a token with the handler's 401 and headers", async () => {
    const res = await fetch(`${t.baseUrl}/assistants/search`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe('Bearer realm="assistants-test"');
  });
});

describe("assistants per user over Connect and gRPC", () => {
  const bearer = (sub: string) => ({
    interceptors: [
      // biome-ignore lint/suspicious/noExplicitAny: an interceptor passes any request through
      (next: any) => async (req: any) => {
        req.header.set("authorization", `Bearer ${token(sub)}`);
        return next(req);
      },
    ],
  });

  it("isolates users' assistants in every RPC", async () => {
    const carol = createClient({ baseUrl: t.baseUrl, ...bearer("carol") }).agents.assistants;
    const dave = createClient({ baseUrl: t.baseUrl, ...bearer("dave") }).agents.assistants;
    const created = await carol.createAssistant({ graphId: "agent", name: "carol's" });
    expect(created.metadata).toEqual({ owner: "carol" });
    const assistantId = created.assistantId;
    const notFound = { code: 5 };
    await expect(dave.getAssistant({ assistantId })).rejects.toMatchObject(notFound);
    await expect(dave.getAssistantSchemas({ assistantId })).rejects.toMatchObject(notFound);
    await expect(dave.listAssistantVersions({ assistantId })).rejects.toMatchObject(notFound);
    await expect(dave.updateAssistant({ assistantId, name: "mine" })).rejects.toMatchObject(notFound);
    await expect(dave.deleteAssistant({ assistantId })).rejects.toMatchObject(notFound);
    expect((await dave.countAssistants({})).count).toBe(0);
    expect((await carol.countAssistants({})).count).toBe(1);

    const grpc = (sub: string) =>
      createRpcClient(AssistantService, createGrpcTransport({ baseUrl: t.baseUrl, ...bearer(sub) }));
    const daveGrpc = grpc("dave");
    await expect(daveGrpc.getAssistant({ assistantId })).rejects.toMatchObject(notFound);
    await expect(daveGrpc.getAssistantGraph({ assistantId })).rejects.toMatchObject(notFound);
    await expect(daveGrpc.setLatestAssistantVersion({ assistantId, version: 1 })).rejects.toMatchObject(
      notFound,
    );
    expect((await daveGrpc.searchAssistants({ limit: 100 })).assistants.map((a) => a.assistantId)).toEqual(
      [],
    );
    const carolSees = (await grpc("carol").searchAssistants({ limit: 100 })).assistants;
    expect(carolSees.map((a) => a.assistantId)).toEqual([assistantId]);
    await grpc("carol").deleteAssistant({ assistantId });
    await expect(carol.getAssistant({ assistantId })).rejects.toMatchObject(notFound);
  });
});

describe("bad assistants handler results", () => {
  const search = async (sub: string) => {
    const res = await fetch(`${t.baseUrl}/assistants/search`, {
      method: "POST",
      headers: { "content-type": "application/json", Authorization: `Bearer ${token(sub)}` },
      body: "{}",
    });
    return { status: res.status, body: (await res.json()) as { detail: string } };
  };
  const logged = (problem: string) =>
    logLines.some((line) => line.includes('on(\\"assistants:search\\")') && line.includes(problem));

  it("answers an unknown operator, an oversized $or and a non-object with 403 naming the handler, and logs it", async () => {
    const unknown = await search("bad-operator");
    expect(unknown).toEqual({
      status: 403,
      body: {
        detail:
          "the auth handler for assistants:search returned an invalid filter: filter.owner: unknown operator $regex; use $eq or $contains",
      },
    });
    expect(logged("unknown operator $regex")).toBe(true);

    const big = await search("big-or");
    expect(big.status).toBe(403);
    expect(big.body.detail).toBe(
      "the auth handler for assistants:search returned an invalid filter: filter.$or must be an array of 1 to 10 filter objects, got 11 entries",
    );
    expect(logged("got 11 entries")).toBe(true);

    const notObject = await search("not-an-object");
    expect(notObject.status).toBe(403);
    expect(notObject.body.detail).toBe(
      "the auth handler for assistants:search returned an invalid filter: filter must be an object, got string owner",
    );
    expect(logged("got string owner")).toBe(true);
  });
});
