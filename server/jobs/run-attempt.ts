/**
 * One attempt of a run, from its claim to its settlement: load the graph, execute it, classify how
 * the execution finished (run-outcome.ts), then end the run, roll it back or hand it back
 * (run-settlement.ts), all under the attempt's lease (run-lease.ts).
 *
 * Invariants:
 * - the attempt's events are written in the order it produced them, and all of them before its
 *   end (the settlement waits for the event writer);
 * - the lease is held from before the graph loads until the execution is over; a settlement only
 *   writes while the lease is the attempt's (its writes are conditional on the lease token);
 * - the executor is chosen once per attempt from the run's kwargs (`executorFor`), and whatever it
 *   is, it gets the same inputs and emits the same RunStreamEvents: the settlement does not depend
 *   on which one ran;
 * - an attempt that fails while settling (a database error) rejects: nothing was committed, and
 *   its lease lapses, so another attempt takes the run over.
 */
import type { RunSettings } from "../config.js";
import type { Logger } from "../logger.js";
import type { CompiledGraph, GraphRegistry } from "../runtime/graph-registry.js";
import { PostgresCheckpointer } from "../runtime/postgres-checkpointer.js";
import { PostgresStore } from "../runtime/postgres-store.js";
import { executeProtocolRun } from "../runtime/protocol/protocol-run-executor.js";
import type { RunEventBus } from "../runtime/run-event-bus.js";
import type { RunEventBatcher, RunEventWriter } from "../runtime/run-event-writer.js";
import { executeRun } from "../runtime/run-executor.js";
import { type RunKwargs, runKwargsOf } from "../runtime/run-kwargs.js";
import { type ThreadStateAfterRun, threadStateAfterRun } from "../runtime/run-thread-state.js";
import type { RunTracing } from "../runtime/run-tracer.js";
import { type ResumeRefusal, ResumeRefusedError, strictResumeRefusal } from "../runtime/strict-resume.js";
import type { AgentRunRecord, RunClaim, RunStatus } from "../store/agents/agent-run-store.js";
import type { Sql } from "../store/db.js";
import { type AttemptStop, holdLease } from "./run-lease.js";
import { type AttemptOutcome, classifyOutcome, type ExecutionResult } from "./run-outcome.js";
import { endAttempt, handBackAttempt, rollBackAttempt, type SettlementDeps } from "./run-settlement.js";

/**
 * What executes a run: the graph executor (run-executor.ts), the streaming protocol's
 * (protocol-run-executor.ts) for a protocol run, or another one its kwargs choose.
 */
export type RunExecutor = typeof executeRun;

/** What an attempt needs. */
export interface RunAttemptDeps {
  sql: Sql;
  graphs: GraphRegistry;
  settings: RunSettings;
  log: Logger;
  /** The process's run event bus (cancels reach running runs through it). */
  bus: () => RunEventBus;
  /** Records runs in the tracing store; absent when run tracing is off. */
  tracing?: RunTracing;
  /** Writes the events of the process's runs (batched across runs). */
  events: RunEventBatcher;
  /** The executor of a run, by its kwargs; when absent, the graph's or the protocol's executor. */
  executorFor?: (kwargs: RunKwargs) => RunExecutor;
  settlement: SettlementDeps;
}

/** What an attempt did to its run. */
export interface AttemptResult {
  /** The status this attempt ended the run with; undefined when it did not end it. */
  status: RunStatus | undefined;
}

/** Whether a run's stream shows its checkpoints (which then need a checkpointer to exist). */
function streamsCheckpoints(kwargs: RunKwargs): boolean {
  return kwargs.stream_mode.includes("checkpoints") || kwargs.stream_mode.includes("debug");
}

/**
 * The run's graph with its checkpointer and store. A stateless run that deletes its thread keeps
 * no checkpoints unless its stream shows them (`checkpoints`, `debug`), as on the LangGraph
 * servers: nothing would read them (a takeover then restarts it from its input), and they go with
 * its thread. Otherwise the thread's newest checkpoint, which the graph reads first, is read at
 * once: the round trip travels while the graph loads and its stream is set up.
 */
async function loadGraph(
  deps: RunAttemptDeps,
  run: AgentRunRecord,
  kwargs: RunKwargs,
  writer: RunEventWriter,
): Promise<CompiledGraph> {
  const registered = deps.graphs.get(run.graphId);
  if (!registered) throw new Error(`graph "${run.graphId}" is not served by this worker`);
  let checkpointer: PostgresCheckpointer | undefined;
  if (!kwargs.temporary || streamsCheckpoints(kwargs)) {
    // Unless the run's durability waits for each step's checkpoint, its writes let the run's
    // events of the same turn go, and be stored, first.
    checkpointer = new PostgresCheckpointer(
      deps.sql,
      run.workspaceId,
      kwargs.durability === "sync" ? {} : { writesAfter: () => writer.settled() },
    );
    // A run from a given checkpoint reads that one instead; a stateless run's thread has none.
    if (!kwargs.checkpoint && !kwargs.temporary) checkpointer.prefetchLatest(run.threadId);
  }
  return registered.load({
    ...(checkpointer ? { checkpointer } : {}),
    store: new PostgresStore(deps.sql, run.workspaceId, deps.graphs.settings.store.ttl),
    config: {
      ...kwargs.config,
      configurable: {
        ...kwargs.config.configurable,
        thread_id: run.threadId,
        run_id: run.runId,
        graph_id: run.graphId,
        assistant_id: run.assistantId,
      },
    },
  });
}

