/**
 * Threads end to end: every ThreadsClient method of the official `@langchain/langgraph-sdk`, the
 * same flows through our Connect client, bad input, permissions and the TTL sweeper. State comes
 * from a test graph (fixtures/threads-graph) driven by supersteps and state updates, and by
 * invoking it directly with the server's checkpointer to reach an interrupt (runs are not part of
 * this service). Over 500 lines because every case shares one server and its seeded threads.
 */
import { fileURLToPath } from "node:url";
import { fromJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { type Client as ConnectClient, createClient } from "@connectrpc/connect";
import { Client } from "@langchain/langgraph-sdk";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ThreadService } from "../../gen/agentplane/agents/v1/thread_service_pb.js";
import { Code, ConnectError } from "../../sdk/index.js";
import { sweepExpiredThreads } from "../../server/jobs/thread-ttl-sweep-job.js";
import { createLogger } from "../../server/logger.js";
import { loadGraphRegistry } from "../../server/runtime/graph-registry.js";
import { createThreadGraphs } from "../../server/services/agents/thread-graph.js";
import { findThreads, type ThreadRecord } from "../../server/store/agents/thread-store.js";
import { langGraphFailure } from "../support/call-failures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const GRAPH_CONFIG = fileURLToPath(new URL("./fixtures/threads-graph/langgraph.json", import.meta.url));

let t: TestApp;
let sdk: Client;
let rpc: ConnectClient<typeof ThreadService>;
let viewer: Client;
let viewerKey: string;
let sql: postgres.Sql;
let workspaceId: string;

beforeAll(async () => {
  t = await startTestApp({ graphConfigPath: GRAPH_CONFIG });
  sdk = new Client({ apiUrl: t.baseUrl, apiKey: t.adminKey, callerOptions: { maxRetries: 0 } });
  rpc = createClient(ThreadService, t.client().transport);
  const admin = t.client();
  workspaceId = (await admin.iam.workspaces.getCurrentWorkspace({})).id;
  viewerKey = (
    await admin.iam.apiKeys.createApiKey({ kind: "service", workspaceIds: [workspaceId], role: "viewer" })
  ).key;
  viewer = new Client({ apiUrl: t.baseUrl, apiKey: viewerKey, callerOptions: { maxRetries: 0 } });
  sql = postgres(t.databaseUrl, { max: 2, onnotice: () => {} });
});
afterAll(async () => {
  await sql?.end();
  await t?.stop();
});

