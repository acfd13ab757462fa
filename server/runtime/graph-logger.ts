import { AsyncLocalStorage } from "node:async_hooks";
import { AsyncLocalStorageProviderSingleton } from "@langchain/core/singletons";
import type { LogFields, Logger } from "../logger.js";

/**
 * The global `getLogger()` of `@langchain/langgraph-sdk/logging` reads: the LangGraph servers put
 * their logger under this symbol before importing any graph module, and so does agentplane.
 */
const SDK_LOGGER = Symbol.for("langgraph.api.sdk-logger");

/** Levels of the SDK's (winston-shaped) logger interface, mapped onto ours. */
const LEVELS = {
  error: "error",
  warn: "warn",
  help: "info",
  data: "info",
  info: "info",
  http: "info",
  prompt: "info",
  verbose: "debug",
  input: "debug",
  debug: "debug",
  silly: "debug",
} as const;

/** A level name of the SDK's logger interface. */
export type SdkLogLevel = keyof typeof LEVELS;

/** One leveled method: `(message, ...meta)` or `(infoObject)`, chainable as winston's are. */
type SdkLogMethod = (message: unknown, ...meta: unknown[]) => SdkLogger;

/**
 * What a graph gets from `getLogger()`: the SDK's `Logger` interface (winston's leveled methods),
 * plus winston's `log(level, …)` and `child(fields)`, which graph code written for the LangGraph
 * servers also calls.
 */
export type SdkLogger = { [L in SdkLogLevel]: SdkLogMethod } & {
  log(level: string | Record<string, unknown>, message?: unknown, ...meta: unknown[]): SdkLogger;
  child(fields: Record<string, unknown>): SdkLogger;
};

/** The graph whose module (or factory) is running right now, while the registry loads it. */
const loadingGraph = new AsyncLocalStorage<string>();
/** Loads in progress under {@link loadingGraph}. */
let loads = 0;

/**
 * Runs `load` (importing a graph module, or calling a graph factory) with `graphId` as the graph
 * that lines logged through `getLogger()` are attributed to, including from top-level module code.
 * When the last load in progress ends, the storage is disabled until the next one: an entered
 * AsyncLocalStorage is copied into every new async resource of the process, a cost each run's
 * thousands of promises would pay long after start-up for a storage read only while loading (so
 * lines from work a module leaves running past its load carry no graph id).
 */
export async function withGraphLogContext<T>(graphId: string, load: () => Promise<T>): Promise<T> {
  loads += 1;
  try {
    return await loadingGraph.run(graphId, load);
  } finally {
    loads -= 1;
    if (loads === 0) loadingGraph.disable();
  }
}

/**
 * Makes `getLogger()` of `@langchain/langgraph-sdk/logging` work in graph modules, at load time and
 * in nodes: lines go to `log` (our JSON logger) with the graph id and, inside a run, the
 * `langgraph_node`, `run_id` and `thread_id` of the node that logged. Call it before importing any
 * graph module; the last call wins (one logger per process).
 */
export function registerSdkLogger(log: Logger): void {
  (globalThis as Record<symbol, unknown>)[SDK_LOGGER] = createSdkLogger(log, {});
}

/** The {@link SdkLogger} writing to `log`, with `fields` on every line. */
export function createSdkLogger(log: Logger, fields: LogFields): SdkLogger {
  const write = (level: string, message: unknown, meta: unknown[]): void => {
    const at = LEVELS[level as SdkLogLevel] ?? "info";
    const { text, fields: own } = toLine(message, meta);
    log[at](text, { ...runContext(), ...fields, ...own });
  };
  const logger = {} as SdkLogger;
  for (const level of Object.keys(LEVELS) as SdkLogLevel[]) {
    logger[level] = (message, ...meta) => {
      write(level, message, meta);
      return logger;
    };
  }
  logger.log = (level, message, ...meta) => {
    // winston also takes one info object: log({ level, message, ...fields }).
    if (typeof level === "string") write(level, message, meta);
    else {
      const { level: at, ...rest } = level;
      write(String(at), rest, []);
    }
    return logger;
  };
  logger.child = (more) => createSdkLogger(log, { ...fields, ...more });
  return logger;
}

/**
 * The graph and node a line comes from: the graph being loaded, else the run's LangChain config
 * (the metadata LangGraph gives each node: `langgraph_node`, and what the run put there).
 */
function runContext(): LogFields {
  const context: LogFields = {};
  const loading = loadingGraph.getStore();
  const metadata = (AsyncLocalStorageProviderSingleton.getRunnableConfig() as { metadata?: unknown })
    ?.metadata;
  const meta = isPlainObject(metadata) ? (metadata as Record<string, unknown>) : {};
  const graphId = loading ?? meta.graph_id;
  if (graphId !== undefined) context.graph_id = graphId;
  for (const key of ["langgraph_node", "run_id", "thread_id"]) {
    if (meta[key] !== undefined) context[key] = meta[key];
  }
  return context;
}

/** winston's call forms → our message and fields: objects merge, errors go under `error`. */
function toLine(message: unknown, meta: unknown[]): { text: string; fields: LogFields } {
  const fields: LogFields = {};
  const extra: unknown[] = [];
  let text: string;
  if (message instanceof Error) {
    text = message.message;
    fields.error = message;
  } else if (isPlainObject(message)) {
    const { message: inner, ...rest } = message as Record<string, unknown>;
    text = typeof inner === "string" ? inner : inner === undefined ? "" : JSON.stringify(inner);
    Object.assign(fields, rest);
  } else {
    text = typeof message === "string" ? message : String(message);
  }
  for (const item of meta) {
    if (item instanceof Error) fields.error = item;
    else if (isPlainObject(item)) Object.assign(fields, item);
    else extra.push(item);
  }
  if (extra.length > 0) fields.meta = extra;
  return { text, fields };
}

function isPlainObject(value: unknown): boolean {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof Error);
}
