/**
 * Agent runs traced into agentplane's own tracing store: a LangChain tracer attached to a run's
 * callbacks turns the graph's run tree (the root graph run, its nodes, their chat model, tool and
 * retriever runs) into trace records, with the ids, trace ids and dotted orders LangSmith gives
 * them, and hands them in batches to a sink (the in-process ingest service).
 *
 * Tracing must never fail or slow a run: callbacks only copy a record into a bounded buffer; a
 * background flush writes it; a full buffer drops records (logged once per run) rather than grow;
 * a failed write is logged and dropped.
 */
import { BaseTracer, type Run } from "@langchain/core/tracers/base";
import type { Logger } from "../logger.js";
import { toPlainJson } from "./plain-json.js";

/** A run as the ingest service takes it (LangSmith `runs.Run`, snake_case). */
export type TraceRecord = { id: string; [field: string]: unknown };

/** Where trace records go: one call per batch, for one workspace. */
export type TraceSink = (
  workspaceId: string,
  batch: { post: TraceRecord[]; patch: TraceRecord[] },
) => Promise<unknown>;

/** The agent run a trace is for. */
export interface TracedRun {
  workspaceId: string;
  runId: string;
  graphId: string;
  /** The run's create payload; `langsmith_tracer.project_name` names the tracing project. */
  kwargs: { langsmith_tracer?: unknown };
}

/** The tracing of one run attempt. */
export interface RunTrace {
  /** The callback handler to put in the run's config `callbacks`. */
  readonly handler: BaseTracer;
  /** Writes what is left, in the background (never throws). */
  finish(): void;
}

/** Starts run traces and waits for their writes at shutdown. */
export interface RunTracing {
  start(run: TracedRun): RunTrace;
  /** Resolves when every write started so far has ended. */
  settle(): Promise<void>;
}

/** Dependencies of {@link createRunTracing}. */
export interface RunTracingDeps {
  sink: TraceSink;
  log: Logger;
  /** Records one run may hold in memory waiting for a write; more are dropped. */
  maxPending?: number;
  /** Milliseconds records wait to be written with the ones that follow them. */
  flushDelayMs?: number;
}

/**
 * A graph run of a few nodes makes a few dozen records; a chat loop with tools a few hundred. Past
 * this the run is producing records faster than Postgres takes them and memory must not grow.
 */
const DEFAULT_MAX_PENDING = 2_000;
/** Batches a node's start and end (and its model's) into one write, without holding them long. */
const DEFAULT_FLUSH_DELAY_MS = 200;
/** A batch this big is written at once rather than after the delay: one ingest transaction's worth. */
const FLUSH_BATCH = 200;
/** The ingest service's project-name limit; longer names are cut. */
const MAX_PROJECT_NAME = 200;

/** The tracing project of a run: `langsmith_tracer.project_name`, else the graph's id. */
export function traceProjectName(run: TracedRun): string {
  const tracer = run.kwargs.langsmith_tracer;
  const named =
    typeof tracer === "object" && tracer !== null
      ? (tracer as { project_name?: unknown }).project_name
      : undefined;
  const name = typeof named === "string" && named.trim() !== "" ? named.trim() : run.graphId;
  return name.slice(0, MAX_PROJECT_NAME);
}

/** Creates the {@link RunTracing} of a process. */
export function createRunTracing(deps: RunTracingDeps): RunTracing {
  const maxPending = deps.maxPending ?? DEFAULT_MAX_PENDING;
  const delayMs = deps.flushDelayMs ?? DEFAULT_FLUSH_DELAY_MS;
  const writes = new Set<Promise<void>>();

  return {
    start(run) {
      const project = traceProjectName(run);
      const posts: TraceRecord[] = [];
      const patches: TraceRecord[] = [];
      let dropped = 0;
      let timer: NodeJS.Timeout | undefined;
      // One write at a time per run, so a run's end never lands before its start.
      let chain: Promise<void> = Promise.resolve();

      const flush = (): void => {
        clearTimeout(timer);
        timer = undefined;
        if (posts.length === 0 && patches.length === 0) return;
        const batch = { post: posts.splice(0), patch: patches.splice(0) };
        const write = chain.then(() =>
          deps.sink(run.workspaceId, batch).then(
            () => undefined,
            (error: unknown) =>
              deps.log.warn("agent run trace records were not stored", {
                runId: run.runId,
                records: batch.post.length + batch.patch.length,
                error,
              }),
          ),
        );
        chain = write;
        writes.add(write);
        void write.finally(() => writes.delete(write));
      };
      const push = (list: TraceRecord[], record: TraceRecord): void => {
        if (posts.length + patches.length >= maxPending) {
          if (dropped === 0)
            deps.log.warn("agent run trace buffer is full; records are dropped", {
              runId: run.runId,
              maxPending,
            });
          dropped += 1;
          return;
        }
        list.push(record);
        if (posts.length + patches.length >= FLUSH_BATCH) flush();
        else timer ??= setTimeout(flush, delayMs);
      };
      const handler = new RunTraceHandler(
        (record) => push(posts, { ...record, session_name: project }),
        (record) => push(patches, { ...record, session_name: project }),
      );
      return { handler, finish: flush };
    },
    async settle() {
      while (writes.size > 0) await Promise.allSettled([...writes]);
    },
  };
}

/**
 * The tracer: the base class keeps the run tree (ids, parents, trace ids, dotted orders); this class
 * copies each run into a record when it starts and when it ends.
 */
class RunTraceHandler extends BaseTracer {
  override name = "agentplane_run_tracer";

  constructor(
    private readonly onStart: (record: TraceRecord) => void,
    private readonly onEnd: (record: TraceRecord) => void,
  ) {
    super();
  }

  protected override persistRun(): Promise<void> {
    return Promise.resolve();
  }

  override onRunCreate(run: Run): void {
    this.onStart(toRecord(run, false));
  }

  override onRunUpdate(run: Run): void {
    this.onEnd(toRecord(run, true));
  }

  /** The error's name and message: a stack would show the server's file paths to trace readers. */
  override stringifyError(error: unknown): string {
    if (error instanceof Error) return `${error.name}: ${error.message}`;
    return typeof error === "string" ? error : String(error);
  }
}

/** A run tree node as a trace record; `ended` adds what the run's end knows. */
function toRecord(run: Run, ended: boolean): TraceRecord {
  const stored = run as Run & { _serialized_start_time?: string };
  return {
    id: run.id,
    trace_id: run.trace_id,
    dotted_order: run.dotted_order,
    parent_run_id: run.parent_run_id ?? null,
    name: run.name,
    run_type: run.run_type,
    start_time: stored._serialized_start_time ?? run.start_time,
    inputs: jsonObject(run.inputs, "input"),
    extra: jsonObject(run.extra, "extra"),
    tags: run.tags ?? [],
    ...(ended
      ? {
          end_time: run.end_time ?? Date.now(),
          outputs: run.outputs === undefined ? null : jsonObject(run.outputs, "output"),
          error: run.error ?? null,
          events: jsonList(run.events),
        }
      : {}),
  };
}

/** A value as a JSON object (wrapped under `key` when it is not one); unserialisable → a note. */
function jsonObject(value: unknown, key: string): Record<string, unknown> {
  try {
    const json = toPlainJson(value);
    return typeof json === "object" && json !== null && !Array.isArray(json) ? json : { [key]: json };
  } catch (error) {
    return { [key]: `<not serialisable: ${error instanceof Error ? error.message : String(error)}>` };
  }
}

function jsonList(events: Run["events"]): Record<string, unknown>[] {
  return (events ?? []).map((event) => jsonObject(event, "event"));
}
