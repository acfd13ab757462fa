/**
 * The assistants API end to end, through the official `@langchain/langgraph-sdk` client, our
 * Connect client and plain fetch (for bad input), against a server loading a user graph config.
 */
import { ConnectError, createClient } from "@connectrpc/connect";
import { Client, type Assistant as SdkAssistant } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AssistantService } from "../../gen/agentplane/agents/v1/assistant_service_pb.js";
import { Code } from "../../sdk/index.js";
import { systemAssistantId } from "../../server/runtime/system-assistant-id.js";
import { type GraphFixture, NESTED_GRAPH_MODULE, writeGraphFixture } from "../support/graph-fixture.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

let t: TestApp;
let fixture: GraphFixture;
let lg: Client;

beforeAll(async () => {
  fixture = await writeGraphFixture(
    {
      "graphs.ts": NESTED_GRAPH_MODULE,
      "factory.ts": `
import { StateGraph, MessagesZodState, START } from "@langchain/langgraph";
export default async (config) => new StateGraph(MessagesZodState).addNode("echo", () => ({})).addEdge(START, "echo");
`,
    },
    {
      dependencies: ["."],
      node_version: "20",
      graphs: {
        nested: "./graphs.ts:graph",
        annotated: { path: "./graphs.ts:annotated", description: "no schemas" },
        factory: "./factory.ts",
      },
    },
  );
  t = await startTestApp({ graphConfigPath: fixture.configFile });
  lg = new Client({ apiUrl: t.baseUrl, apiKey: t.adminKey, callerOptions: { maxRetries: 0 } });
});
afterAll(async () => {
  await t?.stop();
  await fixture?.remove();
});

/** The status and `detail` of a failed SDK call. */
async function sdkError(promise: Promise<unknown>): Promise<{ status: number; detail: string }> {
  const error = (await promise.then(
    () => undefined,
    (e: unknown) => e,
  )) as { status?: number; message?: string } | undefined;
  expect(error, "the call should have failed").toBeDefined();
  const text = String(error?.message ?? "");
  const body = text.slice(text.indexOf("{"));
  return { status: error?.status ?? 0, detail: (JSON.parse(body) as { detail: string }).detail };
}

describe("system assistants", () => {
  it("exist for every graph when a client first lists assistants", async () => {
    const system = await lg.assistants.search({ metadata: { created_by: "system" }, limit: 100 });
    expect(system.map((a) => a.graph_id).sort()).toEqual(["annotated", "factory", "nested"]);
    const nested = system.find((a) => a.graph_id === "nested")!;
    expect(nested).toMatchObject({
      assistant_id: systemAssistantId("nested"),
      name: "nested",
      version: 1,
      metadata: { created_by: "system" },
    });
    expect(system.find((a) => a.graph_id === "annotated")?.description).toBe("no schemas");
  });

  it("answer to their graph id wherever an assistant id is taken", async () => {
    const byGraph = await lg.assistants.get("nested");
    expect(byGraph.assistant_id).toBe(systemAssistantId("nested"));
    const versions = await lg.assistants.getVersions("nested");
    expect(versions[0]?.assistant_id).toBe(systemAssistantId("nested"));
  });
});

