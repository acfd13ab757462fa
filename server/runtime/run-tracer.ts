/**
 * Agent runs traced into agentplane's own tracing store: a LangChain tracer attached to a run's
 * callbacks turns the graph's run tree (the root graph run, its nodes, their chat model, tool and
 * retriever runs) into trace records, with the ids, trace ids and dotted orders LangSmith gives
 * them, and hands them in batches to a sink (the in-process ingest service).
 *
 * Tracing must never fail or slow a run: callbacks only copy a record into a bounded buffer; a
 * background flush writes it; a full buffer drops records (logged with their count) rather than
 * grow; a failed write is logged and dropped.
 */
import { BaseTracer, type Run } from "@langchain/core/tracers/base";
import type { Logger } from "../logger.js";
import type { RunCreator } from "../store/agents/agent-run-store.js";
import { isStrippedMetadataKey } from "./checkpoint-metadata.js";
import { toPlainJson } from "./plain-json.js";

/** A run as the ingest service takes it (LangSmith `runs.Run`, snake_case). */
export type TraceRecord = { id: string; [field: string]: unknown };

/**
 * Where trace records go: one call per batch, for one workspace and the runs of one creator (the
 * key and user the batch's new traces count under in usage).
 */
export type TraceSink = (
  workspaceId: string,
  creator: RunCreator,
  batch: { post: TraceRecord[]; patch: TraceRecord[] },
) => Promise<unknown>;

/** The agent run a trace is for. */
export interface TracedRun {
  workspaceId: string;
  runId: string;
  graphId: string;
  /** The run's create payload; `langsmith_tracer.project_name` names the tracing project. */
  kwargs: { langsmith_tracer?: unknown };
  /** Who created the run: its trace counts under them. */
  creator: RunCreator;
}

/** Starts run traces and waits for their writes at shutdown. */
export interface RunTracing {
  /** The callback handler to put in the config `callbacks` of one attempt of `run`. */
  start(run: TracedRun): BaseTracer;
  /** Writes what is buffered and resolves when every write started so far has ended. */
  settle(): Promise<void>;
}

/** Dependencies of {@link createRunTracing}. */
export interface RunTracingDeps {
  sink: TraceSink;
  log: Logger;
  /** Runs the process may hold in memory waiting for a write; records of more are dropped. */
  maxPending?: number;
  /** Milliseconds records wait to be written with the ones that follow them. */
  flushDelayMs?: number;
}

/**
 * A graph run of a few nodes makes a few dozen records; hundreds of runs a second make thousands.
 * Past this the process is producing records faster than Postgres takes them: memory must not grow.
 */
const DEFAULT_MAX_PENDING = 10_000;
/**
 * Every run's records of this long go in one write: a run's start and end usually meet in the
 * buffer and are written as one row, and concurrent runs share one ingest transaction.
 */
const DEFAULT_FLUSH_DELAY_MS = 200;
/** A buffer this big is written at once rather than after the delay: one ingest transaction's worth. */
const FLUSH_BATCH = 500;
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

/** A traced run's records waiting for a write: its start, its end, or both merged into one post. */
interface PendingRun {
  post: TraceRecord | undefined;
  patch: TraceRecord | undefined;
}

/** The runs of one workspace and creator, whose records are written together. */
interface PendingGroup {
  workspaceId: string;
  creator: RunCreator;
  runs: Map<string, PendingRun>;
}

/**
 * Creates the {@link RunTracing} of a process: one buffer for every run, by workspace and creator,
 * written every {@link DEFAULT_FLUSH_DELAY_MS} in one ingest call per workspace and creator, one
 * write at a time.
 */