/** Executes the claimed run once; resolves with how the execution finished, never rejects. */
async function execute(
  deps: RunAttemptDeps,
  run: AgentRunRecord,
  stop: AttemptStop,
  writer: RunEventWriter,
  loaded: (graph: CompiledGraph) => void,
): Promise<ExecutionResult> {
  const { settings } = deps;
  try {
    stop.signal.throwIfAborted();
    if (run.attempt > settings.maxAttempts) {
      throw Object.assign(
        new Error(
          `run ${run.runId} was started ${run.attempt} times, more than the ${settings.maxAttempts} allowed`,
        ),
        { name: "RunAttemptsExceeded" },
      );
    }
    const kwargs = runKwargsOf(run.kwargs);
    const graph = await loadGraph(deps, run, kwargs, writer);
    loaded(graph);
    if (kwargs.strict_resume) {
      const refusal = strictResumeRefusal(kwargs, await threadStateAfterRun(graph, run.threadId));
      if (refusal) throw new ResumeRefusedError(refusal);
    }
    const tracer = deps.tracing?.start(run);
    const executor = deps.executorFor?.(kwargs) ?? (kwargs.protocol ? executeProtocolRun : executeRun);
    const result = await executor({
      graph,
      runId: run.runId,
      threadId: run.threadId,
      assistantId: run.assistantId,
      graphId: run.graphId,
      kwargs,
      metadata: run.metadata,
      attempt: run.attempt,
      signal: stop.signal,
      emit: (event) => writer.push(event),
      ...(tracer ? { callbacks: [tracer] } : {}),
    });
    return { ok: true, output: result.output };
  } catch (error) {
    return { ok: false, error };
  }
}

/**
 * Runs one attempt of `claim`'s run to its settlement (see the invariants above), stopped through
 * `stop`. Rejects only when the settlement could not be written.
 */
export async function runAttempt(
  deps: RunAttemptDeps,
  claim: RunClaim,
  stop: AttemptStop,
): Promise<AttemptResult> {
  const { run, leaseToken } = claim;
  const { settings, log } = deps;
  // Streams of the run in this process get its events as they are stored, without a read.
  // So do the thread's watchers (thread streams, the streaming protocol's event streams).
  const writer = deps.events.writer(run, () => deps.bus().writing(run.runId, run.threadId));
  const release = holdLease(
    {
      sql: deps.sql,
      log,
      bus: deps.bus(),
      leaseSeconds: settings.leaseSeconds,
      timeoutSeconds: settings.timeoutSeconds,
    },
    run.runId,
    leaseToken,
    stop,
  );
  let graph: CompiledGraph | undefined;
  let outcome: AttemptOutcome;
  // A refused strict resume: the run fails, its thread stays as it was.
  let refusal: ResumeRefusal | undefined;
  try {
    const result = await execute(deps, run, stop, writer, (loaded) => {
      graph = loaded;
    });
    outcome = classifyOutcome(result, stop.reason(), settings.timeoutSeconds);
    if (
      !result.ok &&
      outcome.kind === "end" &&
      outcome.unexpected &&
      result.error instanceof ResumeRefusedError
    )
      refusal = result.error.refusal;
    if (!result.ok && outcome.kind === "end" && outcome.unexpected && outcome.failure)
      log.info("run failed", {
        runId: run.runId,
        error: outcome.failure.error,
        message: outcome.failure.message,
      });
  } finally {
    release();
  }
  const attempt = { run, leaseToken };
  const readState = async (): Promise<ThreadStateAfterRun | undefined> =>
    graph && !run.temporary ? threadStateAfterRun(graph, run.threadId) : undefined;
  switch (outcome.kind) {
    case "abandon":
      await writtenOrLogged(writer, log, run.runId);
      return { status: undefined };
    case "hand-back":
      await writtenOrLogged(writer, log, run.runId);
      if (await handBackAttempt(deps.settlement, attempt))
        log.info("run handed back to the queue at shutdown", { runId: run.runId });
      return { status: undefined };
    case "roll-back": {
      await writtenOrLogged(writer, log, run.runId);
      const rolledBack = await rollBackAttempt(deps.settlement, attempt, readState);
      return { status: rolledBack ? "interrupted" : undefined };
    }
    case "end": {
      if (outcome.failure) writer.push({ event: "error", data: { ...outcome.failure, ...refusal } });
      const ended = await endAttempt(
        deps.settlement,
        attempt,
        {
          status: outcome.status,
          output: outcome.output,
          failure: outcome.failure,
          state: await readState(),
          refusal,
        },
        writer,
      );
      if (!ended) return { status: undefined };
      return { status: outcome.status };
    }
  }
}

/**
 * Waits for the attempt's events to be written before a settlement that writes no end event of
 * its own (abandon, hand back, roll back): a failed write is logged, since the run's next attempt
 * (or its rollback's end event) closes its stream either way.
 */
async function writtenOrLogged(writer: RunEventWriter, log: Logger, runId: string): Promise<void> {
  try {
    await writer.flush();
  } catch (error) {
    log.warn("run events were not all written before the run was settled", { runId, error });
  }
}
