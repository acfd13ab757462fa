/**
 * Graphs behave as on the LangGraph servers, seen through the official `@langchain/langgraph-sdk`
 * client: every kind of graph state gets its JSON Schemas (an `Annotation` from its TypeScript
 * types, zod with its registry metadata, plain zod, `StateSchema`), equal to what the LangGraph JS
 * server answers for the same graphs; graph modules may call `getLogger()` at load; and
 * `LANGGRAPH_CONFIG` gives the system assistants their config and context.
 *
 * `fixtures/schema-graphs/js-server-answers.json` holds the JS server's answers, captured by
 * `bench/capture-js-schemas.ts` running `langgraphjs dev` (@langchain/langgraph-cli 1.5.1) on that
 * folder; CI never runs it.
 */
import { readFile } from "node:fs/promises";
import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../server/logger.js";
import { parseSystemAssistantDefaults } from "../../server/settings/system-assistant-defaults.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const FIXTURE = "test/e2e/fixtures/schema-graphs";
const GRAPH_CONFIG = `${FIXTURE}/langgraph.json`;
/** Time allowed for reading the Annotation graph's types (the first schemas call waits for it). */
const TYPES_TIMEOUT_MS = 120_000;

/** The JS server's `/schemas` and `/subgraphs?recurse=true` answers, by graph id. */
interface JsServerAnswers {
  graphs: Record<string, { schemas: Record<string, unknown>; subgraphs: Record<string, JsSchemaSet> }>;
}
/** The JS server answers subgraphs with its internal key names. */
type JsSchemaSet = Partial<Record<"state" | "input" | "output" | "config", unknown>>;

let t: TestApp;
let lg: Client;
let reference: JsServerAnswers;
const logLines: Record<string, unknown>[] = [];

beforeAll(async () => {
  reference = JSON.parse(await readFile(`${FIXTURE}/js-server-answers.json`, "utf8")) as JsServerAnswers;
  const log = createLogger("info", (line) => logLines.push(JSON.parse(line) as Record<string, unknown>));
  // Reading types takes 5-10 s of one core; a loaded 2-core CI machine can take several times that.
  t = await startTestApp(
    { graphConfigPath: GRAPH_CONFIG, schemaResolveTimeoutMs: TYPES_TIMEOUT_MS },
    { log },
  );
  lg = new Client({ apiUrl: t.baseUrl, apiKey: t.adminKey, callerOptions: { maxRetries: 0 } });
});
afterAll(() => t?.stop());

/** A subgraph answer of the JS server under the API's key names (as its OpenAPI spec names them). */
function asApiSchemas(set: JsSchemaSet | undefined): Record<string, unknown> {
  const named: Record<string, unknown> = {};
  if (set?.input) named.input_schema = set.input;
  if (set?.output) named.output_schema = set.output;
  if (set?.state) named.state_schema = set.state;
  if (set?.config) Object.assign(named, { config_schema: set.config, context_schema: set.config });
  return named;
}

