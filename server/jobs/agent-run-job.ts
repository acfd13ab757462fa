/**
 * The run worker of a process: the `agent.run` job, the process's run slots (run-slots.ts), and
 * the attempts executing in them (run-attempt.ts).
 *
 * A job names a run; its handler takes a slot, claims the run when it heads its thread's queue
 * (one run per thread at a time, in arrival order) and leaves the attempt running in the slot,
 * which it holds until the attempt is over. A run's creator may instead reserve a slot and claim
 * the run as it inserts it (`reserve`, or `reserveWithin` when the creator waits on the run
 * anyway): no queue round trip.
 *
 * Invariants:
 * - every attempt runs in a slot of this process, taken before its claim and given back when the
 *   attempt is over (whatever its outcome), so at most AGENTPLANE_RUN_WORKERS attempts run here;
 * - a job is done once its run is claimed (or found not claimable): from then on the run's lease,
 *   not the job, keeps it alive;
 * - an attempt writes as its run's creator would, under the encryption context stored with the run;
 * - a draining worker takes no new run, lets those running finish for the grace, then stops the
 *   rest, which hand their runs back to the queue.
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { RunSettings } from "../config.js";
import type { Logger } from "../logger.js";
import type { GraphRegistry } from "../runtime/graph-registry.js";
import { type Loopback, withLoopback } from "../runtime/loopback-client.js";
import type { RunEventBus } from "../runtime/run-event-bus.js";
import { createRunEventBatcher } from "../runtime/run-event-writer.js";
import type { RunKwargs } from "../runtime/run-kwargs.js";
import type { RunTracing } from "../runtime/run-tracer.js";
import { claimRun, type RunClaim, type RunStatus } from "../store/agents/agent-run-store.js";
import { parseEncryptionContext, runWithEncryptionContext } from "../store/crypto/encryption-scope.js";
import type { Sql } from "../store/db.js";
import { type AgentRunPayload, dispatchRun, type RunDispatchDeps } from "./agent-run-dispatch.js";
import { defineJob, type JobDefinition } from "./job-definition.js";
import { type RunExecutor, runAttempt } from "./run-attempt.js";
import { type BacklogPlace, createRunBacklog } from "./run-backlog.js";
import { type AttemptStop, createAttemptStop } from "./run-lease.js";
import { createRunSlots, type HeldSlot, type RunSlotUsage } from "./run-slots.js";
import type { WebhookOwing } from "./webhook-delivery-job.js";

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
  /** The executor of a run, by its kwargs; the graph executor (run-executor.ts) when absent. */
  executorFor?: (kwargs: RunKwargs) => RunExecutor;
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
   * {@link reserve}, waiting for a free slot at most `ms` milliseconds, and only while `signal`
   * has not aborted: for a run whose creator waits on its execution anyway (run-creation.ts).
   * Undefined when the wait ended first, or the worker is stopping.
   */
  reserveWithin(ms: number, signal: AbortSignal): Promise<RunSlot | undefined>;
  /**
   * A place in this process's backlog (run-backlog.ts) for a run its creator makes while every slot
   * is busy, which then waits here for a slot instead of going through the queue; undefined when
   * the backlog is full or the worker is stopping.
   */
  backlog(): BacklogPlace | undefined;
  /** The slots in use now. */
  slots(): RunSlotUsage;
}

/** What a process that executes runs offers their creation: a free slot, or a place in its backlog. */
export type LocalRuns = Pick<AgentRunWorker, "reserve" | "reserveWithin" | "backlog">;

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
  stop: AttemptStop;
  /** Settles when the attempt is over and its slot is free. */
  done: Promise<void>;
}

/**
 * Runs the backlog holds per slot: with short runs a slot frees up every few milliseconds, so a
 * backlog of a few runs per slot drains long before any of them waits out its second (after which
 * it goes to the queue anyway); past that, runs go to the queue, where idle workers elsewhere see them.
 */
const BACKLOG_RUNS_PER_SLOT = 4;

/** pg-boss retries a job whose handler failed on a database error; the run row bounds attempts. */
const QUEUE_RETRY_LIMIT = 3;
/** Seconds before pg-boss retries such a job. */
const QUEUE_RETRY_DELAY_SECONDS = 1;
/** The job outlives the run's own timeout by this much, so the run's timeout always fires first. */
const JOB_EXPIRY_MARGIN_SECONDS = 120;
/** pg-boss refuses job expirations of a day or more. */
const MAX_JOB_EXPIRY_SECONDS = 86_399;