export function createRunTracing(deps: RunTracingDeps): RunTracing {
  const maxPending = deps.maxPending ?? DEFAULT_MAX_PENDING;
  const delayMs = deps.flushDelayMs ?? DEFAULT_FLUSH_DELAY_MS;
  const pending = new Map<string, PendingGroup>();
  let size = 0;
  let dropped = 0;
  let timer: NodeJS.Timeout | undefined;
  // One write at a time, so a run's end is never written before its start.
  let chain: Promise<void> = Promise.resolve();
  const writes = new Set<Promise<void>>();

  /** Writes a workspace's batch; a refused batch of several traces is retried trace by trace. */
  async function write(
    workspaceId: string,
    creator: RunCreator,
    post: TraceRecord[],
    patch: TraceRecord[],
  ): Promise<void> {
    try {
      await deps.sink(workspaceId, creator, { post, patch });
    } catch (error) {
      const traces = new Set([...post, ...patch].map((r) => r.trace_id));
      if (traces.size > 1) {
        for (const trace of traces) {
          const mine = (r: TraceRecord) => r.trace_id === trace;
          await write(workspaceId, creator, post.filter(mine), patch.filter(mine));
        }
        return;
      }
      deps.log.warn("agent run trace records were not stored", {
        traceId: [...traces][0],
        records: post.length + patch.length,
        error,
      });
    }
  }

  function flush(): void {
    clearTimeout(timer);
    timer = undefined;
    if (dropped > 0) {
      deps.log.warn("agent run trace buffer was full; records were dropped", { dropped, maxPending });
      dropped = 0;
    }
    if (size === 0) return;
    const batches = [...pending.values()].map(({ workspaceId, creator, runs }) => {
      const entries = [...runs.values()];
      return {
        workspaceId,
        creator,
        post: entries.flatMap((e) => (e.post ? [e.post] : [])),
        patch: entries.flatMap((e) => (e.patch ? [e.patch] : [])),
      };
    });
    pending.clear();
    size = 0;
    const written = chain.then(async () => {
      for (const batch of batches) await write(batch.workspaceId, batch.creator, batch.post, batch.patch);
    });
    chain = written;
    writes.add(written);
    void written.finally(() => writes.delete(written));
  }

  function add(run: TracedRun, kind: "post" | "patch", record: TraceRecord): void {
    const { workspaceId, creator } = run;
    // Lower-case uuids (or empty): the key cannot be the same for two different groups.
    const groupKey = `${workspaceId}/${creator.apiKeyId ?? ""}/${creator.userId ?? ""}`;
    let group = pending.get(groupKey);
    if (!group) {
      group = { workspaceId, creator, runs: new Map() };
      pending.set(groupKey, group);
    }
    const { runs } = group;
    const entry = runs.get(record.id);
    if (!entry) {
      if (size >= maxPending) {
        dropped += 1;
        timer ??= setTimeout(flush, delayMs);
        return;
      }
      size += 1;
      runs.set(
        record.id,
        kind === "post" ? { post: record, patch: undefined } : { post: undefined, patch: record },
      );
    } else if (kind === "patch" && entry.post) {
      // Started and ended within one delay: written once, as a finished run.
      Object.assign(entry.post, record);
    } else {
      entry[kind] = record;
    }
    if (size >= FLUSH_BATCH) flush();
    else timer ??= setTimeout(flush, delayMs);
  }

  return {
    start(run) {
      return new RunTraceHandler(traceProjectName(run), (kind, record) => add(run, kind, record));
    },
    async settle() {
      flush();
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
  /**
   * Called inline: the work is a synchronous copy into the buffer, cheaper than a trip through
   * LangChain's process-wide background callback queue (one task at a time for every run).
   */
  override awaitHandlers = true;

  constructor(
    private readonly project: string,
    private readonly onRecord: (kind: "post" | "patch", record: TraceRecord) => void,
  ) {
    super();
  }

  protected override persistRun(): Promise<void> {
    return Promise.resolve();
  }

  override onRunCreate(run: Run): void {
    this.onRecord("post", toRecord(run, false, this.project));
  }

  override onRunUpdate(run: Run): void {
    this.onRecord("patch", toRecord(run, true, this.project));
  }

  /** The error's name and message: a stack would show the server's file paths to trace readers. */
  override stringifyError(error: unknown): string {
    if (error instanceof Error) return `${error.name}: ${error.message}`;
    return typeof error === "string" ? error : String(error);
  }
}

/**
 * A run tree node as a trace record of `project`: at its start with its inputs, at its end with its
 * outcome.
 */
function toRecord(run: Run, ended: boolean, project: string): TraceRecord {
  const stored = run as Run & { _serialized_start_time?: string };
  return {
    id: run.id,
    session_name: project,
    trace_id: run.trace_id,
    dotted_order: run.dotted_order,
    parent_run_id: run.parent_run_id ?? null,
    name: run.name,
    run_type: run.run_type,
    start_time: stored._serialized_start_time ?? run.start_time,
    extra: withoutPrivateMetadata(jsonObject(run.extra, "extra")),
    tags: run.tags ?? [],
    // Inputs are known at the start; an end leaves them to the start's record.
    ...(ended
      ? {
          end_time: run.end_time ?? Date.now(),
          outputs: run.outputs === undefined ? null : jsonObject(run.outputs, "output"),
          error: run.error ?? null,
          events: jsonList(run.events),
        }
      : { inputs: jsonObject(run.inputs, "input") }),
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

/**
 * `extra` without the metadata keys checkpoints never keep either (forwarded request headers,
 * authenticated-user fields, request ids): traces are read by everyone in the workspace.
 */
function withoutPrivateMetadata(extra: Record<string, unknown>): Record<string, unknown> {
  const metadata = extra.metadata;
  if (typeof metadata !== "object" || metadata === null || Array.isArray(metadata)) return extra;
  // `extra` is this record's own plain copy: private keys are deleted from it, in the common case none.
  for (const key of Object.keys(metadata))
    if (isStrippedMetadataKey(key)) delete (metadata as Record<string, unknown>)[key];
  return extra;
}

function jsonList(events: Run["events"]): Record<string, unknown>[] {
  return (events ?? []).map((event) => jsonObject(event, "event"));
}