describe("schemas of an Annotation graph, read from its TypeScript types", () => {
  it("describe its fields with their types and doc comments, messages as BaseMessage", {
    timeout: TYPES_TIMEOUT_MS,
  }, async () => {
    const schemas = await lg.assistants.getSchemas("annotation");
    const draft07 = "http://json-schema.org/draft-07/schema#";
    expect(schemas.state_schema).toMatchObject({
      $schema: draft07,
      type: "object",
      properties: {
        question: { type: "string", description: "The question being answered." },
        steps: { type: "number", description: "How many planning steps ran." },
        mode: { type: "string", enum: ["fast", "thorough"] },
        notes: { type: "array", items: { type: "string" } },
        messages: { type: "array", items: { $ref: expect.stringMatching(/^#\/definitions\/BaseMessage/) } },
      },
    });
    const state = schemas.state_schema as { definitions: Record<string, unknown>; properties: object };
    const messageRef = "BaseMessage<MessageStructure<MessageToolSet>,MessageType>";
    expect(state.definitions[messageRef]).toMatchObject({
      description: expect.stringContaining("Base class for all types of messages"),
    });
    expect(schemas.input_schema).toMatchObject({ properties: state.properties });
    expect(schemas.output_schema).toMatchObject({ properties: state.properties });
    expect(schemas.config_schema).toEqual({
      $schema: draft07,
      type: "object",
      properties: {
        model_name: { type: "string", description: "The chat model to plan with." },
        temperature: { type: "number" },
      },
    });
    expect(schemas.context_schema).toEqual(schemas.config_schema);
    expect(schemas).toEqual(reference.graphs.annotation?.schemas);
  });

  it("describe its MessagesAnnotation subgraph, by namespace", async () => {
    const all = await lg.assistants.getSubgraphs("annotation", { recurse: true });
    expect(Object.keys(all)).toEqual(["research"]);
    expect(all.research?.state_schema).toMatchObject({
      properties: { messages: { type: "array" } },
    });
    expect(all.research).toEqual(asApiSchemas(reference.graphs.annotation?.subgraphs.research));
    expect(await lg.assistants.getSubgraphs("annotation", { namespace: "research" })).toEqual(all);
  });
});

describe("schemas of an Annotation graph with a zod config schema", () => {
  it("read the state from its types and keep the zod config (the JS server answers the config alone)", {
    timeout: TYPES_TIMEOUT_MS,
  }, async () => {
    const schemas = await lg.assistants.getSchemas("mixed");
    const js = reference.graphs.mixed?.schemas;
    expect(js).not.toHaveProperty("state_schema");
    expect(schemas.config_schema).toEqual(js?.config_schema);
    expect(schemas.context_schema).toEqual(js?.config_schema);
    expect(schemas.state_schema).toMatchObject({
      properties: {
        topic: { type: "string", description: "What to write about." },
        draft: { type: "string" },
      },
    });
    expect(schemas.input_schema).toBeDefined();
    expect(schemas.output_schema).toBeDefined();
  });
});

describe("schemas of graphs with runtime schemas", () => {
  it("keep the zod registry's metadata and reducer input types (withLangGraph)", async () => {
    const schemas = await lg.assistants.getSchemas("zod_registry");
    // The input and state take what the reducer takes (a string); the output is the stored list.
    expect(schemas.input_schema).toMatchObject({
      properties: { messages: { type: "string", langgraph_type: "messages" } },
    });
    expect(schemas.output_schema).toMatchObject({
      properties: { messages: { type: "array", items: { type: "string" }, langgraph_type: "messages" } },
    });
    expect(schemas).toEqual(reference.graphs.zod_registry?.schemas);
  });

  it("convert plain zod (v4) and StateSchema states as the JS server does", async () => {
    const plain = await lg.assistants.getSchemas("plain_zod");
    expect(plain.state_schema).toMatchObject({ properties: { items: { type: "array" }, label: {} } });
    expect(plain).toEqual(reference.graphs.plain_zod?.schemas);
    const stateSchema = await lg.assistants.getSchemas("state_schema");
    expect(stateSchema.state_schema).toMatchObject({
      properties: { messages: { langgraph_type: "messages" } },
    });
    expect(stateSchema).toEqual(reference.graphs.state_schema?.schemas);
  });
});

describe("getLogger() of @langchain/langgraph-sdk/logging", () => {
  it("works in a graph module at load, logging to the server's log with the graph id", () => {
    expect(logLines).toContainEqual(
      expect.objectContaining({
        level: "info",
        message: "logging graph loaded",
        graph_id: "logging",
        fixture: "logging-graph",
      }),
    );
  });
});

describe("LANGGRAPH_CONFIG", () => {
  /** The system assistants by graph id, as the SDK lists them. */
  const systemAssistants = async (client: Client) =>
    Object.fromEntries(
      (await client.assistants.search({ metadata: { created_by: "system" }, limit: 100 })).map((a) => [
        a.graph_id,
        a,
      ]),
    );

  it("gives the system assistants their config and context (from the graphs file's env)", async () => {
    const system = await systemAssistants(lg);
    expect(system.annotation).toMatchObject({
      version: 1,
      config: { configurable: { model_name: "openai" } },
      context: { model_name: "openai" },
    });
    expect(system.plain_zod).toMatchObject({
      config: { recursion_limit: 5, configurable: { model: "unknown" } },
      context: { model: "unknown" },
    });
    expect(system.zod_registry).toMatchObject({ config: {}, context: {} });
  });

  it("reaches existing system assistants once when it changes, and keeps user edits while it does not", async () => {
    const edited = await lg.assistants.update("annotation", { context: { model_name: "mine" } });
    expect(edited.version).toBe(2);
    // A process started with the same value (another replica, or a restart) leaves the edit alone.
    const same = await startTestApp({
      databaseUrl: t.databaseUrl,
      bootstrapApiKey: t.adminKey,
      graphConfigPath: GRAPH_CONFIG,
    });
    try {
      const viaSame = new Client({
        apiUrl: same.baseUrl,
        apiKey: t.adminKey,
        callerOptions: { maxRetries: 0 },
      });
      expect((await systemAssistants(viaSame)).annotation).toMatchObject({
        version: 2,
        context: { model_name: "mine" },
      });
    } finally {
      await same.stop();
    }
    // The process environment's value replaces the file's, and a changed value is applied.
    const parsed = parseSystemAssistantDefaults('{"annotation": {"context": {"model_name": "anthropic"}}}');
    if (!("defaults" in parsed)) throw new Error(parsed.problems.join("; "));
    const changed = await startTestApp({
      databaseUrl: t.databaseUrl,
      bootstrapApiKey: t.adminKey,
      graphConfigPath: GRAPH_CONFIG,
      assistantDefaults: parsed.defaults,
    });
    try {
      const viaChanged = new Client({
        apiUrl: changed.baseUrl,
        apiKey: t.adminKey,
        callerOptions: { maxRetries: 0 },
      });
      const system = await systemAssistants(viaChanged);
      expect(system.annotation).toMatchObject({
        version: 3,
        config: { configurable: { model_name: "anthropic" } },
        context: { model_name: "anthropic" },
      });
      // plain_zod is not in the new value, so it is back to an empty config and context.
      expect(system.plain_zod).toMatchObject({ version: 2, config: {}, context: {} });
      const history = await viaChanged.assistants.getVersions("annotation");
      expect(history.map((v) => v.context)).toEqual([
        { model_name: "anthropic" },
        { model_name: "mine" },
        { model_name: "openai" },
      ]);
    } finally {
      await changed.stop();
    }
  });
});