describe("create, get, update, delete", () => {
  it("creates with every field and reads it back", async () => {
    const created = await lg.assistants.create({
      graphId: "nested",
      name: "Researcher",
      description: "finds things",
      metadata: { team: "a", tier: 1 },
      config: { tags: ["x"], recursion_limit: 7 },
      context: { model_name: "m1" },
    });
    expect(created).toMatchObject({
      graph_id: "nested",
      name: "Researcher",
      description: "finds things",
      metadata: { team: "a", tier: 1 },
      config: { tags: ["x"], recursion_limit: 7, configurable: { model_name: "m1" } },
      context: { model_name: "m1" },
      version: 1,
    });
    expect(Date.parse(created.created_at)).not.toBeNaN();
    expect(await lg.assistants.get(created.assistant_id)).toEqual(created);
  });

  it("defaults the name, omits a missing description, fills context from config.configurable", async () => {
    const created = await lg.assistants.create({
      graphId: "annotated",
      config: { configurable: { user: "u1" } },
    });
    expect(created.name).toBe("Untitled");
    expect("description" in created).toBe(false);
    expect(created.context).toEqual({ user: "u1" });
  });

  it("honours if_exists", async () => {
    const id = crypto.randomUUID();
    const first = await lg.assistants.create({ graphId: "nested", assistantId: id, name: "one" });
    const again = await lg.assistants.create({
      graphId: "annotated",
      assistantId: id,
      name: "two",
      ifExists: "do_nothing",
    });
    expect(again).toEqual(first);
    const raised = await sdkError(lg.assistants.create({ graphId: "nested", assistantId: id }));
    expect(raised.status).toBe(409);
    expect(raised.detail).toContain("already exists");
  });

  it("versions every update, merges metadata, replaces config and context together", async () => {
    const a = await lg.assistants.create({
      graphId: "nested",
      metadata: { keep: 1, change: "old" },
      context: { model_name: "m1" },
    });
    const updated = await lg.assistants.update(a.assistant_id, {
      metadata: { change: "new", added: true },
      config: { configurable: { model_name: "m2" } },
      name: "renamed",
    });
    expect(updated).toMatchObject({
      version: 2,
      name: "renamed",
      metadata: { keep: 1, change: "new", added: true },
      context: { model_name: "m2" },
      config: { configurable: { model_name: "m2" } },
    });
    const empty = await lg.assistants.update(a.assistant_id, {});
    expect(empty.version).toBe(3);
    expect(empty.name).toBe("renamed");
    const moved = await lg.assistants.update(a.assistant_id, { graphId: "annotated", context: { x: 1 } });
    expect(moved).toMatchObject({ graph_id: "annotated", version: 4, config: { configurable: { x: 1 } } });
  });

  it("lists versions newest first with limit, offset and metadata filter, and sets the latest", async () => {
    const a = await lg.assistants.create({ graphId: "nested", metadata: { v: 1 } });
    await lg.assistants.update(a.assistant_id, { metadata: { v: 2 }, name: "second" });
    await lg.assistants.update(a.assistant_id, { metadata: { v: 3 }, name: "third" });
    const all = await lg.assistants.getVersions(a.assistant_id);
    expect(all.map((v) => v.version)).toEqual([3, 2, 1]);
    expect(all[0]).not.toHaveProperty("updated_at");
    expect(
      (await lg.assistants.getVersions(a.assistant_id, { limit: 1, offset: 1 })).map((v) => v.version),
    ).toEqual([2]);
    expect(
      (await lg.assistants.getVersions(a.assistant_id, { metadata: { v: 2 } })).map((v) => v.version),
    ).toEqual([2]);
    const latest = await lg.assistants.setLatest(a.assistant_id, 2);
    expect(latest).toMatchObject({ version: 2, name: "second", metadata: { v: 2 } });
    expect((await lg.assistants.get(a.assistant_id)).name).toBe("second");
    const next = await lg.assistants.update(a.assistant_id, {});
    expect(next.version).toBe(4);
    const missing = await sdkError(lg.assistants.setLatest(a.assistant_id, 99));
    expect(missing).toMatchObject({ status: 404 });
    expect(missing.detail).toContain("no version 99");
  });

  it("deletes an assistant, and with delete_threads its threads", async () => {
    const a = await lg.assistants.create({ graphId: "nested" });
    const b = await lg.assistants.create({ graphId: "nested" });
    const threadA = await lg.threads.create({ metadata: { assistant_id: a.assistant_id } });
    const threadB = await lg.threads.create({ metadata: { assistant_id: b.assistant_id } });
    expect(await lg.assistants.delete(a.assistant_id, { deleteThreads: true })).toEqual([a.assistant_id]);
    expect(await lg.assistants.delete(b.assistant_id)).toEqual([b.assistant_id]);
    expect((await sdkError(lg.assistants.get(a.assistant_id))).status).toBe(404);
    expect((await sdkError(lg.threads.get(threadA.thread_id))).status).toBe(404);
    expect((await lg.threads.get(threadB.thread_id)).thread_id).toBe(threadB.thread_id);
    expect((await sdkError(lg.assistants.delete(a.assistant_id))).status).toBe(404);
  });
});

