/**
 * Graphs at the edges, through the official `@langchain/langgraph-sdk` (plain fetch and our SDK
 * where it has no call), compared with the LangGraph JS server's answers for the same graphs
 * (test/e2e/fixtures/edge-graphs/js-server-answers.json, captured by `bench/capture-js-edges.ts`
 * running `langgraphjs dev` 1.5.1; CI never runs it):
 *
 * - `/schemas` and `/subgraphs` of TypeScript and plain JavaScript graphs, Annotation, zod and
 *   `StateSchema` states (items 3 and 9);
 * - a system assistant whose graph the server no longer serves (item 8);
 * - the graphs file's Hono app: a middleware that changes the JSON body of run routes, a route
 *   that runs a graph through `new Client()` (items 10 and 11);
 * - the generative-UI bundle (item 12);
 * - assistant search by a list of ids (item 17).
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemAssistantId } from "../../server/runtime/system-assistant-id.js";
import {
  customApp,
  type EdgeAnswers,
  type EdgeTarget,
  edgeTarget,
  generativeUi,
  outcome,
  SCHEMA_GRAPHS,
  schemas,
} from "../support/edge-scenarios.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const FIXTURE = "test/e2e/fixtures/edge-graphs";
/** Reading the TypeScript graphs' types takes seconds of CPU; a loaded CI machine takes longer. */
const TYPES_TIMEOUT_MS = 180_000;

let t: TestApp;
let target: EdgeTarget;
let js: EdgeAnswers["main"];

beforeAll(async () => {
  js = (JSON.parse(await readFile(`${FIXTURE}/js-server-answers.json`, "utf8")) as EdgeAnswers).main;
  t = await startTestApp({
    graphConfigPath: `${FIXTURE}/langgraph.json`,
    schemaResolveTimeoutMs: TYPES_TIMEOUT_MS,
  });
  target = edgeTarget(t.baseUrl, { "x-api-key": t.adminKey });
});
afterAll(async () => {
  await t?.stop();
});

type SchemaAnswer = { ok: Record<string, unknown> } | { status: number };

/** A subgraph answer of the JS server under the API's names (as the OpenAPI spec names them). */
function asApiNames(answer: SchemaAnswer): SchemaAnswer {
  if (!("ok" in answer)) return answer;
  const named: Record<string, unknown> = {};
  for (const [ns, set] of Object.entries(answer.ok as Record<string, Record<string, unknown>>)) {
    const schemasOf: Record<string, unknown> = {};
    if (set.input) schemasOf.input_schema = set.input;
    if (set.output) schemasOf.output_schema = set.output;
    if (set.state) schemasOf.state_schema = set.state;
    if (set.config) Object.assign(schemasOf, { config_schema: set.config, context_schema: set.config });
    named[ns] = schemasOf;
  }
  return { ok: named };
}

describe("schemas (items 3 and 9)", () => {
  let ours: Awaited<ReturnType<typeof schemas>>;
  beforeAll(async () => {
    ours = await schemas(target);
  }, TYPES_TIMEOUT_MS * 2);

  it("equal the JS server's for TypeScript, zod (plain JavaScript too) and StateSchema graphs", () => {
    for (const graph of ["trip", "chat", "dynamic", "notes", "inbox"] as const)
      expect.soft(ours[graph].schemas, graph).toEqual(js.schemas[graph].schemas);
    // Subgraphs: the same schemas, under the OpenAPI spec's names (state_schema…) where the JS
    // server answers its internal ones (state…); see docs/agent-server.md, "Schemas".
    for (const graph of SCHEMA_GRAPHS)
      expect
        .soft(ours[graph].subgraphs, graph)
        .toEqual(asApiNames(js.schemas[graph].subgraphs as SchemaAnswer));
    expect(Object.keys((ours.trip.subgraphs as { ok: object }).ok)).toEqual(["booking"]);
    // With zod 3.25, both servers lose the `.describe()` of the plain JavaScript zod state: the
    // library converts it with @langchain/core's own zod 4, whose registry holds no descriptions.
    const notes = ours.notes.schemas as { ok: { state_schema: { properties: Record<string, unknown> } } };
    expect(notes.ok.state_schema.properties.title).toEqual({ type: "string" });
  });

  it("describe plain JavaScript Annotation states by their channels, where the JS server answers 500", () => {
    expect(js.schemas.steps.schemas).toEqual({ status: 500 });
    expect(js.schemas.echo.schemas).toEqual({ status: 500 });
    const state = {
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      properties: { topic: {}, text: {}, log: { type: "array", default: [] } },
    };
    expect(ours.steps.schemas).toEqual({
      ok: { graph_id: "steps", input_schema: state, output_schema: state, state_schema: state },
    });
    expect((ours.echo.schemas as { ok: { state_schema: unknown } }).ok.state_schema).toEqual({
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      properties: { text: {}, stamp: {} },
    });
  });
});