/** A REST call's status and JSON body. */
async function rest(method: string, path: string, body?: unknown, apiKey?: string) {
  const res = await t.fetch(path, {
    method,
    ...(apiKey ? { apiKey } : {}),
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, headers: res.headers, json: (await res.json()) as Record<string, unknown> };
}

const firstTurn = [
  { updates: [{ values: { messages: [{ type: "human", content: "hi" }] }, asNode: "__input__" }] },
  { updates: [{ values: { messages: [{ type: "human", content: "hi" }] }, asNode: "__start__" }] },
  { updates: [{ values: { messages: [{ type: "ai", content: "hello" }], turns: 1 }, asNode: "agent" }] },
];

describe("threads CRUD through @langchain/langgraph-sdk", () => {
  it("creates, gets, updates and deletes a thread", async () => {
    const created = await sdk.threads.create({ metadata: { owner: "ann", tier: 1 } });
    expect(created).toMatchObject({ metadata: { owner: "ann", tier: 1 }, status: "idle", values: {} });
    expect(created.interrupts).toEqual({});
    expect(created.created_at).toMatch(/^\d{4}-\d\d-\d\dT/);
    const got = await sdk.threads.get(created.thread_id);
    expect(got).toEqual(created);
    expect("ttl" in got).toBe(false);

    const updated = await sdk.threads.update(created.thread_id, { metadata: { tier: 2, extra: true } });
    expect(updated.metadata).toEqual({ owner: "ann", tier: 2, extra: true });
    expect(new Date(updated.updated_at).getTime()).toBeGreaterThanOrEqual(
      new Date(created.updated_at).getTime(),
    );

    expect(await sdk.threads.delete(created.thread_id)).toEqual({});
    expect(await langGraphFailure(sdk.threads.get(created.thread_id))).toEqual({
      status: 404,
      detail: `thread ${created.thread_id} not found`,
    });
  });

  it("honours thread_id and if_exists", async () => {
    const threadId = crypto.randomUUID();
    const first = await sdk.threads.create({ threadId, metadata: { n: 1 } });
    expect(first.thread_id).toBe(threadId);
    expect(await langGraphFailure(sdk.threads.create({ threadId }))).toEqual({
      status: 409,
      detail: `thread ${threadId} already exists`,
    });
    const again = await sdk.threads.create({ threadId, ifExists: "do_nothing", metadata: { n: 2 } });
    expect(again.metadata).toEqual({ n: 1 });
  });

  it("keeps a TTL, shown with include=ttl, and changes it on update", async () => {
    const thread = await sdk.threads.create({ ttl: 30 });
    const before = Date.now();
    const withTtl = (await sdk.threads.get(thread.thread_id, { include: ["ttl"] })) as unknown as {
      ttl: { strategy: string; ttl_minutes: number; expires_at: string };
    };
    expect(withTtl.ttl).toMatchObject({ strategy: "delete", ttl_minutes: 30 });
    const expires = new Date(withTtl.ttl.expires_at).getTime();
    expect(expires).toBeGreaterThan(before + 29 * 60_000);
    expect(expires).toBeLessThan(before + 31 * 60_000);

    // The SDK's type only names "delete"; the server takes both strategies.
    await sdk.threads.update(thread.thread_id, { ttl: { strategy: "keep_latest" as "delete", ttl: 5 } });
    const res = await rest("GET", `/threads/${thread.thread_id}?include=ttl`);
    expect(res.json.ttl).toMatchObject({ strategy: "keep_latest", ttl_minutes: 5 });
    const plain = await rest("GET", `/threads/${(await sdk.threads.create()).thread_id}?include=ttl`);
    expect(plain.json.ttl).toBeNull();
  });

  it("searches by metadata, values, status and ids, sorts, pages, selects and extracts", async () => {
    const tag = crypto.randomUUID();
    const made = [];
    for (let i = 0; i < 3; i++) made.push(await sdk.threads.create({ metadata: { tag, i } }));
    const withState = await sdk.threads.create({
      graphId: "review",
      metadata: { tag, i: 3 },
      supersteps: firstTurn,
    });

    const all = await sdk.threads.search({ metadata: { tag }, sortBy: "created_at", sortOrder: "asc" });
    expect(all.map((x) => x.thread_id)).toEqual([...made.map((x) => x.thread_id), withState.thread_id]);
    const desc = await sdk.threads.search({ metadata: { tag }, sortBy: "thread_id", sortOrder: "desc" });
    expect(desc.map((x) => x.thread_id)).toEqual([...all.map((x) => x.thread_id)].sort().reverse());
    for (const sortBy of ["status", "updated_at", "state_updated_at"] as const)
      expect(await sdk.threads.search({ metadata: { tag }, sortBy })).toHaveLength(4);

    const byValues = await sdk.threads.search({ values: { turns: 1 }, metadata: { tag } });
    expect(byValues.map((x) => x.thread_id)).toEqual([withState.thread_id]);
    expect(await sdk.threads.search({ metadata: { tag }, status: "busy" })).toEqual([]);
    const byIds = await sdk.threads.search({
      ids: [made[0]!.thread_id, made[2]!.thread_id],
      sortOrder: "asc",
    });
    expect(byIds.map((x) => x.thread_id)).toEqual([made[0]!.thread_id, made[2]!.thread_id]);

    const page = await rest("POST", "/threads/search", { metadata: { tag }, limit: 3, offset: 0 });
    expect(page.headers.get("x-pagination-total")).toBe("4");
    expect(page.headers.get("x-pagination-next")).toBe("3");
    const last = await rest("POST", "/threads/search", { metadata: { tag }, limit: 3, offset: 3 });
    expect(last.headers.get("x-pagination-total")).toBe("4");
    expect(last.headers.get("x-pagination-next")).toBeNull();
    expect(last.json).toHaveLength(1);

    const selected = await sdk.threads.search({
      metadata: { tag },
      select: ["thread_id", "status"],
      limit: 1,
    });
    expect(Object.keys(selected[0]!).sort()).toEqual(["status", "thread_id"]);

    const extracted = await sdk.threads.search({
      ids: [withState.thread_id],
      extract: {
        last: "values.messages[-1].content",
        first: "values.messages[0].type",
        tag: "metadata.tag",
        none: "values.nope[3]",
      },
    });
    expect(extracted[0]!.extracted).toEqual({ last: "hello", first: "human", tag, none: null });
  });

  it("counts threads matching filters", async () => {
    const tag = crypto.randomUUID();
    await sdk.threads.create({ metadata: { tag } });
    await sdk.threads.create({ metadata: { tag } });
    expect(await sdk.threads.count({ metadata: { tag } })).toBe(2);
    expect(await sdk.threads.count({ metadata: { tag }, status: "interrupted" })).toBe(0);
    expect(await sdk.threads.count({ metadata: { tag }, values: { turns: 1 } })).toBe(0);
  });
});

describe("thread state through @langchain/langgraph-sdk", () => {
  it("answers an empty state for a thread without a graph", async () => {
    const thread = await sdk.threads.create();
    expect(await sdk.threads.getState(thread.thread_id)).toEqual({
      values: {},
      next: [],
      tasks: [],
      checkpoint: null,
      metadata: {},
      created_at: null,
      parent_checkpoint: null,
      interrupts: [],
    });
    expect(await sdk.threads.getHistory(thread.thread_id)).toEqual([]);
  });

  it("builds state from supersteps and reads it, at checkpoints and through history", async () => {
    const thread = await sdk.threads.create({ graphId: "review", supersteps: firstTurn });
    expect(thread.metadata).toEqual({ graph_id: "review" });
    expect(thread.values).toMatchObject({
      turns: 1,
      messages: [{ type: "human" }, { type: "ai", content: "hello" }],
    });

    const state = await sdk.threads.getState(thread.thread_id);
    expect(state.next).toEqual(["review"]);
    expect(state.tasks).toMatchObject([{ name: "review", error: null, interrupts: [], state: null }]);
    expect(state.checkpoint).toMatchObject({ thread_id: thread.thread_id, checkpoint_ns: "" });
    expect(state.metadata).toMatchObject({ source: "update", step: 1 });
    expect(state.parent_checkpoint?.checkpoint_id).toBeTruthy();
    expect(typeof state.created_at).toBe("string");

    const history = await sdk.threads.getHistory(thread.thread_id, { limit: 10 });
    expect(history.map((s) => s.checkpoint.checkpoint_id)[0]).toBe(state.checkpoint.checkpoint_id);
    expect(history).toHaveLength(3);
    const defaultHistory = await rest("GET", `/threads/${thread.thread_id}/history`);
    expect(defaultHistory.json).toHaveLength(1);
    const older = await sdk.threads.getHistory(thread.thread_id, {
      limit: 10,
      before: { configurable: { checkpoint_id: state.checkpoint.checkpoint_id } },
    });
    expect(older).toHaveLength(2);
    const byId = await rest("POST", `/threads/${thread.thread_id}/history`, {
      limit: 10,
      before: state.checkpoint.checkpoint_id,
    });
    expect(byId.json).toHaveLength(2);
    const byMetadata = await sdk.threads.getHistory(thread.thread_id, { limit: 10, metadata: { step: 0 } });
    expect(byMetadata).toHaveLength(1);
    const getBefore = await rest(
      "GET",
      `/threads/${thread.thread_id}/history?limit=5&before=${state.checkpoint.checkpoint_id}`,
    );
    expect(getBefore.json).toHaveLength(2);

    const parentId = state.parent_checkpoint!.checkpoint_id!;
    const atParent = await sdk.threads.getState(thread.thread_id, parentId);
    expect(atParent.checkpoint.checkpoint_id).toBe(parentId);
    expect(atParent.next).toEqual(["agent"]);
    const atObject = await sdk.threads.getState(thread.thread_id, {
      thread_id: thread.thread_id,
      checkpoint_ns: "",
      checkpoint_id: parentId,
      checkpoint_map: null,
    });
    expect(atObject).toEqual(atParent);
    expect(await sdk.threads.getState(thread.thread_id, undefined, { subgraphs: true })).toEqual(state);
  });

  it("updates state, recomputes the thread, and patches checkpoint metadata", async () => {
    const thread = await sdk.threads.create({ graphId: "review", supersteps: firstTurn });
    // The server answers {checkpoint} (the Agent Server's shape); the SDK's type says otherwise.
    const result = (await sdk.threads.updateState(thread.thread_id, {
      values: { messages: [{ type: "human", content: "more" }] },
      asNode: "agent",
    })) as unknown as { checkpoint: { checkpoint_id: string } };
    expect(result.checkpoint).toMatchObject({ thread_id: thread.thread_id, checkpoint_ns: "" });
    const state = await sdk.threads.getState(thread.thread_id);
    expect(state.checkpoint.checkpoint_id).toBe(result.checkpoint.checkpoint_id);
    expect((state.values as { messages: unknown[] }).messages).toHaveLength(3);
    const refreshed = await sdk.threads.get(thread.thread_id);
    expect((refreshed.values as { messages: unknown[] }).messages).toHaveLength(3);
    expect(new Date(refreshed.state_updated_at).getTime()).toBeGreaterThan(
      new Date(thread.state_updated_at).getTime(),
    );

    const fork = (await sdk.threads.updateState(thread.thread_id, {
      values: { turns: 5 },
      asNode: "agent",
      checkpointId: state.parent_checkpoint!.checkpoint_id!,
    })) as unknown as { checkpoint: { checkpoint_id: string } };
    expect(fork.checkpoint.checkpoint_id).not.toBe(result.checkpoint.checkpoint_id);

    expect(await sdk.threads.patchState(thread.thread_id, { reviewed: "yes" })).toEqual({});
    const patched = await sdk.threads.getState(thread.thread_id);
    expect(patched.metadata).toMatchObject({ reviewed: "yes" });
  });

  it("shows interrupts with their ids in the state and, once recorded, on the thread", async () => {
    const thread = await sdk.threads.create({ graphId: "review", supersteps: firstTurn });
    // Stand-in for a run: invoke the registered graph with the server's checkpointer and store,
    // then record the new state the way the run executor does.
    const graphs = await loadGraphRegistry({
      configPath: GRAPH_CONFIG,
      cwd: process.cwd(),
      log: createLogger("error"),
      schemaTimeoutMs: 30_000,
    });
    const threadGraphs = createThreadGraphs({ sql, graphs });
    const graph = (await threadGraphs.forThread(workspaceId, {
      threadId: thread.thread_id,
      metadata: { graph_id: "review" },
      config: {},
    }))!;
    await graph.invoke(null, { configurable: { thread_id: thread.thread_id } });
    const [record] = (await findThreads(sql, [{ workspaceId, threadId: thread.thread_id }])) as [
      ThreadRecord,
    ];
    await threadGraphs.refresh(workspaceId, record, graph);

    const state = await sdk.threads.getState(thread.thread_id);
    expect(state.next).toEqual(["review"]);
    const interrupts = (state as unknown as { interrupts: { id: string; value: unknown }[] }).interrupts;
    expect(interrupts).toEqual([{ id: expect.any(String), value: { question: "approve?" } }]);
    expect(state.tasks[0]!.interrupts).toEqual(interrupts);

    const interrupted = await sdk.threads.get(thread.thread_id);
    expect(interrupted.status).toBe("interrupted");
    expect(interrupted.interrupts).toEqual({ [state.tasks[0]!.id]: interrupts });
    expect((await sdk.threads.search({ ids: [thread.thread_id], status: "interrupted" })).length).toBe(1);

    // A state update moves past the interrupt: the thread is recomputed and idle again.
    await sdk.threads.updateState(thread.thread_id, { values: { decision: "yes" }, asNode: "review" });
    const resumed = await sdk.threads.get(thread.thread_id);
    expect(resumed).toMatchObject({ status: "idle", interrupts: {}, values: { decision: "yes" } });
  });

  it("copies a thread with its checkpoints", async () => {
    const thread = await sdk.threads.create({
      graphId: "review",
      metadata: { k: "v" },
      supersteps: firstTurn,
    });
    const copy = await sdk.threads.copy(thread.thread_id);
    expect(copy.thread_id).not.toBe(thread.thread_id);
    expect(copy.metadata).toEqual(thread.metadata);
    expect(copy.values).toEqual(thread.values);
    const [original, copied] = [
      await sdk.threads.getHistory(thread.thread_id, { limit: 10 }),
      await sdk.threads.getHistory(copy.thread_id, { limit: 10 }),
    ];
    expect(copied.map((s) => s.checkpoint.checkpoint_id)).toEqual(
      original.map((s) => s.checkpoint.checkpoint_id),
    );
    expect(copied.map((s) => s.values)).toEqual(original.map((s) => s.values));
    expect(copied[0]!.checkpoint.thread_id).toBe(copy.thread_id);
  });

  it("prunes threads: keep_latest keeps the latest state, delete removes them", async () => {
    const a = await sdk.threads.create({ graphId: "review", supersteps: firstTurn });
    const b = await sdk.threads.create({ graphId: "review", supersteps: firstTurn });
    const latest = await sdk.threads.getState(a.thread_id);
    expect(await sdk.threads.prune([a.thread_id, crypto.randomUUID()], { strategy: "keep_latest" })).toEqual({
      pruned_count: 1,
    });
    const history = await sdk.threads.getHistory(a.thread_id, { limit: 10 });
    expect(history.map((s) => s.checkpoint.checkpoint_id)).toEqual([latest.checkpoint.checkpoint_id]);
    expect(history[0]!.values).toEqual(latest.values);

    expect(await sdk.threads.prune([a.thread_id, b.thread_id])).toEqual({ pruned_count: 2 });
    expect((await langGraphFailure(sdk.threads.get(b.thread_id))).status).toBe(404);
    const [{ n }] = await sql<[{ n: number }]>`
      select count(*)::int as n from checkpoints where thread_id = any(${[a.thread_id, b.thread_id]}::text[])`;
    expect(n).toBe(0);
  });

  it("deletes a thread's checkpoints with it", async () => {
    const thread = await sdk.threads.create({ graphId: "review", supersteps: firstTurn });
    await sdk.threads.delete(thread.thread_id);
    const [{ n }] = await sql<[{ n: number }]>`
      select count(*)::int as n from checkpoints where thread_id = ${thread.thread_id}`;
    expect(n).toBe(0);
  });
});

describe("the same flows through Connect", () => {
  it("creates, searches, counts, reads state and updates it", async () => {
    const tag = crypto.randomUUID();
    const created = await rpc.createThread({
      metadata: { tag, graph_id: "review" },
      supersteps: [
        {
          updates: [
            {
              values: fromJson(ValueSchema, {}),
              asNode: "__input__",
            },
          ],
        },
      ],
    });
    expect(created.threadId).toBeTruthy();
    expect(created.status).toBe("idle");
    const found = await rpc.searchThreads({ metadata: { tag } });
    expect(found.threads.map((x) => x.threadId)).toEqual([created.threadId]);
    expect((await rpc.countThreads({ metadata: { tag } })).count).toBe(1);
    const got = await rpc.getThread({ threadId: created.threadId!, include: ["ttl"] });
    expect(got.metadata).toEqual({ tag, graph_id: "review" });

    const update = await rpc.updateThreadState({
      threadId: created.threadId!,
      values: fromJson(ValueSchema, { turns: 2 }),
      asNode: "agent",
    });
    expect(update.checkpoint?.threadId).toBe(created.threadId);
    const state = await rpc.getThreadState({ threadId: created.threadId! });
    expect(state.next).toEqual(["review"]);
    const history = await rpc.searchThreadHistory({ threadId: created.threadId!, limit: 10 });
    expect(history.states.length).toBeGreaterThanOrEqual(2);
    const list = await rpc.listThreadHistory({ threadId: created.threadId! });
    expect(list.states).toHaveLength(1);

    const copy = await rpc.copyThread({ threadId: created.threadId! });
    expect(copy.threadId).not.toBe(created.threadId);
    expect((await rpc.pruneThreads({ threadIds: [copy.threadId!], strategy: "delete" })).prunedCount).toBe(1);
    await rpc.deleteThread({ threadId: created.threadId! });
    const error = await rpc
      .getThread({ threadId: created.threadId! })
      .catch((e: unknown) => ConnectError.from(e));
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.NotFound);
  });
});

