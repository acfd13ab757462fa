import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import type { Logger } from "../logger.js";
import { compactSchemaSet, type SchemaSet } from "./graph-schema-set.js";

/** Where a graph's source is: the module and the export holding the graph. */
export interface StaticSchemaTarget {
  readonly graphId: string;
  readonly file: string;
  readonly exportName: string;
}

/**
 * Schemas read from a graph's TypeScript types, by namespace: the export's name for the graph
 * itself, `name|node` (and deeper, `name|node|node`) for its subgraphs.
 */
export type StaticGraphSchemas = Readonly<Record<string, SchemaSet>>;

/** Reads graphs' schemas from their TypeScript types, off the event loop, once per graph. */
export interface StaticSchemaExtractor {
  /**
   * The graph's schemas and its subgraphs', derived the first time they are asked for (later and
   * concurrent calls share that result). Undefined when they cannot be derived: the reason is
   * logged once, and the graph serves without them.
   */
  schemasOf(target: StaticSchemaTarget): Promise<StaticGraphSchemas | undefined>;
  /** Stops an extraction in progress; later calls answer undefined. */
  close(): Promise<void>;
}

/** Options of {@link createStaticSchemaExtractor}. */
export interface StaticSchemaExtractorOptions {
  /** How long one graph's extraction may take (LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS). */
  readonly timeoutMs: number;
  readonly log: Logger;
}

/**
 * Heap cap of an extraction worker. A graph with its @langchain imports takes about 200-330 MB
 * (measured on small graphs); the cap leaves room for large projects while keeping a runaway type
 * program from taking the server's memory.
 */
const WORKER_MAX_HEAP_MB = 2048;
/** The tail of the TypeScript diagnostics kept for the debug log (they can run to megabytes). */
const MAX_DIAGNOSTIC_CHARS = 20_000;
/** The tail of them quoted in a failure's warning. */
const MAX_REASON_DIAGNOSTIC_CHARS = 1_000;

/**
 * The worker's whole program (CommonJS, run with `eval`): it imports the schema extractor of
 * @langchain/langgraph-api (the LangGraph JS server's own) and runs it in its thread, so its
 * TypeScript program, its memory and its console output (type diagnostics) stay out of the
 * server's thread and stdout.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
import(workerData.extractor)
  .then((m) => m.getStaticGraphSchema(workerData.spec, { mainThread: true }))
  .then(
    (schemas) => parentPort.postMessage({ schemas }),
    (error) => parentPort.postMessage({ error: error instanceof Error ? error.message : String(error) }),
  );
`;

/** What one worker run ends with. */
interface ExtractionOutcome {
  schemas?: Record<string, Partial<Record<keyof SchemaSet, unknown>>>;
  reason?: string;
  /** The extractor was closed first: not the graph's failure, so nothing is logged. */
  closed?: true;
  diagnostics: string;
}

/**
 * Creates the process's {@link StaticSchemaExtractor}. It uses the LangGraph JS server's extractor
 * (`@langchain/langgraph-api/schema`): a TypeScript program over the graph's module and its
 * imports, with the graph's `tsconfig.json`, whose types become draft-07 JSON Schemas. Each graph
 * runs in its own worker thread, one at a time (each takes a core and a few hundred MB for
 * seconds), under `timeoutMs`.
 */