describe("search and count", () => {
  let ids: string[];
  const tag = crypto.randomUUID();
  beforeAll(async () => {
    ids = [];
    for (const [i, name] of ["Beta bot", "Gamma", "Alpha Bot"].entries()) {
      const a = await lg.assistants.create({
        graphId: i === 1 ? "annotated" : "nested",
        name,
        metadata: { tag, i },
      });
      ids.push(a.assistant_id);
    }
  });

  it("filters by metadata, graph_id and case-insensitive name substring", async () => {
    const byTag = await lg.assistants.search({ metadata: { tag } });
    expect(byTag.map((a) => a.name)).toEqual(["Alpha Bot", "Gamma", "Beta bot"]);
    expect(
      (await lg.assistants.search({ metadata: { tag }, graphId: "annotated" })).map((a) => a.name),
    ).toEqual(["Gamma"]);
    expect((await lg.assistants.search({ metadata: { tag }, name: "BOT" })).map((a) => a.name)).toEqual([
      "Alpha Bot",
      "Beta bot",
    ]);
    expect(await lg.assistants.count({ metadata: { tag } })).toBe(3);
    expect(await lg.assistants.count({ metadata: { tag }, graphId: "nested" })).toBe(2);
    expect(await lg.assistants.count({ metadata: { tag }, name: "gam" })).toBe(1);
    expect(await lg.assistants.count({ name: "no such assistant anywhere" })).toBe(0);
  });

  it("sorts by each column in both orders", async () => {
    const names = async (
      sortBy: "name" | "created_at" | "updated_at" | "assistant_id" | "graph_id",
      sortOrder: "asc" | "desc",
    ) => (await lg.assistants.search({ metadata: { tag }, sortBy, sortOrder })).map((a) => a.name);
    expect(await names("name", "asc")).toEqual(["Alpha Bot", "Beta bot", "Gamma"]);
    expect(await names("name", "desc")).toEqual(["Gamma", "Beta bot", "Alpha Bot"]);
    expect(await names("created_at", "asc")).toEqual(["Beta bot", "Gamma", "Alpha Bot"]);
    expect(await names("assistant_id", "asc")).toEqual(["Beta bot", "Gamma", "Alpha Bot"]);
    expect((await names("graph_id", "asc"))[0]).toBe("Gamma");
    await lg.assistants.update(ids[0]!, {});
    expect((await names("updated_at", "desc"))[0]).toBe("Beta bot");
  });

  it("selects fields", async () => {
    const [first] = await lg.assistants.search({
      metadata: { tag },
      select: ["assistant_id", "name"],
      limit: 1,
    });
    expect(first).toEqual({ assistant_id: ids[2], name: "Alpha Bot" });
  });

  it("paginates with X-Pagination-Total and X-Pagination-Next", async () => {
    const page1 = await lg.assistants.search({ metadata: { tag }, limit: 2, includePagination: true });
    expect(page1.assistants).toHaveLength(2);
    expect(page1.next).toBe("2");
    const page2 = await lg.assistants.search({
      metadata: { tag },
      limit: 2,
      offset: 2,
      includePagination: true,
    });
    expect(page2.assistants.map((a: SdkAssistant) => a.name)).toEqual(["Beta bot"]);
    expect(page2.next).toBeNull();
    const res = await t.fetch("/assistants/search", {
      method: "POST",
      body: JSON.stringify({ metadata: { tag }, limit: 1 }),
    });
    expect(res.headers.get("x-pagination-total")).toBe("3");
    expect(res.headers.get("x-pagination-next")).toBe("1");
  });
});

describe("graph, schemas, subgraphs", () => {
  it("draws the graph, expanding subgraphs with xray", async () => {
    const flat = await lg.assistants.getGraph("nested");
    expect(flat.nodes.map((n) => n.id)).toEqual(["__start__", "prepare", "child", "__end__"]);
    expect(flat.edges).toContainEqual(expect.objectContaining({ source: "prepare", target: "child" }));
    const xray = await lg.assistants.getGraph("nested", { xray: true });
    expect(xray.nodes.map((n) => n.id)).toEqual(expect.arrayContaining(["child:first", "child:second"]));
    const depth = await lg.assistants.getGraph("nested", { xray: 1 });
    expect(depth.nodes.map((n) => n.id)).toContain("child:first");
  });

  it("returns JSON schemas derived from zod", async () => {
    const schemas = await lg.assistants.getSchemas("nested");
    expect(schemas.graph_id).toBe("nested");
    expect(schemas.state_schema).toMatchObject({
      type: "object",
      properties: { messages: expect.anything(), steps: { type: "number" } },
    });
    expect(schemas.input_schema).toMatchObject({ type: "object" });
    expect(schemas.output_schema).toMatchObject({ type: "object" });
    expect(schemas.config_schema).toMatchObject({ properties: { model_name: { type: "string" } } });
    expect(schemas.context_schema).toEqual(schemas.config_schema);
    // Graphs typed only by TypeScript (an Annotation state) are covered by graph-schemas.test.ts.
  });

  it("loads factory graphs for introspection", async () => {
    const drawn = await lg.assistants.getGraph("factory");
    expect(drawn.nodes.map((n) => n.id)).toContain("echo");
    expect((await lg.assistants.getSchemas("factory")).state_schema).toBeDefined();
  });

  it("lists subgraph schemas, all or by namespace", async () => {
    const all = await lg.assistants.getSubgraphs("nested", { recurse: true });
    expect(Object.keys(all)).toEqual(["child"]);
    expect(all.child).toMatchObject({ state_schema: { type: "object" } });
    expect(all.child).not.toHaveProperty("graph_id");
    expect(Object.keys(await lg.assistants.getSubgraphs("nested", { namespace: "child" }))).toEqual([
      "child",
    ]);
    expect(await lg.assistants.getSubgraphs("nested", { namespace: "nope" })).toEqual({});
    expect(await lg.assistants.getSubgraphs("annotated")).toEqual({});
  });
});

