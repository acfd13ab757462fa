import { cp, mkdir, mkdtemp, readdir, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CompiledGraph } from "./graph-registry.js";
import { runtimeGraphSchemas } from "./graph-runtime-schemas.js";

/** A zod state registered with withLangGraph: a reducer taking strings, and a `langgraph_type`. */
const REGISTRY_MODULE = `
import { START, StateGraph } from "@langchain/langgraph";
import { withLangGraph } from "@langchain/langgraph/zod";
import { z } from "zod/v3";
const State = z.object({
  messages: withLangGraph(z.array(z.string()), {
    reducer: { schema: z.string(), fn: (a, b) => [...a, b] },
    default: () => [],
    jsonSchemaExtra: { langgraph_type: "messages" },
  }),
});
export const graph = new StateGraph(State).addNode("a", () => ({})).addEdge(START, "a").compile();
`;

/** Graphs with other kinds of state. */
const OTHER_MODULE = `
import { Annotation, MessagesValue, START, StateGraph, StateSchema } from "@langchain/langgraph";
import { z } from "zod/v4";
const Plain = z.object({ items: z.array(z.string()), label: z.string().optional() });
export const plain = new StateGraph(Plain, z.object({ model: z.string() })).addNode("a", () => ({})).addEdge(START, "a").compile();
export const stateSchema = new StateGraph(new StateSchema({ messages: MessagesValue })).addNode("a", () => ({})).addEdge(START, "a").compile();
const Annotated = Annotation.Root({ count: Annotation<number> });
export const annotated = new StateGraph(Annotated).addNode("a", () => ({})).addEdge(START, "a").compile();
`;

let project: string;

/**
 * A user project whose node_modules has its own copy of @langchain/langgraph (the rest linked to the
 * repo's): the graph's module then uses a second copy of the library, with its own zod registry.
 */
beforeAll(async () => {
  project = await mkdtemp(join(tmpdir(), "agentplane-own-langgraph-"));
  const repoModules = resolve("node_modules");
  await mkdir(join(project, "node_modules", "@langchain"), { recursive: true });
  for (const entry of await readdir(repoModules)) {
    if (entry !== "@langchain") await symlink(join(repoModules, entry), join(project, "node_modules", entry));
  }
  for (const entry of await readdir(join(repoModules, "@langchain"))) {
    const target = join(project, "node_modules", "@langchain", entry);
    if (entry === "langgraph") await cp(join(repoModules, "@langchain", entry), target, { recursive: true });
    else await symlink(join(repoModules, "@langchain", entry), target);
  }
  await writeFile(join(project, "package.json"), JSON.stringify({ type: "module" }));
  await writeFile(join(project, "registry.ts"), REGISTRY_MODULE);
  await writeFile(join(project, "other.ts"), OTHER_MODULE);
});
afterAll(() => rm(project, { recursive: true, force: true }));

/** The graph a module of the project exports, with that module's path. */
async function load(file: string, name = "graph"): Promise<[CompiledGraph, string]> {
  const path = join(project, file);
  const module = (await import(path)) as Record<string, CompiledGraph>;
  return [module[name] as CompiledGraph, path];
}

describe("runtimeGraphSchemas", () => {
  it("reads withLangGraph metadata through the graph's own copy of @langchain/langgraph", async () => {
    const [graph, file] = await load("registry.ts");
    const schemas = await runtimeGraphSchemas(graph, file);
    expect(schemas?.input).toMatchObject({
      properties: { messages: { type: "string", langgraph_type: "messages" } },
    });
    expect(schemas?.output).toMatchObject({
      properties: { messages: { type: "array", langgraph_type: "messages" } },
    });
    // Read through agentplane's own copy instead, the registry is empty: the metadata is lost.
    const ownCopy = await runtimeGraphSchemas(graph, resolve("package.json"));
    expect(ownCopy?.input).toMatchObject({ properties: { messages: { type: "array" } } });
    expect(JSON.stringify(ownCopy)).not.toContain("langgraph_type");
  });

  it("converts plain zod, input defaulting to the state without required fields", async () => {
    const [graph, file] = await load("other.ts", "plain");
    const schemas = await runtimeGraphSchemas(graph, file);
    expect(schemas?.state).toMatchObject({ properties: { items: { type: "array" } } });
    expect(schemas?.config).toMatchObject({ properties: { model: { type: "string" } } });
    expect(schemas?.input).not.toHaveProperty("required");
  });

  it("asks a StateSchema for its own JSON Schema", async () => {
    const [graph, file] = await load("other.ts", "stateSchema");
    const schemas = await runtimeGraphSchemas(graph, file);
    expect(schemas?.state).toEqual({
      type: "object",
      properties: { messages: { langgraph_type: "messages", description: "A list of chat messages" } },
    });
    expect(schemas?.input).toEqual(schemas?.state);
  });

  it("has nothing for an Annotation state, which only its TypeScript types describe", async () => {
    const [graph, file] = await load("other.ts", "annotated");
    expect(await runtimeGraphSchemas(graph, file)).toBeUndefined();
  });
});