/** Creates the run worker of this process; see the invariants above. */
export function createAgentRunWorker(deps: AgentRunWorkerDeps): AgentRunWorker {
  const { sql, settings, log } = deps;
  const owner = `${hostname()}:${process.pid}:${randomUUID().slice(-12)}`;
  const slots = createRunSlots(settings.workers);
  let draining = false;
  const running = new Map<string, Attempt>();
  const attemptDeps = {
    sql,
    graphs: deps.graphs,
    settings,
    log,
    bus: deps.bus,
    events: createRunEventBatcher(sql, log),
    ...(deps.tracing ? { tracing: deps.tracing } : {}),
    ...(deps.executorFor ? { executorFor: deps.executorFor } : {}),
    settlement: {
      sql,
      settings,
      bus: deps.bus,
      dispatch: { queue: deps.queue, runJob: () => job },
      ...(deps.webhooks ? { webhooks: deps.webhooks } : {}),
    },
  };

  /** Executes a claimed run in the background in `slot`; gives the slot back when the attempt is over. */
  function launch(claim: RunClaim, slot: HeldSlot): void {
    const { run } = claim;
    const claimedAt = performance.now();
    const stop = createAttemptStop();
    if (claim.orphaned) stop.halt({ kind: "orphaned" });
    const entry: Attempt = { stop, done: Promise.resolve() };
    const context = parseEncryptionContext(run.encryptionContext);
    entry.done = runWithEncryptionContext(context, () =>
      withLoopback(deps.loopback, run, () => runAttempt(attemptDeps, claim, stop)),
    )
      .then(
        (result) => {
          if (result.status)
            deps.onRunEnded?.({ status: result.status, durationMs: performance.now() - claimedAt });
        },
        // Nothing committed: its lease lapses and another attempt takes the run over.
        (error: unknown) =>
          log.error("run attempt failed; the run is retried when its lease lapses", {
            runId: run.runId,
            error,
          }),
      )
      .finally(() => {
        running.delete(run.runId);
        slot.release();
      });
    running.set(run.runId, entry);
  }

  /**
   * Starts a run in this process: waits for a free slot, claims the run (nothing happens when it
   * cannot start yet or another worker has it) and leaves it executing in the background, holding
   * the slot until it ends. Resolves once the run is claimed, so the queue's job is done. When the
   * slots close first (the worker is stopping), `closed` says what becomes of the run.
   */
  async function start(payload: AgentRunPayload, closed?: () => Promise<void>): Promise<void> {
    const slot = await slots.take();
    // A stopping worker takes nothing new: a job's run is dispatched again by the maintenance pass
    // of a live worker, a backlog run gets its job now.
    if (!slot) {
      await closed?.();
      return;
    }
    let claim: RunClaim | undefined;
    try {
      const { workspaceId, threadId, runId } = payload;
      const leaseToken = randomUUID();
      // One statement, which locks the thread's queue itself: no transaction, one round trip.
      claim = await claimRun(sql, {
        workspaceId,
        threadId,
        runId,
        owner,
        leaseToken,
        leaseSeconds: settings.leaseSeconds,
      });
    } finally {
      if (!claim) slot.release();
    }
    if (claim) launch(claim, slot);
  }

  /** A slot taken for a run its creator claims itself: run the claimed run in it, or give it back, once. */
  function reserved(slot: HeldSlot): RunSlot {
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
        launch(claim, slot);
      },
      release() {
        once();
        slot.release();
      },
    };
  }

  const dispatch = { queue: deps.queue, runJob: () => job };
  const backlog = createRunBacklog({
    capacity: settings.workers * BACKLOG_RUNS_PER_SLOT,
    start,
    dispatch: (run) => dispatchRun(sql, dispatch, run),
    log,
  });

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
      const slot = slots.tryTake();
      return slot && reserved(slot);
    },
    async reserveWithin(ms, signal) {
      // A draining worker has closed its slots: the wait answers undefined at once.
      const slot = await slots.takeWithin(ms, signal);
      return slot && reserved(slot);
    },
    backlog: () => (draining ? undefined : backlog.reserve()),
    slots: () => slots.usage(),
    async drain(graceMs) {
      draining = true;
      slots.close();
      // `done` never rejects: each attempt's failure is logged where it settles.
      const all = () => Promise.all([...running.values()].map((r) => r.done));
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        all(),
        new Promise((resolve) => {
          timer = setTimeout(resolve, graceMs);
        }),
      ]);
      clearTimeout(timer);
      for (const entry of running.values()) entry.stop.halt({ kind: "shutdown" });
      await all();
    },
  };
}