describe("through the Connect client", () => {
  it("runs the same flows", async () => {
    const client = createClient(AssistantService, t.client().transport);
    const created = await client.createAssistant({
      graphId: "nested",
      name: "rpc",
      metadata: { via: "connect" },
    });
    expect(created.version).toBe(1);
    expect(created.assistantId).toMatch(/^[0-9a-f-]{36}$/);
    const updated = await client.updateAssistant({ assistantId: created.assistantId!, description: "d" });
    expect(updated).toMatchObject({ version: 2, description: "d" });
    const found = await client.searchAssistants({ metadata: { via: "connect" } });
    expect(found.total).toBe(1);
    expect(found.assistants[0]?.assistantId).toBe(created.assistantId);
    expect((await client.countAssistants({ metadata: { via: "connect" } })).count).toBe(1);
    expect((await client.listAssistantVersions({ assistantId: created.assistantId! })).versions).toHaveLength(
      2,
    );
    expect(
      (await client.setLatestAssistantVersion({ assistantId: created.assistantId!, version: 1 })).version,
    ).toBe(1);
    expect((await client.getAssistant({ assistantId: "nested" })).assistantId).toBe(
      systemAssistantId("nested"),
    );
    const drawn = await client.getAssistantGraph({ assistantId: "nested", xray: "true" });
    expect(JSON.stringify(drawn.graph)).toContain("child:first");
    expect((await client.getAssistantSchemas({ assistantId: "nested" })).stateSchema).toBeDefined();
    expect(Object.keys((await client.getAssistantSubgraphs({ assistantId: "nested" })).subgraphs)).toEqual([
      "child",
    ]);
    expect((await client.deleteAssistant({ assistantId: created.assistantId! })).assistantIds).toEqual([
      created.assistantId,
    ]);
    const gone = await client.getAssistant({ assistantId: created.assistantId! }).catch((e: unknown) => e);
    expect(ConnectError.from(gone).code).toBe(Code.NotFound);
  });
});

