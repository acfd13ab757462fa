import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { RunSettings } from "../config.js";
import type { Logger } from "../logger.js";
import type { CompiledGraph, GraphRegistry } from "../runtime/graph-registry.js";
import { type Loopback, withLoopback } from "../runtime/loopback-client.js";
import { toPlainJson } from "../runtime/plain-json.js";
import { PostgresCheckpointer } from "../runtime/postgres-checkpointer.js";
import { PostgresStore } from "../runtime/postgres-store.js";
import { executeProtocolRun } from "../runtime/protocol/protocol-run-executor.js";
import { protocolEndEvent, rootLifecycleEvent } from "../runtime/protocol/protocol-session.js";
import type { RunEventBus, StoredBatch } from "../runtime/run-event-bus.js";
import { createRunEventWriter, type RunEventWriter, storedEvent } from "../runtime/run-event-writer.js";
import { executeRun } from "../runtime/run-executor.js";
import type { RunKwargs } from "../runtime/run-kwargs.js";
import { errorData } from "../runtime/run-stream-modes.js";
import { type ThreadStateAfterRun, threadStateAfterRun } from "../runtime/run-thread-state.js";
import type { RunTracing } from "../runtime/run-tracer.js";
import { type ResumeRefusal, ResumeRefusedError, strictResumeRefusal } from "../runtime/strict-resume.js";
import {
  type AgentRunRecord,
  type CancelAction,
  claimRun,
  deleteRun,
  endRun,
  finishRun,
  lockThreadQueue,
  type RunClaim,
  type RunEnd,
  type RunStatus,
  releaseRun,
  renewRunLease,
} from "../store/agent-run-store.js";
import {
  deleteRunCheckpoints,
  deleteTemporaryThread,
  saveThreadAfterRun,
} from "../store/agent-run-thread-store.js";
import { deleteThreadCheckpoints } from "../store/checkpoint-thread-store.js";
import { type Sql, storedCipherOf } from "../store/db.js";
import { parseEncryptionContext, runWithEncryptionContext } from "../store/encryption-scope.js";
import {
  appendRunEvents,
  END_EVENT,
  endEventData,
  expireRunEvents,
  RUN_EVENTS_CHANNEL,
} from "../store/run-event-store.js";
import type { JsonValue } from "../store/thread-store.js";
import {
  type AgentRunPayload,
  dispatchRun,
  dispatchThreadQueue,
  type RunDispatchDeps,
} from "./agent-run-dispatch.js";
import { defineJob, type JobDefinition } from "./job-definition.js";
import { oweWebhook, type WebhookOwing } from "./webhook-delivery-job.js";

/** Dependencies of {@link createAgentRunWorker}. */
export interface AgentRunWorkerDeps extends Omit<RunDispatchDeps, "runJob"> {
  sql: Sql;
  graphs: GraphRegistry;
  settings: RunSettings;
  log: Logger;
  /** The process's run event bus (cancels reach running runs through it). */
  bus: () => RunEventBus;
  /** Records runs in the tracing store; absent when run tracing is off. */
  tracing?: RunTracing;
  /** Gives each attempt the loopback client's credentials. */
  loopback?: Loopback;
  /** Webhook delivery: a run with a `webhook` that ends owes a call, sent with its end. */
  webhooks?: Omit<WebhookOwing, "queue">;
  /** Called after an attempt of this process ended a run (committed): metrics count these. */
  onRunEnded?: (ended: EndedRun) => void;
}

/** A run this process ended, as metrics see it. */
export interface EndedRun {
  /** Its final status; a rolled-back run counts as `interrupted`. */
  readonly status: RunStatus;
  /** From the claim of the attempt that ended it to the end, in milliseconds. */
  readonly durationMs: number;
}

/** How this process's execution slots are used. */
export interface RunSlotUsage {
  /** Runs this process executes at once (AGENTPLANE_RUN_WORKERS). */
  readonly total: number;
  /** Slots holding a run (or reserved for one being claimed). */
  readonly busy: number;
}