describe("bad input gets a 4xx that says what to fix", () => {
  it.each([
    ["GET", "/threads/not-a-uuid", undefined, 422, "thread_id must be a UUID"],
    ["GET", `/threads/${crypto.randomUUID()}/state`, undefined, 404, "not found"],
    [
      "GET",
      "/threads/00000000-0000-0000-0000-000000000000?include=bogus",
      undefined,
      422,
      'include accepts only "ttl"',
    ],
    ["POST", "/threads", { thread_id: "x" }, 422, "thread_id must be a UUID"],
    ["POST", "/threads", { if_exists: "replace" }, 422, "if_exists must be one of raise, do_nothing"],
    ["POST", "/threads", { ttl: { strategy: "forever", ttl: 5 } }, 422, "ttl.strategy must be one of"],
    ["POST", "/threads", { ttl: { ttl: -1 } }, 422, "ttl.ttl must be a number of minutes above 0"],
    ["POST", "/threads", { if_exists: 7 }, 422, "if_exists"],
    ["POST", "/threads", { metadata: { note: "a\u0000b" } }, 422, "contains the NUL character (\\u0000)"],
    ["POST", "/threads/search", { metadata: { note: "\u0000" } }, 422, "contains the NUL character"],
    [
      "POST",
      "/threads",
      { supersteps: [{ updates: [{ values: {}, as_node: "agent" }] }] },
      422,
      "supersteps need metadata.graph_id",
    ],
    [
      "POST",
      "/threads",
      { metadata: { graph_id: "nope" }, supersteps: [{ updates: [{ values: {}, as_node: "agent" }] }] },
      422,
      'metadata.graph_id "nope" is not a registered graph',
    ],
    [
      "POST",
      "/threads",
      {
        metadata: { graph_id: "review" },
        supersteps: [{ updates: [{ values: {}, as_node: "no_such_node" }] }],
      },
      422,
      "supersteps:",
    ],
    ["POST", "/threads/search", { sort_by: "name" }, 422, "sort_by must be one of thread_id, status"],
    ["POST", "/threads/search", { sort_order: "up" }, 422, "sort_order must be one of asc, desc"],
    ["POST", "/threads/search", { limit: 5000 }, 422, "limit must be from 1 to 1000"],
    ["POST", "/threads/search", { limit: 0 }, 422, "limit must be from 1 to 1000"],
    ["POST", "/threads/search", { offset: -1 }, 422, "offset must be 0 or more"],
    ["POST", "/threads/search", { status: "sleeping" }, 422, "status must be one of idle, busy"],
    ["POST", "/threads/search", { select: ["secret"] }, 422, 'select: unknown field "secret"'],
    ["POST", "/threads/search", { ids: ["nope"] }, 422, "ids[0] must be a UUID"],
    [
      "POST",
      "/threads/search",
      { extract: { a: "secrets.x" } },
      422,
      "must start with one of values, metadata",
    ],
    ["POST", "/threads/search", { extract: { a: "values..x" } }, 422, "is malformed at character 7"],
    ["POST", "/threads/search", { extract: { a: 5 } }, 422, "extract.a must be a path string"],
    [
      "POST",
      "/threads/search",
      { extract: Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, "values.x"])) },
      422,
      "extract takes at most 10 paths",
    ],
    ["POST", "/threads/count", { status: "x" }, 422, "status must be one of"],
    ["POST", "/threads/prune", { thread_ids: [] }, 422, "thread_ids must list 1 to 1000"],
    [
      "POST",
      "/threads/prune",
      { thread_ids: [crypto.randomUUID()], strategy: "x" },
      422,
      "strategy must be one of",
    ],
    ["POST", `/threads/${crypto.randomUUID()}/history`, { limit: 1001 }, 422, "limit must be from 1 to 1000"],
    [
      "POST",
      `/threads/${crypto.randomUUID()}/history`,
      { before: { x: 1 } },
      422,
      "before must be a checkpoint id, a config",
    ],
    ["GET", `/threads/${crypto.randomUUID()}/history?limit=x`, undefined, 422, "limit"],
    ["POST", `/threads/${crypto.randomUUID()}/copy`, undefined, 404, "not found"],
    ["PATCH", `/threads/${crypto.randomUUID()}/state`, {}, 422, "metadata is required"],
    ["POST", `/threads/${crypto.randomUUID()}/state/checkpoint`, {}, 422, "checkpoint is required"],
  ])("%s %s %j → %i", async (method, path, body, status, detail) => {
    const res = await rest(method, path, body);
    expect(res.status).toBe(status);
    expect(res.json.detail).toContain(detail);
  });

  it("answers 404 for unknown checkpoints and 409 for state changes a thread cannot take", async () => {
    const bare = await sdk.threads.create();
    expect(await langGraphFailure(sdk.threads.updateState(bare.thread_id, { values: {} }))).toMatchObject({
      status: 409,
    });
    expect(await langGraphFailure(sdk.threads.patchState(bare.thread_id, { a: 1 }))).toMatchObject({
      status: 409,
    });
    const thread = await sdk.threads.create({ graphId: "review", supersteps: firstTurn });
    const unknown = "1f0c0000-0000-6000-8000-000000000000";
    expect(await langGraphFailure(sdk.threads.getState(thread.thread_id, unknown))).toEqual({
      status: 404,
      detail: `checkpoint ${unknown} not found in thread ${thread.thread_id}`,
    });
    expect(
      await langGraphFailure(
        sdk.threads.updateState(thread.thread_id, { values: {}, asNode: "agent", checkpointId: unknown }),
      ),
    ).toEqual({ status: 404, detail: `checkpoint ${unknown} not found in thread ${thread.thread_id}` });
    const noSubgraph = await rest("POST", `/threads/${thread.thread_id}/state`, {
      values: {},
      as_node: "agent",
      checkpoint: { checkpoint_ns: "nope|1" },
    });
    expect(noSubgraph).toMatchObject({
      status: 404,
      json: { detail: 'update state: Subgraph "nope" not found' },
    });
    const badMessages = await langGraphFailure(
      sdk.threads.updateState(thread.thread_id, { values: { messages: 5 }, asNode: "agent" }),
    );
    expect(badMessages).toMatchObject({
      status: 422,
      detail: expect.stringContaining("Unable to coerce message"),
    });
    const ambiguous = await langGraphFailure(
      sdk.threads.updateState(thread.thread_id, { values: { turns: 1 }, asNode: "nope" }),
    );
    expect(ambiguous.status).toBe(422);
    await sql`update threads set status = 'busy' where thread_id = ${thread.thread_id}`;
    expect(
      await langGraphFailure(sdk.threads.updateState(thread.thread_id, { values: {}, asNode: "agent" })),
    ).toMatchObject({
      status: 409,
      detail: expect.stringContaining("is busy"),
    });
  });
});

