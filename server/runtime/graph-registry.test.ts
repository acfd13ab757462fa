import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HumanMessage } from "@langchain/core/messages";
import { InMemoryStore, MemorySaver } from "@langchain/langgraph";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type GraphFixture,
  NESTED_GRAPH_MODULE,
  writeGraphFixture,
} from "../../test/support/graph-fixture.js";
import { createLogger } from "../logger.js";
import type { AssistantSettings } from "../settings/assistant-settings.js";
import { exampleGraphConfig } from "./bundled-example-config.js";
import { loadGraphConfigFile } from "./graph-config.js";
import { drawGraph, graphSchemas } from "./graph-introspection.js";
import {
  createGraphRegistry,
  GraphLoadError,
  type GraphRegistry,
  loadGraphRegistry,
} from "./graph-registry.js";

const silent = createLogger("error", () => {});
/** Registry options for tests that read no schemas from types. */
const options = { log: silent, schemaTimeoutMs: 30_000 };

/** A module exporting a graph in each accepted form; `made` counts factory calls. */
const FORMS_MODULE = `
import { Annotation, START, StateGraph } from "@langchain/langgraph";
const State = Annotation.Root({ seen: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }) });
const builder = () => new StateGraph(State).addNode("mark", (_s, config) => ({ seen: [config?.configurable?.tag ?? "none"] })).addEdge(START, "mark");
export let made = 0;
export const compiled = builder().compile();
export const uncompiled = builder();
export const promised = Promise.resolve(builder().compile());
export const factory = async (config) => { made += 1; return builder(); };
export const syncFactory = () => builder().compile();
export const wrapped = { graph: builder().compile() };
export const notAGraph = { hello: "world" };
export const badFactory = () => 42;
export const brokenBuilder = new StateGraph(State).addNode("alone", () => ({}));
`;

let fixture: GraphFixture;
let registry: GraphRegistry;

beforeAll(async () => {
  fixture = await writeGraphFixture(
    { "forms.ts": FORMS_MODULE, "nested.ts": NESTED_GRAPH_MODULE },
    {
      graphs: {
        compiled: "./forms.ts:compiled",
        uncompiled: "./forms.ts:uncompiled",
        promised: "./forms.ts:promised",
        factory: { path: "./forms.ts:factory", description: "made per run" },
        syncFactory: "./forms.ts:syncFactory",
        wrapped: "./forms.ts:wrapped",
        badFactory: "./forms.ts:badFactory",
      },
      env: { AGENTPLANE_TEST_GRAPH_ENV: "from-config" },
    },
  );
  registry = await createGraphRegistry(await loadGraphConfigFile(fixture.configFile), options);
});
afterAll(() => fixture?.remove());

describe("createGraphRegistry", () => {
  it("registers every graph in config order and applies the config's env", () => {
    expect(registry.ids()).toEqual([
      "compiled",
      "uncompiled",
      "promised",
      "factory",
      "syncFactory",
      "wrapped",
      "badFactory",
    ]);
    expect(registry.get("factory")?.description).toBe("made per run");
    expect(registry.get("nope")).toBeUndefined();
    expect(process.env.AGENTPLANE_TEST_GRAPH_ENV).toBe("from-config");
  });

  it("loads each export form into a runnable graph with the given checkpointer and store", async () => {
    for (const id of ["compiled", "uncompiled", "promised", "factory", "syncFactory", "wrapped"]) {
      const checkpointer = new MemorySaver();
      const store = new InMemoryStore();
      const graph = await registry
        .get(id)!
        .load({ checkpointer, store, config: { configurable: { tag: id } } });
      expect(graph.checkpointer, id).toBe(checkpointer);
      expect(graph.store, id).toBe(store);
      const config = { configurable: { thread_id: "t1", tag: id } };
      expect(await graph.invoke({ seen: [] }, config), id).toEqual({ seen: [id] });
      // The checkpointer really is the graph's: the thread's state is in it.
      expect((await checkpointer.getTuple(config))?.checkpoint.channel_values, id).toMatchObject({
        seen: [id],
      });
    }
  });

  it("gives each load its own copy, leaving the module's graph untouched", async () => {
    const module = (await import(`${fixture.dir}/forms.ts`)) as { compiled: { checkpointer: unknown } };
    const a = await registry.get("compiled")!.load({ checkpointer: new MemorySaver() });
    const b = await registry.get("compiled")!.load();
    expect(a).not.toBe(b);
    expect(b.checkpointer).toBeUndefined();
    expect(module.compiled.checkpointer).toBeUndefined();
  });

  it("calls a factory on every load", async () => {
    const module = (await import(`${fixture.dir}/forms.ts`)) as { made: number };
    const before = module.made;
    await registry.get("factory")!.load();
    await registry.get("factory")!.load();
    expect(module.made).toBe(before + 2);
  });

  it("fails a factory that returns no graph with the graph id and file", async () => {
    await expect(registry.get("badFactory")!.load()).rejects.toThrow(
      /graph "badFactory" \(.*forms\.ts, export "badFactory"\) cannot be loaded: the factory returned a number/,
    );
  });

  it.each([
    ["./forms.ts:notAGraph", /export "notAGraph"\) cannot be loaded: the export is an object of type Object/],
    ["./forms.ts:missing", /cannot be loaded: the module has no export "missing" \(its exports: .*compiled/],
    ["./forms.ts:brokenBuilder", /cannot be loaded: compiling the StateGraph failed: .*/],
    ["./nope.ts:graph", /nope\.ts, export "graph"\) cannot be loaded: importing the module failed/],
    ["./syntax.ts:graph", /syntax\.ts, export "graph"\) cannot be loaded: importing the module failed/],
  ])("stops at a broken graph (%s) naming graph id, file and cause", async (path, message) => {
    const broken = await writeGraphFixture(
      { "forms.ts": FORMS_MODULE, "syntax.ts": "export const graph = ;" },
      { graphs: { broken: path } },
    );
    try {
      const error = await createGraphRegistry(await loadGraphConfigFile(broken.configFile), options).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(GraphLoadError);
      expect(String((error as Error).message)).toMatch(/^graph "broken" \(/);
      expect((error as Error).message).toMatch(message);
    } finally {
      await broken.remove();
    }
  });
});

