import { pathToFileURL } from "node:url";
import type { RunnableConfig } from "@langchain/core/runnables";
import type { BaseCheckpointSaver, BaseStore, Pregel } from "@langchain/langgraph";
import type { Logger } from "../logger.js";
import { exampleGraphConfig } from "./example/example-config.js";
import {
  findGraphConfigFile,
  type GraphConfig,
  type GraphSpec,
  loadGraphConfigFile,
} from "./graph-config.js";

/**
 * A compiled LangGraph.js graph (a `CompiledStateGraph`, or a `Pregel` from the functional API).
 * Its state, input and output types belong to the user's code, so they are left open here.
 */
// biome-ignore lint/suspicious/noExplicitAny: user graphs have arbitrary node and channel types.
export type CompiledGraph = Pregel<any, any>;

/** What {@link RegisteredGraph.load} attaches to the graph it returns. */
export interface GraphLoadOptions {
  /** agentplane's checkpointer; the graph gets none when omitted (e.g. to draw it). */
  readonly checkpointer?: BaseCheckpointSaver;
  /** agentplane's store, reachable from nodes as `config.store` / `getStore()`. */
  readonly store?: BaseStore;
  /** The run's config: passed to a factory export; unused for other exports. */
  readonly config?: RunnableConfig;
}

/** One graph of the config, ready to run. */
export interface RegisteredGraph {
  /** The graph id (the key in the config's `graphs`). */
  readonly graphId: string;
  /** The config's description, else the compiled graph's own, if any. */
  readonly description?: string;
  /**
   * A compiled graph with exactly `options.checkpointer` and `options.store` attached: a fresh
   * copy every call, so concurrent runs never share (or mutate) the user's module-level instance.
   * A factory export is called with `options.config` (sync or async).
   */
  load(options?: GraphLoadOptions): Promise<CompiledGraph>;
}

/** The graphs a process serves. */
export interface GraphRegistry {
  /** Graph ids, in config order. */
  ids(): string[];
  /** The graph with this id, if registered. */
  get(graphId: string): RegisteredGraph | undefined;
  /** Where the graphs came from: the config file, or undefined for the bundled example. */
  readonly configFile: string | undefined;
  /** The config file's `store`, `checkpointer` and `http` settings. */
  readonly settings: Pick<GraphConfig, "store" | "checkpointer" | "http">;
}

/** Thrown when a graph module cannot be loaded; names the graph id, the file and the cause. */
export class GraphLoadError extends Error {
  constructor(spec: GraphSpec, reason: string, cause?: unknown) {
    super(`graph "${spec.graphId}" (${spec.file}, export "${spec.exportName}") cannot be loaded: ${reason}`, {
      cause,
    });
    this.name = "GraphLoadError";
  }
}

/**
 * Loads every graph of `config` with dynamic `import()` (tsx runs the process, so `.ts`, `.mts` and
 * `.js` modules all load) and checks each export is a graph, a `StateGraph` (compiled here), a
 * promise of one, a factory function, or a `createAgent`-style wrapper with a `.graph`. The config's
 * `env` is applied to `process.env` first (variables already set win). Throws a
 * {@link GraphLoadError} at the first broken graph, so start-up stops.
 */
export async function createGraphRegistry(config: GraphConfig): Promise<GraphRegistry> {
  for (const [name, value] of Object.entries(config.env)) process.env[name] ??= value;
  const graphs = new Map<string, RegisteredGraph>();
  for (const spec of config.graphs) graphs.set(spec.graphId, await registerGraph(spec));
  return {
    ids: () => [...graphs.keys()],
    get: (graphId) => graphs.get(graphId),
    configFile: config.file,
    settings: { store: config.store, checkpointer: config.checkpointer, http: config.http },
  };
}

/**
 * The registry of a process: the config file `configPath` (AGENTPLANE_CONFIG) names, else
 * agentplane.json or langgraph.json in `cwd`, else the bundled example graph (which it logs).
 */
