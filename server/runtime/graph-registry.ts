import { pathToFileURL } from "node:url";
import type { RunnableConfig } from "@langchain/core/runnables";
import type { BaseCheckpointSaver, BaseStore, Pregel } from "@langchain/langgraph";
import type { Logger } from "../logger.js";
import type { AssistantSettings } from "../settings/assistant-settings.js";
import { LANGGRAPH_CONFIG, type SystemAssistantDefaults } from "../settings/system-assistant-defaults.js";
import { exampleGraphConfig } from "./bundled-example-config.js";
import {
  findGraphConfigFile,
  type GraphConfig,
  GraphConfigError,
  type GraphSpec,
  loadGraphConfigFile,
} from "./graph-config.js";
import { resolveWebhooksSection, type WebhooksFileSettings } from "./graph-config-webhooks.js";
import { registerSdkLogger, withGraphLogContext } from "./graph-logger.js";
import { createStaticSchemaExtractor, type StaticGraphSchemas } from "./graph-static-schemas.js";

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
  /** Absolute path of the graph's module. */
  readonly file: string;
  /** The module's export holding the graph. */
  readonly exportName: string;
  /** The config's description, else the compiled graph's own, if any. */
  readonly description?: string;
  /** The config and context of the graph's system assistant (from `LANGGRAPH_CONFIG`). */
  readonly assistantDefaults: AssistantSettings;
  /** True when the export is a factory of the run's config: each config may build another graph. */
  readonly factory: boolean;
  /**
   * A compiled graph with exactly `options.checkpointer` and `options.store` attached: a fresh
   * copy every call, so concurrent runs never share (or mutate) the user's module-level instance.
   * A factory export is called with `options.config` (sync or async).
   */
  load(options?: GraphLoadOptions): Promise<CompiledGraph>;
  /**
   * The graph's and its subgraphs' schemas read from their TypeScript types (for graphs whose state
   * carries no runtime schema, such as an `Annotation`): derived in a worker thread the first time
   * they are asked for, then kept. Undefined when they cannot be derived (the reason is logged once).
   */
  staticSchemas(): Promise<StaticGraphSchemas | undefined>;
}

/** The graphs a process serves. */
export interface GraphRegistry {
  /** Graph ids, in config order. */
  ids(): string[];
  /** The graph with this id, if registered. */
  get(graphId: string): RegisteredGraph | undefined;
  /** Where the graphs came from: the config file, or undefined for the bundled example. */
  readonly configFile: string | undefined;
  /** The config file's `store`, `checkpointer`, `http`, `ui`, `auth`, `encryption` and `webhooks` settings. */
  readonly settings: Pick<GraphConfig, "store" | "checkpointer" | "http" | "ui" | "auth" | "encryption"> & {
    /** `webhooks`, its header templates filled in at start. */
    readonly webhooks?: WebhooksFileSettings;
  };
  /** Stops work in progress (a schema extraction); call it when the process stops. */
  close(): Promise<void>;
}

/** What a registry needs besides the graph config. */
export interface GraphRegistryOptions {
  /** Where the registry logs, and where graphs' `getLogger()` lines go. */
  readonly log: Logger;
  /** How long reading one graph's schemas from its types may take (LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS). */
  readonly schemaTimeoutMs: number;
  /**
   * `LANGGRAPH_CONFIG` from the process environment; it wins over the one in the graphs file's
   * `env`, as every variable already set does.
   */
  readonly assistantDefaults?: SystemAssistantDefaults;
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

/** A system assistant's settings when `LANGGRAPH_CONFIG` does not name its graph. */
const NO_SETTINGS: AssistantSettings = Object.freeze({ config: {}, context: {} });

/**
 * Loads every graph of `config` with dynamic `import()` (tsx runs the process, so `.ts`, `.mts` and
 * `.js` modules all load) and checks each export is a graph, a `StateGraph` (compiled here), a
 * promise of one, a factory function, or a `createAgent`-style wrapper with a `.graph`. The config's
 * `env` is applied to `process.env` first (variables already set win), and `getLogger()` of
 * `@langchain/langgraph-sdk/logging` is made to work before the first module is imported. Throws a
 * {@link GraphLoadError} at the first broken graph, so start-up stops.
 */
export async function createGraphRegistry(
  config: GraphConfig,
  options: GraphRegistryOptions,
): Promise<GraphRegistry> {
  const { log } = options;
  for (const [name, value] of Object.entries(config.env)) process.env[name] ??= value;
  const webhooks = config.webhooks && resolveWebhooksSection(config.webhooks, process.env);
  if (webhooks && "problems" in webhooks)
    throw new GraphConfigError(config.file ?? "(bundled example)", webhooks.problems);
  registerSdkLogger(log);
  const defaults = options.assistantDefaults ?? config.assistantDefaults;
  for (const graphId of defaults?.keys() ?? []) {
    if (!config.graphs.some((spec) => spec.graphId === graphId))
      log.warn(
        `${LANGGRAPH_CONFIG} names graph "${graphId}", which is not a graph of this server; it is ignored`,
      );
  }
  const extractor = createStaticSchemaExtractor({ timeoutMs: options.schemaTimeoutMs, log });
  const graphs = new Map<string, RegisteredGraph>();
  for (const spec of config.graphs) {
    const loaded = await withGraphLogContext(spec.graphId, () => registerGraph(spec));
    graphs.set(spec.graphId, {
      ...loaded,
      file: spec.file,
      exportName: spec.exportName,
      assistantDefaults: defaults?.get(spec.graphId) ?? NO_SETTINGS,
      staticSchemas: () => extractor.schemasOf(spec),
    });
  }
  return {
    ids: () => [...graphs.keys()],
    get: (graphId) => graphs.get(graphId),
    configFile: config.file,
    settings: {
      store: config.store,
      checkpointer: config.checkpointer,
      http: config.http,
      ...(config.ui ? { ui: config.ui } : {}),
      ...(config.auth ? { auth: config.auth } : {}),
      ...(webhooks ? { webhooks: webhooks.settings } : {}),
      ...(config.encryption ? { encryption: config.encryption } : {}),
    },
    close: () => extractor.close(),
  };
}

/**
 * The registry of a process: the config file `configPath` (AGENTPLANE_CONFIG) names, else
 * agentplane.json or langgraph.json in `cwd`, else the bundled example graph (which it logs).
 */
export async function loadGraphRegistry(
  options: GraphRegistryOptions & { configPath: string | undefined; cwd: string },
): Promise<GraphRegistry> {
  const { log } = options;
  const file = await findGraphConfigFile(options.configPath, options.cwd);
  const config = file === undefined ? exampleGraphConfig() : await loadGraphConfigFile(file);
  for (const warning of config.warnings) log.warn(`graph config: ${warning}`, { file });
  const registry = await createGraphRegistry(config, options);
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

/** What {@link registerGraph} makes of a spec; the registry adds the rest. */
type LoadedGraph = Pick<RegisteredGraph, "graphId" | "description" | "load" | "factory">;

async function registerGraph(spec: GraphSpec): Promise<LoadedGraph> {
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
      factory: true,
      async load(options = {}) {
        const made = await withGraphLogContext(spec.graphId, async () => factory(options.config ?? {}));
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
    factory: false,
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