/** The run job and the controls of this process's run execution. */
export interface AgentRunWorker {
  readonly job: JobDefinition<AgentRunPayload>;
  /**
   * Stops taking runs, lets those running finish for up to `graceMs`, then stops the rest and
   * hands them back to the queue (another worker resumes them from their last checkpoint).
   */
  drain(graceMs: number): Promise<void>;
  /**
   * Reserves one of this process's execution slots for a run its creator claims itself (the fast
   * path of a process that executes runs); undefined when it is stopping or has no free slot.
   */
  reserve(): RunSlot | undefined;
  /**
   * When `runId` executes in this process now: resolves once its attempt is over, with the run as
   * this attempt ended it (committed), or undefined when the attempt did not end it (lease lost,
   * handed back, rolled back, its thread deleted). Undefined when the run does not execute here.
   * Waiters in this process learn the end from it without a NOTIFY and a read of the run's row.
   */
  attemptEnd(runId: string): Promise<AgentRunRecord | undefined> | undefined;
  /** The slots in use now. */
  slots(): RunSlotUsage;
}

/** A reserved execution slot: run a claimed run in it, or give it back. */
export interface RunSlot {
  /** The lease owner and token the creator claims the run with (`claimRun`). */
  readonly owner: string;
  readonly leaseToken: string;
  /** Executes the claimed run in this slot, in the background; the slot is freed when it ends. */
  run(claim: RunClaim): void;
  /** Gives the slot back unused (the run was not claimed, or its transaction failed). */
  release(): void;
}

/** A run executing in this process. */
interface Attempt {
  stop: AbortController;
  /** Settles when the attempt is over and its slot is free. */
  done: Promise<void>;
  claimedAt: number;
  /** The run as this attempt ended it, once its end committed. */
  ended?: AgentRunRecord;
}

/** Why an attempt stopped before the graph ended. */
type StopReason =
  | { kind: "cancel"; action: CancelAction }
  | { kind: "orphaned" }
  | { kind: "timeout" }
  | { kind: "lease-lost" }
  | { kind: "shutdown" };

/** Whether a run's stream shows its checkpoints (which then need a checkpointer to exist). */
function streamsCheckpoints(kwargs: RunKwargs): boolean {
  return kwargs.stream_mode.includes("checkpoints") || kwargs.stream_mode.includes("debug");
}

/** pg-boss retries a job whose handler failed on a database error; the run row bounds attempts. */
const QUEUE_RETRY_LIMIT = 3;
/** Seconds before pg-boss retries such a job. */
const QUEUE_RETRY_DELAY_SECONDS = 1;
/** The job outlives the run's own timeout by this much, so the run's timeout always fires first. */
const JOB_EXPIRY_MARGIN_SECONDS = 120;
/** pg-boss refuses job expirations of a day or more. */
const MAX_JOB_EXPIRY_SECONDS = 86_399;

/**
 * Executes runs. A job names a run; its handler claims the run when it heads its thread's queue
 * (one run per thread at a time, in arrival order), holds a lease it renews every quarter lease,
 * streams the graph's events to Postgres, and ends the run with a write conditional on its lease,
 * in the same transaction that dispatches the thread's next run. A cancel (NOTIFY, or seen at a
 * heartbeat), the run timeout, a lost lease or a shutdown stop the graph through its signal.
 */