export async function loadGraphRegistry(options: {
  configPath: string | undefined;
  cwd: string;
  log: Logger;
}): Promise<GraphRegistry> {
  const { log } = options;
  const file = await findGraphConfigFile(options.configPath, options.cwd);
  const config = file === undefined ? exampleGraphConfig() : await loadGraphConfigFile(file);
  for (const warning of config.warnings) log.warn(`graph config: ${warning}`, { file });
  const registry = await createGraphRegistry(config);
  if (file === undefined) {
    log.info(
      "no agentplane.json or langgraph.json here and AGENTPLANE_CONFIG is not set: serving the bundled example graph",
      { graphs: registry.ids() },
    );
  } else {
    log.info("loaded graphs", { file, graphs: registry.ids() });
  }
  return registry;
}

async function registerGraph(spec: GraphSpec): Promise<RegisteredGraph> {
  let module: Record<string, unknown>;
  try {
    module = (await import(pathToFileURL(spec.file).href)) as Record<string, unknown>;
  } catch (error) {
    throw new GraphLoadError(spec, `importing the module failed: ${messageOf(error)}`, error);
  }
  if (!(spec.exportName in module)) {
    const names = Object.keys(module).join(", ") || "none";
    throw new GraphLoadError(spec, `the module has no export "${spec.exportName}" (its exports: ${names})`);
  }
  let exported: unknown;
  try {
    exported = await module[spec.exportName];
  } catch (error) {
    throw new GraphLoadError(spec, `the exported promise rejected: ${messageOf(error)}`, error);
  }
  const description = spec.description;
  if (typeof exported === "function") {
    const factory = exported as (config: RunnableConfig) => unknown;
    return {
      graphId: spec.graphId,
      ...(description === undefined ? {} : { description }),
      async load(options = {}) {
        const made = await factory(options.config ?? {});
        const compiled = toCompiled(made);
        if (!compiled) throw new GraphLoadError(spec, `the factory returned ${describe(made)}, not a graph`);
        return attach(compiled, options);
      },
    };
  }
  let compiled: CompiledGraph | undefined;
  try {
    compiled = toCompiled(exported);
  } catch (error) {
    throw new GraphLoadError(spec, `compiling the StateGraph failed: ${messageOf(error)}`, error);
  }
  if (!compiled) {
    throw new GraphLoadError(
      spec,
      `the export is ${describe(exported)}; expected a compiled graph, a StateGraph, a promise of one, or a factory function`,
    );
  }
  const graph = compiled;
  const own = (graph as { description?: unknown }).description;
  const ownDescription = description ?? (typeof own === "string" ? own : undefined);
  return {
    graphId: spec.graphId,
    ...(ownDescription === undefined ? {} : { description: ownDescription }),
    load: async (options = {}) => attach(graph, options),
  };
}

/** A compiled graph from an export value, compiling a builder; undefined when it is neither. */
function toCompiled(value: unknown): CompiledGraph | undefined {
  if (!isObject(value)) return undefined;
  if (value.lg_is_pregel === true) return value as unknown as CompiledGraph;
  // A StateGraph (or any builder): it has compile() and nodes but is not itself runnable.
  if (typeof value.compile === "function" && isObject(value.nodes)) {
    return toCompiled((value.compile as () => unknown).call(value));
  }
  // createAgent() and similar wrappers expose the compiled graph as `.graph`.
  if (isObject(value.graph)) return toCompiled(value.graph);
  return undefined;
}

/**
 * A copy of `graph` with agentplane's checkpointer and store. `withConfig({})` is the library's own
 * copy constructor (`new this.constructor({...this})`, keeping builder, nodes, channels and
 * interrupt settings); assigning `checkpointer` and `store` on the copy is what
 * `StateGraph.compile({ checkpointer, store })` does, without touching the shared original.
 */
function attach(graph: CompiledGraph, options: GraphLoadOptions): CompiledGraph {
  const copy = graph.withConfig({}) as CompiledGraph;
  copy.checkpointer = options.checkpointer;
  copy.store = options.store;
  return copy;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (typeof value === "object") return `an object of type ${value.constructor?.name ?? "Object"}`;
  return `a ${typeof value}`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
