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
import { exampleGraphConfig } from "./example/example-config.js";
import { loadGraphConfigFile } from "./graph-config.js";
import { drawGraph, graphSchemas } from "./graph-introspection.js";
import {
  createGraphRegistry,
  GraphLoadError,
  type GraphRegistry,
  loadGraphRegistry,
} from "./graph-registry.js";

const silent = createLogger("error", () => {});

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
  registry = await createGraphRegistry(await loadGraphConfigFile(fixture.configFile));
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
      const error = await createGraphRegistry(await loadGraphConfigFile(broken.configFile)).then(
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

describe("loadGraphRegistry", () => {
  it("serves the bundled example when there is no config file, and says so", async () => {
    const lines: string[] = [];
    const empty = await mkdtemp(join(tmpdir(), "agentplane-no-config-"));
    const example = await loadGraphRegistry({
      configPath: undefined,
      cwd: empty,
      log: createLogger("info", (line) => lines.push(line)),
    });
    await rm(empty, { recursive: true });
    expect(example.ids()).toEqual(["agent"]);
    expect(example.configFile).toBeUndefined();
    expect(lines.join("")).toContain("serving the bundled example graph");
  });

  it("loads AGENTPLANE_CONFIG's file", async () => {
    const loaded = await loadGraphRegistry({ configPath: fixture.configFile, cwd: "/", log: silent });
    expect(loaded.configFile).toBe(fixture.configFile);
    expect(loaded.ids()).toContain("compiled");
  });
});

describe("the bundled example agent", () => {
  it("answers from its scripted model and calls its tool when asked for the time", async () => {
    const example = await createGraphRegistry(exampleGraphConfig());
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
    const example = await createGraphRegistry(exampleGraphConfig());
    const graph = await example.get("agent")!.load();
    const drawn = (await drawGraph(graph, false)) as {
      nodes: { id: string }[];
      edges: { source: string; target: string }[];
    };
    expect(drawn.nodes.map((n) => n.id)).toEqual(["__start__", "agent", "tools", "__end__"]);
    expect(drawn.edges).toContainEqual(expect.objectContaining({ source: "tools", target: "agent" }));
    const schemas = graphSchemas(graph);
    expect(schemas.state_schema).toMatchObject({ properties: { messages: {} } });
    expect(schemas.config_schema).toMatchObject({ properties: { system_prompt: { type: "string" } } });
    expect(schemas.context_schema).toEqual(schemas.config_schema);
  });
});