export function createAgentRunWorker(deps: AgentRunWorkerDeps): AgentRunWorker {
  const { sql, graphs, settings, log } = deps;
  const owner = `${hostname()}:${process.pid}:${randomUUID().slice(-12)}`;
  const heartbeatMs = (settings.leaseSeconds * 1000) / 4;
  const dispatchDeps: RunDispatchDeps = { queue: deps.queue, runJob: () => job };
  let draining = false;
  const running = new Map<string, Attempt>();

  /**
   * The run's graph with its checkpointer and store. A stateless run that deletes its thread keeps
   * no checkpoints unless its stream shows them (`checkpoints`, `debug`): nothing would read them
   * (a takeover then restarts it from its input), and they go with its thread. Otherwise the
   * thread's newest checkpoint, which the graph reads first, is read at once: the round trip
   * travels while the graph loads and its stream is set up.
   */
  async function loadGraph(run: AgentRunRecord, kwargs: RunKwargs): Promise<CompiledGraph> {
    const registered = graphs.get(run.graphId);
    if (!registered) throw new Error(`graph "${run.graphId}" is not served by this worker`);
    let checkpointer: PostgresCheckpointer | undefined;
    if (!kwargs.temporary || streamsCheckpoints(kwargs)) {
      // Unless the run's durability waits for each step's checkpoint, its writes let the run's
      // events of the same turn go first.
      checkpointer = new PostgresCheckpointer(sql, run.workspaceId, {
        deferWrites: kwargs.durability !== "sync",
      });
      // A run from a given checkpoint reads that one instead; a stateless run's thread has none.
      if (!kwargs.checkpoint && !kwargs.temporary) checkpointer.prefetchLatest(run.threadId);
    }
    return registered.load({
      ...(checkpointer ? { checkpointer } : {}),
      store: new PostgresStore(sql, run.workspaceId, graphs.settings.store.ttl),
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

  // Free execution slots of this process, and the starts waiting for one.
  let free = settings.workers;
  const waiting: (() => void)[] = [];
  const acquire = (): Promise<void> => {
    if (free > 0) {
      free -= 1;
      return Promise.resolve();
    }
    return new Promise((resolve) => waiting.push(resolve));
  };
  const release = (): void => {
    const next = waiting.shift();
    if (next) next();
    else free += 1;
  };

  /** Executes a claimed run in the background in a slot already taken; frees the slot when it ends. */
  function launch(claim: RunClaim): void {
    const { run, leaseToken } = claim;
    const claimedAt = performance.now();
    const stop = new AbortController();
    const halt = (reason: StopReason) => {
      if (!stop.signal.aborted) stop.abort(reason);
    };
    if (claim.orphaned) halt({ kind: "orphaned" });
    // The run writes as its creator would: with the encryption context stored with it.
    const context = parseEncryptionContext(run.encryptionContext);
    const done = runWithEncryptionContext(context, () =>
      withLoopback(deps.loopback, run, () => execute(run, leaseToken, stop, halt)),
    )
      .catch((error: unknown) =>
        // Its lease lapses and another attempt takes the run over.
        log.error("run attempt failed; the run is retried when its lease lapses", {
          runId: run.runId,
          error,
        }),
      )
      .finally(() => {
        running.delete(run.runId);
        release();
      });
    running.set(run.runId, { stop, done, claimedAt });
  }

  /**
   * Starts a run in this process: waits for a free slot, claims the run (nothing happens when it
   * cannot start yet or another worker has it) and leaves it executing in the background, holding
   * the slot until it ends. Resolves once the run is claimed, so the queue's job is done: from then
   * on the run's lease, not the job, keeps it alive.
   */
  async function start(payload: AgentRunPayload): Promise<void> {
    // A stopping worker takes nothing new; the maintenance pass of a live worker dispatches it again.
    if (draining) return;
    await acquire();
    let handedOff = false;
    try {
      if (draining) return;
      const { workspaceId, threadId, runId } = payload;
      const leaseToken = randomUUID();
      const claim = await sql.begin(async (tx) => {
        const [, claimed] = await Promise.all([
          lockThreadQueue(tx, workspaceId, threadId),
          claimRun(tx, { workspaceId, runId, owner, leaseToken, leaseSeconds: settings.leaseSeconds }),
        ]);
        return claimed;
      });
      if (!claim) return;
      launch(claim);
      handedOff = true;
    } finally {
      if (!handedOff) release();
    }
  }

  async function execute(
    run: AgentRunRecord,
    leaseToken: string,
    stop: AbortController,
    halt: (reason: StopReason) => void,
  ): Promise<void> {
    const kwargs = run.kwargs as unknown as RunKwargs;
    // Streams of the run in this process get its events as they are stored, without a read.
    const writer = createRunEventWriter(sql, run, log, () => deps.bus().writing(run.runId, run.threadId));
    const tracer = deps.tracing?.start(run);
    const unsubscribe = deps
      .bus()
      .onCancel(run.runId, (action) =>
        halt(
          action === "orphaned"
            ? { kind: "orphaned" }
            : { kind: "cancel", action: action === "rollback" ? "rollback" : "interrupt" },
        ),
      );
    const heartbeat = setInterval(() => {
      renewRunLease(sql, run.runId, leaseToken, settings.leaseSeconds).then(
        (state) => {
          if (!state) halt({ kind: "lease-lost" });
          else if (state.orphaned) halt({ kind: "orphaned" });
          else if (state.cancelAction) halt({ kind: "cancel", action: state.cancelAction });
        },
        // A missed heartbeat is retried at the next tick; the lease outlives three of them.
        (error: unknown) => log.warn("run heartbeat failed", { runId: run.runId, error }),
      );
    }, heartbeatMs);
    const timeout = setTimeout(() => halt({ kind: "timeout" }), settings.timeoutSeconds * 1000);
    let graph: CompiledGraph | undefined;
    let status: RunStatus = "success";
    let output: JsonValue = null;
    let failure: { error: string; message: string } | undefined;
    // A refused strict resume: the run fails, its thread stays as it was.
    let refusal: ResumeRefusal | undefined;
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
      graph = await loadGraph(run, kwargs);
      if (kwargs.strict_resume) {
        const refusal = strictResumeRefusal(kwargs, await threadStateAfterRun(graph, run.threadId));
        if (refusal) throw new ResumeRefusedError(refusal);
      }
      const execute = kwargs.protocol ? executeProtocolRun : executeRun;
      const result = await execute({
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
      output = toPlainJson(result.output?.value ?? null);
    } catch (error) {
      const reason = stop.signal.aborted ? (stop.signal.reason as StopReason) : undefined;
      if (reason?.kind === "lease-lost") {
        await writer.flush().catch(() => {});
        return;
      }
      if (reason?.kind === "shutdown") {
        await writer.flush().catch(() => {});
        await handBack(run, leaseToken);
        return;
      }
      if (reason?.kind === "cancel" || reason?.kind === "orphaned") {
        status = "interrupted";
        if (reason.kind === "cancel" && reason.action === "rollback") {
          await writer.flush().catch(() => {});
          await rollBack(run, leaseToken, graph);
          return;
        }
      } else {
        status = "error";
        failure =
          reason?.kind === "timeout"
            ? { error: "TimeoutError", message: `the run exceeded its ${settings.timeoutSeconds} s timeout` }
            : errorData(error);
        if (error instanceof ResumeRefusedError) refusal = error.refusal;
        output = { __error__: failure };
        writer.push({ event: "error", data: { ...failure, ...refusal } });
        if (!reason)
          log.info("run failed", { runId: run.runId, error: failure.error, message: failure.message });
      }
    } finally {
      clearInterval(heartbeat);
      clearTimeout(timeout);
      unsubscribe();
    }
    // The last events are written while the end reads the thread's state; the end is written
    // once they are (its end event comes after them).
    const flushed = writer.flush();
    flushed.catch(() => {});
    await end(run, leaseToken, graph, { status, output, failure, refusal }, flushed, writer);
  }

  /**
   * Ends the run (when this attempt still holds it), owes its webhook, records the thread's state,
   * starts the next run. `flushed` settles when the run's events (of `writer`) are written; the end
   * waits for it, and hands its end event to the run's streams in this process after them.
   */
  async function end(
    run: AgentRunRecord,
    leaseToken: string,
    graph: CompiledGraph | undefined,
    outcome: {
      status: RunStatus;
      output: JsonValue;
      failure: { error: string; message: string } | undefined;
      refusal?: ResumeRefusal | undefined;
    },
    flushed: Promise<void>,
    writer: RunEventWriter,
  ): Promise<void> {
    const kwargs = run.kwargs as unknown as RunKwargs;
    let state: ThreadStateAfterRun | undefined;
    if (graph && !kwargs.temporary) state = await threadStateAfterRun(graph, run.threadId);
    let output = outcome.output;
    // No values chunk (the run stopped before one, or was cancelled): answer the thread's values.
    if (output === null) output = state?.values ?? {};
    // A protocol run's stream ends with the root's lifecycle, written with the end (encrypted as
    // the run's other events are, though the transaction carries no cipher) and handed over with
    // it as plain JSON, as the writer's batches are.
    const final = kwargs.protocol
      ? storedEvent(
          protocolEndEvent(
            {
              status: outcome.status,
              ...(outcome.failure ? { error: outcome.failure.message } : {}),
              ...(outcome.refusal ? { refusal: outcome.refusal } : {}),
              waitingForInput: Object.keys(state?.interrupts ?? {}).length > 0,
            },
            run.graphId,
          ),
        )
      : undefined;
    const cipher = storedCipherOf(sql);
    const finalStored = final && cipher ? { ...final, data: cipher.encryptJsonText(final.data) } : final;
    const endData = endEventData(
      outcome.status === "success" || outcome.status === "error" || outcome.status === "timeout"
        ? outcome.status
        : "interrupted",
    );
    let ended: RunEnd | undefined;
    let kept = false;
    // Awaited before the transaction opens: a transaction holding a connection while the events
    // wait for one could starve the pool.
    await flushed;
    // The end event's NOTIFY may arrive before the commit's answer: the run's streams here wait
    // for its hand-off rather than read Postgres for it.
    const handOver = deps.bus().writing(run.runId, run.threadId);
    const committed = sql.begin(async (tx) => {
      // The lock and the end in one round trip: Postgres takes the lock before it runs the update.
      // A temporary thread's deletion goes with them: it only happens when no run is pending or
      // running on the thread, so when this attempt did not end the run it deletes nothing the
      // run's actual end would not.
      const [, times, deleted] = await Promise.all([
        lockThreadQueue(tx, run.workspaceId, run.threadId),
        endRun(tx, run.runId, leaseToken, {
          status: outcome.status,
          output,
          eventTtlSeconds: settings.streamTtlSeconds,
          endEvent: END_EVENT,
          endData,
          channel: RUN_EVENTS_CHANNEL,
          ...(finalStored ? { finalEvent: finalStored } : {}),
        }),
        kwargs.temporary ? deleteTemporaryThread(tx, run.workspaceId, run.threadId) : false,
      ]);
      ended = times;
      if (!times) return;
      kept = true;
      if (deps.webhooks)
        await oweWebhook(tx, { ...deps.webhooks, queue: deps.queue }, run, {
          status: outcome.status,
          times,
          values: state?.values ?? (outcome.failure ? null : output),
          error: outcome.failure?.message,
        });
      if (deleted) return;
      const threadStatus =
        outcome.status === "error" && !outcome.refusal
          ? "error"
          : outcome.status === "interrupted" || !state?.stopped
            ? "idle"
            : "interrupted";
      const saved = await saveThreadAfterRun(tx, run.workspaceId, run.threadId, {
        ...(state ? { state: { values: state.values, interrupts: state.interrupts } } : {}),
        status: threadStatus,
        error: outcome.refusal ? null : (outcome.failure ?? null),
      });
      if (!saved) {
        // The thread was deleted while the run ran: what the run wrote after that goes too.
        kept = false;
        await deleteRun(tx, run.workspaceId, run.runId);
        await deleteThreadCheckpoints(tx, run.workspaceId, [run.threadId]);
        return;
      }
      await dispatchThreadQueue(tx, dispatchDeps, run.workspaceId, run.threadId);
    });
    let stored: StoredBatch | undefined;
    try {
      await committed;
      const end = ended?.endEvent;
      if (end) {
        const finalSeq = ended?.finalSeq;
        stored = {
          previousSeq: writer.lastSeq(),
          rows: [
            ...(final && finalSeq !== undefined ? [{ seq: finalSeq, runId: run.runId, ...final }] : []),
            { seq: end.seq, runId: run.runId, ms: end.ms, event: END_EVENT, data: endData },
          ],
        };
      }
    } finally {
      // Nothing to hand over when the end did not commit: the streams read Postgres if need be.
      handOver(stored);
    }
    if (!ended) return;
    reportEnded(run.runId, outcome.status);
    const attempt = running.get(run.runId);
    if (attempt && kept)
      attempt.ended = {
        ...run,
        status: outcome.status,
        output,
        cancelAction: null,
        updatedAt: ended.updatedAt,
      };
  }

  /** Tells the observer that this process ended a run. */
  function reportEnded(runId: string, status: RunStatus): void {
    const claimedAt = running.get(runId)?.claimedAt;
    if (claimedAt !== undefined) deps.onRunEnded?.({ status, durationMs: performance.now() - claimedAt });
  }

  /** A rollback: the run, its checkpoints and (after their TTL) its events go; the next run starts. */
  async function rollBack(
    run: AgentRunRecord,
    leaseToken: string,
    graph: CompiledGraph | undefined,
  ): Promise<void> {
    let ended = false;
    await sql.begin(async (tx) => {
      await lockThreadQueue(tx, run.workspaceId, run.threadId);
      ended = await finishRun(tx, run.runId, leaseToken, { status: "interrupted", output: {} });
      if (!ended) return;
      await deleteRunCheckpoints(tx, run.workspaceId, run.threadId, run.runId);
      await deleteRun(tx, run.workspaceId, run.runId);
      const kwargs = run.kwargs as unknown as RunKwargs;
      await appendRunEvents(tx, run, [
        ...(kwargs.protocol ? [storedEvent(rootLifecycleEvent("interrupted", run.graphId))] : []),
        { ms: Date.now(), event: END_EVENT, data: endEventData("rollback") },
      ]);
      await expireRunEvents(tx, run.runId, settings.streamTtlSeconds);
    });
    if (ended) reportEnded(run.runId, "interrupted");
    const state = graph ? await threadStateAfterRun(graph, run.threadId) : undefined;
    await sql.begin(async (tx) => {
      await lockThreadQueue(tx, run.workspaceId, run.threadId);
      await saveThreadAfterRun(tx, run.workspaceId, run.threadId, {
        ...(state ? { state: { values: state.values, interrupts: state.interrupts } } : {}),
        status: state?.stopped ? "interrupted" : "idle",
        error: null,
      });
      await dispatchThreadQueue(tx, dispatchDeps, run.workspaceId, run.threadId);
    });
  }

  /** A stopping worker gives the run back: pending again, dispatched for any worker to resume. */
  async function handBack(run: AgentRunRecord, leaseToken: string): Promise<void> {
    await sql.begin(async (tx) => {
      if (!(await releaseRun(tx, run.runId, leaseToken))) return;
      await dispatchRun(tx, dispatchDeps, {
        workspaceId: run.workspaceId,
        threadId: run.threadId,
        runId: run.runId,
      });
    });
    log.info("run handed back to the queue at shutdown", { runId: run.runId });
  }

  const job: JobDefinition<AgentRunPayload> = defineJob<AgentRunPayload>({
    name: "agent.run",
    version: 1,
    retryLimit: QUEUE_RETRY_LIMIT,
    retryDelaySeconds: QUEUE_RETRY_DELAY_SECONDS,
    retryBackoff: true,
    expireInSeconds: Math.min(settings.timeoutSeconds + JOB_EXPIRY_MARGIN_SECONDS, MAX_JOB_EXPIRY_SECONDS),
    // One fetch loop per process taking up to a slot's worth of jobs at once: a handler returns as
    // soon as its run is claimed (or waits for a slot), so one loop feeds every slot, and a
    // wake-up costs one fetch rather than one per slot.
    batchSize: settings.workers,
    handler: (payload) => start(payload),
  });

  return {
    job,
    reserve() {
      if (draining || free === 0) return undefined;
      free -= 1;
      let used = false;
      const once = () => {
        if (used) throw new Error("a run slot is used once");
        used = true;
      };
      return {
        owner,
        leaseToken: randomUUID(),
        run(claim) {
          once();
          launch(claim);
        },
        release() {
          once();
          release();
        },
      };
    },
    attemptEnd(runId) {
      const attempt = running.get(runId);
      return attempt?.done.then(() => attempt.ended);
    },
    slots: () => ({ total: settings.workers, busy: settings.workers - free }),
    async drain(graceMs) {
      draining = true;
      const all = () => [...running.values()].map((r) => r.done.catch(() => {}));
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(all()),
        new Promise((resolve) => {
          timer = setTimeout(resolve, graceMs);
        }),
      ]);
      clearTimeout(timer);
      for (const entry of running.values())
        if (!entry.stop.signal.aborted) entry.stop.abort({ kind: "shutdown" } satisfies StopReason);
      await Promise.all(all());
    },
  };
}