describe("permissions", () => {
  it("lets a viewer read but not write, nor change a TTL", async () => {
    const thread = await sdk.threads.create({ graphId: "review", supersteps: firstTurn });
    expect((await viewer.threads.get(thread.thread_id)).thread_id).toBe(thread.thread_id);
    expect((await viewer.threads.getState(thread.thread_id)).next).toEqual(["review"]);
    expect(await viewer.threads.search({ ids: [thread.thread_id] })).toHaveLength(1);
    expect(await viewer.threads.count({ metadata: { graph_id: "review" } })).toBeGreaterThan(0);
    expect(await viewer.threads.getHistory(thread.thread_id)).toHaveLength(3);
    const denied = [
      () => viewer.threads.create(),
      () => viewer.threads.update(thread.thread_id, { ttl: { strategy: "delete", ttl: 1 } }),
      () => viewer.threads.update(thread.thread_id, { metadata: { a: 1 } }),
      () => viewer.threads.delete(thread.thread_id),
      () => viewer.threads.copy(thread.thread_id),
      () => viewer.threads.prune([thread.thread_id]),
      () => viewer.threads.updateState(thread.thread_id, { values: {}, asNode: "agent" }),
      () => viewer.threads.patchState(thread.thread_id, { a: 1 }),
    ];
    for (const call of denied) {
      expect(await langGraphFailure(call())).toEqual({
        status: 403,
        detail: "permission denied: this call needs the threads:write permission",
      });
    }
    expect((await sdk.threads.get(thread.thread_id)).metadata).toEqual({ graph_id: "review" });
  });
});