describe("bad input answers 4xx with a clear detail, never 500", () => {
  const unknownId = "00000000-0000-4000-8000-000000000000";
  const cases: [string, string, string, unknown, number, RegExp][] = [
    [
      "create: unknown graph",
      "POST",
      "/assistants",
      { graph_id: "nope" },
      422,
      /graph_id "nope" is not a graph/,
    ],
    ["create: missing graph", "POST", "/assistants", {}, 422, /graph_id is required/],
    [
      "create: NUL in metadata",
      "POST",
      "/assistants",
      { graph_id: "nested", metadata: { note: "a\u0000b" } },
      422,
      /^field "metadata\.note" contains the NUL character \(\\u0000\), which cannot be stored$/,
    ],
    [
      "create: bad id",
      "POST",
      "/assistants",
      { graph_id: "nested", assistant_id: "x" },
      422,
      /assistant_id must be a UUID/,
    ],
    [
      "create: bad if_exists",
      "POST",
      "/assistants",
      { graph_id: "nested", if_exists: "maybe" },
      422,
      /if_exists/,
    ],
    [
      "create: metadata not an object",
      "POST",
      "/assistants",
      { graph_id: "nested", metadata: [1] },
      422,
      /metadata/,
    ],
    ["create: known field of the wrong type", "POST", "/assistants", { graph_id: 7 }, 422, /graph_id/],
    [
      "create: conflicting context",
      "POST",
      "/assistants",
      { graph_id: "nested", config: { configurable: { a: 1 } }, context: { a: 2 } },
      422,
      /not both/,
    ],
    ["get: unknown id", "GET", `/assistants/${unknownId}`, undefined, 404, /not found/],
    [
      "get: not a uuid nor graph",
      "GET",
      "/assistants/banana",
      undefined,
      404,
      /neither a UUID nor a graph id/,
    ],
    ["patch: unknown id", "PATCH", `/assistants/${unknownId}`, {}, 404, /not found/],
    ["patch: unknown graph", "PATCH", "/assistants/nested", { graph_id: "nope" }, 422, /not a graph/],
    ["patch: name wrong type", "PATCH", "/assistants/nested", { name: 5 }, 422, /name/],
    ["delete: unknown id", "DELETE", `/assistants/${unknownId}`, undefined, 404, /not found/],
    [
      "delete: bad flag",
      "DELETE",
      "/assistants/nested?delete_threads=maybe",
      undefined,
      422,
      /delete_threads/,
    ],
    [
      "search: bad sort_by",
      "POST",
      "/assistants/search",
      { sort_by: "colour" },
      422,
      /sort_by must be one of/,
    ],
    ["search: bad sort_order", "POST", "/assistants/search", { sort_order: "up" }, 422, /sort_order/],
    [
      "search: limit too big",
      "POST",
      "/assistants/search",
      { limit: 1001 },
      422,
      /limit must be from 1 to 1000/,
    ],
    ["search: limit zero", "POST", "/assistants/search", { limit: 0 }, 422, /limit/],
    ["search: negative offset", "POST", "/assistants/search", { offset: -1 }, 422, /offset/],
    [
      "search: bad select",
      "POST",
      "/assistants/search",
      { select: ["secret"] },
      422,
      /select: unknown field "secret"/,
    ],
    ["search: limit wrong type", "POST", "/assistants/search", { limit: "ten" }, 422, /limit/],
    ["count: graph_id wrong type", "POST", "/assistants/count", { graph_id: 1 }, 422, /graph_id/],
    ["versions: unknown id", "POST", `/assistants/${unknownId}/versions`, {}, 404, /not found/],
    ["versions: limit too big", "POST", "/assistants/nested/versions", { limit: 5000 }, 422, /limit/],
    ["latest: unknown version", "POST", "/assistants/nested/latest", { version: 42 }, 404, /no version 42/],
    ["latest: version zero", "POST", "/assistants/nested/latest", { version: 0 }, 422, /version must be 1/],
    ["latest: unknown id", "POST", `/assistants/${unknownId}/latest`, { version: 1 }, 404, /not found/],
    ["graph: bad xray", "GET", "/assistants/nested/graph?xray=lots", undefined, 422, /xray must be/],
    ["graph: bad xray", "GET", "/assistants/nested/graph?xray=maybe", undefined, 422, /xray/],
    ["schemas: unknown id", "GET", `/assistants/${unknownId}/schemas`, undefined, 404, /not found/],
    ["subgraphs: bad recurse", "GET", "/assistants/nested/subgraphs?recurse=2", undefined, 422, /recurse/],
    ["bad JSON", "POST", "/assistants", "{", 400, /./],
  ];
  for (const [name, method, path, body, status, detail] of cases) {
    it(name, async () => {
      const res = await t.fetch(path, {
        method,
        ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
      });
      const json = (await res.json()) as { detail: string };
      expect({ status: res.status, detail: json.detail }).toEqual({
        status,
        detail: expect.stringMatching(detail),
      });
    });
  }

  it("requires assistants:write to change and allows viewers to read", async () => {
    const admin = t.client();
    const viewerKey = (
      await admin.iam.apiKeys.createApiKey({ kind: "service", role: "viewer", organizationRole: "viewer" })
    ).key;
    const viewer = new Client({ apiUrl: t.baseUrl, apiKey: viewerKey, callerOptions: { maxRetries: 0 } });
    expect((await viewer.assistants.get("nested")).graph_id).toBe("nested");
    const denied = await sdkError(viewer.assistants.create({ graphId: "nested" }));
    expect(denied.status).toBe(403);
    expect(denied.detail).toContain("assistants:write");
  });
});
