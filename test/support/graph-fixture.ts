import { mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

/** A user project in a temp dir: graph modules, a config file, and the repo's node_modules linked in. */
export interface GraphFixture {
  /** The project folder. */
  readonly dir: string;
  /** Path of the config file written (langgraph.json unless named otherwise). */
  readonly configFile: string;
  /** Removes the folder. */
  remove(): Promise<void>;
}

/**
 * Writes a user project: `files` (relative path → contents) and `config` as `configName`. The repo's
 * node_modules is symlinked in, as a real project would have its own, so graph modules can import
 * `@langchain/langgraph` (Node resolves symlinks, so it is the same module instance as the server's).
 */
export async function writeGraphFixture(
  files: Record<string, string>,
  config: unknown,
  configName = "langgraph.json",
): Promise<GraphFixture> {
  const dir = await mkdtemp(join(tmpdir(), "agentplane-graphs-"));
  await symlink(resolve("node_modules"), join(dir, "node_modules"), "dir");
  await writeFile(join(dir, "package.json"), JSON.stringify({ type: "module" }));
  for (const [path, text] of Object.entries(files)) await writeFile(join(dir, path), text);
  const configFile = join(dir, configName);
  await writeFile(configFile, typeof config === "string" ? config : JSON.stringify(config, null, 2));
  return { dir, configFile, remove: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * A zod-state graph `parent` with a two-node subgraph `child` (so xray drawing and subgraph
 * schemas have something to show), a config schema, and an Annotation graph.
 */
export const NESTED_GRAPH_MODULE = `
import { Annotation, END, MessagesZodState, START, StateGraph } from "@langchain/langgraph";
import { z } from "zod";

const Inner = z.object({ messages: MessagesZodState.shape.messages, steps: z.number().optional() });
const child = new StateGraph(Inner)
  .addNode("first", () => ({ steps: 1 }))
  .addNode("second", () => ({ steps: 2 }))
  .addEdge(START, "first")
  .addEdge("first", "second")
  .addEdge("second", END)
  .compile();

export const graph = new StateGraph(Inner, z.object({ model_name: z.string().optional() }))
  .addNode("prepare", () => ({}))
  .addNode("child", child)
  .addEdge(START, "prepare")
  .addEdge("prepare", "child")
  .addEdge("child", END)
  .compile();

const Plain = Annotation.Root({ count: Annotation<number> });
export const annotated = new StateGraph(Plain).addNode("inc", (s) => ({ count: (s.count ?? 0) + 1 })).addEdge(START, "inc").compile();
`;