describe("a system assistant whose graph is no longer served (item 8)", () => {
  let dir: string;
  let other: TestApp;
  beforeAll(async () => {
    // The same database, served by a process whose graphs file lost every graph but `steps`.
    dir = await mkdtemp(join(tmpdir(), "agentplane-edge-"));
    const file = join(dir, "langgraph.json");
    await writeFile(file, JSON.stringify({ graphs: { steps: `${resolve(FIXTURE)}/steps-graph.mjs:graph` } }));
    await target.client().assistants.search({ limit: 100 });
    other = await startTestApp({
      databaseUrl: t.databaseUrl,
      bootstrapApiKey: t.adminKey,
      graphConfigPath: file,
    });
  });
  afterAll(async () => {
    await other?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("is not listed, and running it answers 409 naming the graphs served", async () => {
    const sdk = edgeTarget(other.baseUrl, { "x-api-key": other.adminKey }).client();
    const listed = await sdk.assistants.search({ metadata: { created_by: "system" }, limit: 100 });
    expect(listed.map((a) => a.graph_id)).toEqual(["steps"]);
    expect(await sdk.assistants.count({ metadata: { created_by: "system" } })).toBe(1);
    // It still exists (its threads may point at it), but nothing runs it.
    const trip = systemAssistantId("trip");
    expect((await sdk.assistants.get(trip)).graph_id).toBe("trip");
    const run = sdk.runs.wait(null, trip, { input: {} });
    await expect(run).rejects.toMatchObject({ status: 409 });
    await expect(run).rejects.toThrow(
      'uses graph \\"trip\\", which this server does not serve (graphs: steps)',
    );
    // The graph id itself names no graph any more.
    await expect(sdk.runs.wait(null, "trip", { input: {} })).rejects.toMatchObject({ status: 404 });
    // The process that serves it still runs it.
    const thread = await target.client().threads.create();
    const served = await target.client().runs.wait(thread.thread_id, trip, { input: { messages: [] } });
    expect(served).toHaveProperty("__interrupt__");
  });
});

describe("the graphs file's Hono app (items 10 and 11)", () => {
  let ours: Awaited<ReturnType<typeof customApp>>;
  beforeAll(async () => {
    ours = await customApp(target);
  });

  it("hands a middleware's change to the JSON body of a run route on to the run", () => {
    expect(ours.stateless).toEqual({ ok: { text: "echo: hi", stamp: "from-middleware" } });
    expect(ours.onThread).toEqual({ ok: { text: "echo: hi", stamp: "from-middleware" } });
    // The JS server 1.5.1 answers too, but runs without the change: its Hono (4.13) parses the
    // body anew for each reader, so the middleware changed a copy.
    expect(js.customApp.stateless).toEqual({ ok: { text: "echo: hi", stamp: "none" } });
    expect(js.customApp.onThread).toEqual({ ok: { text: "echo: hi", stamp: "none" } });
  });

  it("lets a route's new Client() with no URL reach this server, as its caller", async () => {
    expect(ours.route).toEqual(js.customApp.route);
    expect(ours.route).toEqual({ ok: { result: { text: "echo: yo", stamp: "none" } } });
    // A caller without credentials lends none: the route's client is refused and the route fails.
    const anonymous = await fetch(`${t.baseUrl}/custom/run?text=yo`);
    expect(anonymous.status).toBe(500);
  });
});

describe("generative UI (item 12)", () => {
  it("serves a bundle that asks the page for shared modules through LGUI_REQUIRE, as the JS server's", async () => {
    const ours = await generativeUi(target);
    expect(ours).toEqual(js.generativeUi);
    expect(ours).toEqual({
      html: `<script src="http://<host>/ui/trip/entrypoint.js" onload='__LGUI_trip.render("hotel-card", "{{shadowRootId}}")'></script>`,
      hostRequire: true,
      modules: ["react", "react/jsx-runtime"],
    });
  });
});

describe("assistant search by ids (item 17)", () => {
  it("answers the assistants named in `ids` (UUIDs or graph ids), over REST and Connect", async () => {
    const sdk = target.client();
    const mine = await sdk.assistants.create({ graphId: "steps", name: "mine" });
    await sdk.assistants.create({ graphId: "steps", name: "not asked for" });
    const post = async (path: string, body: unknown) => {
      const res = await target.fetch(path, { method: "POST", body: JSON.stringify(body) });
      return { status: res.status, body: (await res.json()) as unknown };
    };
    const found = await post("/assistants/search", {
      ids: [mine.assistant_id, "echo"],
      sort_by: "name",
      sort_order: "asc",
    });
    expect(found.status).toBe(200);
    expect((found.body as { name: string }[]).map((a) => a.name)).toEqual(["echo", "mine"]);
    expect(await post("/assistants/count", { ids: [mine.assistant_id, "echo"] })).toEqual({
      status: 200,
      body: 2,
    });
    expect(await post("/assistants/search", { ids: ["not-an-id"] })).toEqual({
      status: 422,
      body: {
        detail: expect.stringContaining("ids[0] must be an assistant UUID or a graph id of this server"),
      },
    });
    const connect = await t.client().agents.assistants.searchAssistants({ ids: [mine.assistant_id] });
    expect(connect.assistants.map((a) => a.assistantId)).toEqual([mine.assistant_id]);
    // Other filters narrow the ids further.
    expect(await outcome(sdk.assistants.search({ graphId: "echo" }).then((a) => a.length))).toEqual({
      ok: 1,
    });
    expect(await post("/assistants/search", { ids: [mine.assistant_id], graph_id: "echo" })).toEqual({
      status: 200,
      body: [],
    });
  });
});