export function createStaticSchemaExtractor(options: StaticSchemaExtractorOptions): StaticSchemaExtractor {
  const { timeoutMs, log } = options;
  const results = new Map<string, Promise<StaticGraphSchemas | undefined>>();
  let queue: Promise<unknown> = Promise.resolve();
  let running: Worker | undefined;
  let closed = false;

  const run = (target: StaticSchemaTarget): Promise<ExtractionOutcome> =>
    new Promise((resolve) => {
      if (closed) {
        resolve({ closed: true, diagnostics: "" });
        return;
      }
      let worker: Worker;
      try {
        worker = new Worker(WORKER_SOURCE, {
          eval: true,
          workerData: {
            extractor: extractorUrl(),
            spec: { sourceFile: target.file, exportSymbol: target.exportName },
          },
          stdout: true,
          stderr: true,
          resourceLimits: { maxOldGenerationSizeMb: WORKER_MAX_HEAP_MB },
        });
      } catch (error) {
        resolve({
          reason: `the extraction worker cannot start: ${(error as Error).message}`,
          diagnostics: "",
        });
        return;
      }
      running = worker;
      let diagnostics = "";
      const keep = (chunk: Buffer) => {
        diagnostics = (diagnostics + chunk.toString()).slice(-MAX_DIAGNOSTIC_CHARS);
      };
      worker.stdout.on("data", keep);
      worker.stderr.on("data", keep);
      let outcome: Omit<ExtractionOutcome, "diagnostics"> | undefined;
      const timer = setTimeout(() => {
        outcome ??= { reason: `it took longer than ${timeoutMs} ms (LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS)` };
        void worker.terminate();
      }, timeoutMs);
      worker.on("message", (message: { schemas?: ExtractionOutcome["schemas"]; error?: string }) => {
        outcome ??= message.error === undefined ? { schemas: message.schemas } : { reason: message.error };
        // The answer is in; a handle the extractor left open must not hold the worker to the timeout.
        // One turn later, so output it printed before answering has arrived.
        setImmediate(() => void worker.terminate());
      });
      worker.on("error", (error) => {
        outcome ??= { reason: error.message };
      });
      // Settles on exit, with the worker's output (the type diagnostics) passed on by then.
      worker.on("exit", (code) => {
        clearTimeout(timer);
        if (running === worker) running = undefined;
        if (closed) resolve({ closed: true, diagnostics });
        else
          resolve({
            ...(outcome ?? { reason: `the extraction worker exited with code ${code}` }),
            diagnostics,
          });
      });
    });

  const extract = async (target: StaticSchemaTarget): Promise<StaticGraphSchemas | undefined> => {
    const started = performance.now();
    const outcome = await run(target);
    if (outcome.closed) return undefined;
    const fields = { graph_id: target.graphId, file: target.file, export: target.exportName };
    if (outcome.diagnostics.trim() !== "") {
      log.debug("TypeScript output while deriving a graph's schemas", {
        ...fields,
        output: outcome.diagnostics,
      });
    }
    const schemas: Record<string, SchemaSet> = {};
    for (const [namespace, set] of Object.entries(outcome.schemas ?? {})) {
      const compact = compactSchemaSet(set as SchemaSet);
      if (compact) schemas[namespace] = compact;
    }
    if (!schemas[target.exportName]) {
      const reason =
        outcome.reason ??
        `no type could be read from export "${target.exportName}"${tail(outcome.diagnostics)}`;
      log.warn(
        `the schemas of graph "${target.graphId}" cannot be derived from its TypeScript types, so it serves without them: ${reason}`,
        fields,
      );
      return undefined;
    }
    log.info(`derived the schemas of graph "${target.graphId}" from its TypeScript types`, {
      ...fields,
      ms: Math.round(performance.now() - started),
    });
    return schemas;
  };

  return {
    schemasOf(target) {
      let result = results.get(target.graphId);
      if (!result) {
        result = queue.then(() => extract(target));
        queue = result.catch(() => undefined);
        results.set(target.graphId, result);
      }
      return result;
    },
    async close() {
      closed = true;
      await running?.terminate();
      await queue;
    },
  };
}

/** The URL of `@langchain/langgraph-api/schema`, resolved from agentplane's own dependencies. */
function extractorUrl(): string {
  return pathToFileURL(createRequire(import.meta.url).resolve("@langchain/langgraph-api/schema")).href;
}

/** `; TypeScript said: <the end of its output>`, or nothing when it printed nothing. */
function tail(diagnostics: string): string {
  const text = diagnostics.trim();
  return text === "" ? "" : `; TypeScript said: ${text.slice(-MAX_REASON_DIAGNOSTIC_CHARS)}`;
}