describe("LANGGRAPH_CONFIG", () => {
  it("gives each graph its system assistant's settings; the process's value wins over the file's", async () => {
    const lines: string[] = [];
    const withEnv = await writeGraphFixture(
      { "forms.ts": FORMS_MODULE },
      {
        graphs: { compiled: "./forms.ts:compiled", other: "./forms.ts:uncompiled" },
        env: { LANGGRAPH_CONFIG: JSON.stringify({ compiled: { context: { from: "file" } } }) },
      },
    );
    try {
      const config = await loadGraphConfigFile(withEnv.configFile);
      const fromFile = await createGraphRegistry(config, options);
      expect(fromFile.get("compiled")?.assistantDefaults).toEqual({
        config: { configurable: { from: "file" } },
        context: { from: "file" },
      });
      expect(fromFile.get("other")?.assistantDefaults).toEqual({ config: {}, context: {} });
      const fromProcess = await createGraphRegistry(config, {
        ...options,
        log: createLogger("warn", (line) => lines.push(line)),
        assistantDefaults: new Map<string, AssistantSettings>([
          ["other", { config: { configurable: { from: "process" } }, context: { from: "process" } }],
          ["typo", { config: {}, context: {} }],
        ]),
      });
      expect(fromProcess.get("compiled")?.assistantDefaults).toEqual({ config: {}, context: {} });
      expect(fromProcess.get("other")?.assistantDefaults.context).toEqual({ from: "process" });
      expect(lines.join("")).toContain(
        'LANGGRAPH_CONFIG names graph \\"typo\\", which is not a graph of this server; it is ignored',
      );
    } finally {
      await withEnv.remove();
    }
  });
});

describe("loadGraphRegistry", () => {
  it("serves the bundled example when there is no config file, and says so", async () => {
    const lines: string[] = [];
    const empty = await mkdtemp(join(tmpdir(), "agentplane-no-config-"));
    const example = await loadGraphRegistry({
      configPath: undefined,
      cwd: empty,
      log: createLogger("info", (line) => lines.push(line)),
      schemaTimeoutMs: 30_000,
    });
    await rm(empty, { recursive: true });
    expect(example.ids()).toEqual(["agent"]);
    expect(example.configFile).toBeUndefined();
    expect(lines.join("")).toContain("serving the bundled example graph");
  });

  it("loads AGENTPLANE_CONFIG's file", async () => {
    const loaded = await loadGraphRegistry({ ...options, configPath: fixture.configFile, cwd: "/" });
    expect(loaded.configFile).toBe(fixture.configFile);
    expect(loaded.ids()).toContain("compiled");
  });
});

describe("the bundled example agent", () => {
  it("answers from its scripted model and calls its tool when asked for the time", async () => {
    const example = await createGraphRegistry(exampleGraphConfig(), options);
    const graph = await example.get("agent")!.load({ checkpointer: new MemorySaver() });
    const config = { configurable: { thread_id: "example" } };
    const first = await graph.invoke({ messages: [new HumanMessage("hi")] }, config);
    expect(first.messages.at(-1).content).toBe("Hello! I am agentplane's example agent.");
    const timed = await graph.invoke({ messages: [new HumanMessage("what time is it?")] }, config);
    const types = timed.messages.map((m: { getType(): string }) => m.getType());
    expect(types).toEqual(["human", "ai", "human", "ai", "tool", "ai"]);
    expect(timed.messages.at(-1).content).toMatch(/^The time is \d{4}-\d\d-\d\dT/);
  });

  it("can be drawn and describes its state and config schemas", async () => {
    const example = await createGraphRegistry(exampleGraphConfig(), options);
    const graph = await example.get("agent")!.load();
    const drawn = (await drawGraph(graph, false)) as {
      nodes: { id: string }[];
      edges: { source: string; target: string }[];
    };
    expect(drawn.nodes.map((n) => n.id)).toEqual(["__start__", "agent", "tools", "__end__"]);
    expect(drawn.edges).toContainEqual(expect.objectContaining({ source: "tools", target: "agent" }));
    const schemas = await graphSchemas(example.get("agent")!, graph);
    expect(schemas.state_schema).toMatchObject({ properties: { messages: {} } });
    expect(schemas.config_schema).toMatchObject({ properties: { system_prompt: { type: "string" } } });
    expect(schemas.context_schema).toEqual(schemas.config_schema);
  });
});