describe("the TTL sweeper", () => {
  it("deletes expired delete-threads and prunes expired keep_latest threads", async () => {
    const doomed = await sdk.threads.create({
      graphId: "review",
      supersteps: firstTurn,
      ttl: { strategy: "delete", ttl: 60 },
    });
    const kept = await sdk.threads.create({
      graphId: "review",
      supersteps: firstTurn,
      ttl: { strategy: "keep_latest" as "delete", ttl: 60 },
    });
    const fresh = await sdk.threads.create({ ttl: 60 });
    const latest = await sdk.threads.getState(kept.thread_id);
    await sql`update threads set expires_at = now() - interval '1 second'
              where thread_id = any(${[doomed.thread_id, kept.thread_id]}::uuid[])`;

    expect(await sweepExpiredThreads(sql)).toEqual({ deleted: 1, pruned: 1 });

    expect((await langGraphFailure(sdk.threads.get(doomed.thread_id))).status).toBe(404);
    const [{ n }] = await sql<[{ n: number }]>`
      select count(*)::int as n from checkpoints where thread_id = ${doomed.thread_id}`;
    expect(n).toBe(0);
    const history = await sdk.threads.getHistory(kept.thread_id, { limit: 10 });
    expect(history.map((s) => s.checkpoint.checkpoint_id)).toEqual([latest.checkpoint.checkpoint_id]);
    const keptTtl = (await rest("GET", `/threads/${kept.thread_id}?include=ttl`)).json.ttl as {
      expires_at: string;
    };
    expect(new Date(keptTtl.expires_at).getTime()).toBeGreaterThan(Date.now() + 59 * 60_000);
    expect((await sdk.threads.get(fresh.thread_id)).thread_id).toBe(fresh.thread_id);
    expect(await sweepExpiredThreads(sql)).toEqual({ deleted: 0, pruned: 0 });
  });

  it("runs on the queue and schedules its successor one interval ahead", async () => {
    // The app seeds a sweep at start; once it has run, the next one waits about 5 minutes ahead.
    const deadline = Date.now() + 20_000;
    let next: { start_after: Date }[] = [];
    while (Date.now() < deadline) {
      next = await sql<{ start_after: Date }[]>`
        select start_after from pgboss.job
        where name = 'thread.ttl-sweep' and state = 'created' and start_after > now() + interval '4 minutes'`;
      const [{ done }] = await sql<[{ done: number }]>`
        select count(*)::int as done from pgboss.job where name = 'thread.ttl-sweep' and state = 'completed'`;
      if (next.length === 1 && done >= 1) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(next).toHaveLength(1);
  });
});
