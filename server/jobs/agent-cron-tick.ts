import type { Clock } from "../clock.js";
import type { Logger } from "../logger.js";
import {
  advanceCron,
  type CronRecord,
  countDueCrons,
  lockDueCrons,
  nextDueAfter,
} from "../store/agents/agent-cron-store.js";
import type { AgentRunRecord } from "../store/agents/agent-run-store.js";
import { parseEncryptionContext, runWithEncryptionContext } from "../store/crypto/encryption-scope.js";
import { pgErrorCode, type Sql, type Transaction } from "../store/db.js";
import { nextFireTime } from "./cron-schedule.js";
import { enqueueOnce } from "./enqueue-once.js";
import { defineJob, type JobDefinition } from "./job-definition.js";
import type { Queue } from "./queue.js";

/**
 * Creates the run a due cron makes, inside `tx` (the transaction that holds the cron's row and
 * advances it). Given by the composition root: run creation belongs to the services.
 */
export type CronFire = (tx: Transaction, cron: CronRecord) => Promise<AgentRunRecord>;

/** Payload of a tick and of a helper pass: none, a pass takes whatever is due. */
export type CronTickPayload = Record<string, never>;

/** Dependencies of {@link createCronJobs}. */
export interface CronTickDeps {
  sql: Sql;
  queue: () => Pick<Queue, "enqueue">;
  /** Decides what is due; tests inject one. */
  clock: Clock;
  fire: CronFire;
  log: Logger;
  /** Seconds between ticks at most; default {@link DEFAULT_TICK_SECONDS}. */
  tickSeconds?: number;
}

/**
 * Seconds between ticks at most: a cron fires within this (plus the queue's 2 s poll) of its time.
 * A tick with nothing due is one indexed query. A tick comes sooner when a cron is due sooner.
 */
export const DEFAULT_TICK_SECONDS = 5;
/** At most one tick is queued across all processes (policy `short`). */
const TICK_SINGLETON_KEY = "agent-cron.tick";
/**
 * Crons fired per transaction: each firing is a handful of statements, so a batch holds its locks
 * for well under a second, while concurrent passes take the next batch (skip locked).
 */
const BATCH = 50;
/**
 * Helper passes a tick asks for when more than a batch is due, so that every process's workers share
 * a burst (1,000 crons due in one minute); each helper works until nothing is due.
 */
const MAX_HELPERS = 4;

/** Deadlock and serialization failure: transient, so the cron is left due rather than skipped. */
const RETRYABLE = new Set(["40P01", "40001"]);

/** The key of the thread queue a cron's firing locks ("" for stateless crons, which lock none). */
function threadKey(cron: CronRecord): string {
  return cron.threadId === null ? "" : `${cron.workspaceId}/${cron.threadId}`;
}

/** What one pass fired. */
export interface CronPassResult {
  fired: number;
  failed: number;
}

/**
 * Fires every cron due at the clock's time, a batch per transaction, until none is left: each is
 * locked (skipping those another pass holds), its run created, and its `next_run_date` moved to its
 * first time after now, all committed together. A cron due for several missed times (the server was
 * down) fires once. A firing that fails (a thread cron whose thread refuses a run) is logged and the
 * cron still moves on, so one bad cron cannot block the rest.
 */
export async function fireDueCrons(deps: CronTickDeps): Promise<CronPassResult> {
  const result: CronPassResult = { fired: 0, failed: 0 };
  for (;;) {
    const now = deps.clock.now();
    const taken = await deps.sql.begin(async (tx) => {
      const due = await lockDueCrons(tx, now, BATCH);
      // Thread crons lock their thread's queue: every pass takes those locks in one order, so two
      // passes firing crons of the same threads cannot deadlock.
      due.sort((a, b) => threadKey(a).localeCompare(threadKey(b)));
      for (const cron of due) {
        try {
          // The run is created with, and later executes in, the cron creator's encryption context.
          const context = parseEncryptionContext(cron.encryptionContext);
          await runWithEncryptionContext(context, () => tx.savepoint((sp) => deps.fire(sp, cron)));
          result.fired += 1;
        } catch (error) {
          result.failed += 1;
          if (RETRYABLE.has(pgErrorCode(error) ?? "")) {
            // A race with another transaction: the cron stays due and the next pass fires it.
            deps.log.warn("cron firing raced another transaction; retried", { cronId: cron.cronId, error });
            continue;
          }
          deps.log.warn("cron firing failed; it fires again at its next time", {
            cronId: cron.cronId,
            workspaceId: cron.workspaceId,
            error,
          });
        }
        await advanceCron(tx, cron.workspaceId, cron.cronId, nextTime(cron, now, deps.log));
      }
      return due.length;
    });
    if (taken < BATCH) return result;
  }
}

/** A fired cron's next time after `now`; null (never again) for one whose schedule no longer reads. */
function nextTime(cron: CronRecord, now: Date, log: Logger): Date | null {
  try {
    return nextFireTime(cron.schedule, cron.timezone, now, cron.endTime);
  } catch (error) {
    log.warn("cron schedule unreadable; the cron stops firing", { cronId: cron.cronId, error });
    return null;
  }
}

/** Queues the next tick `delaySeconds` from now unless one is queued. Called at start with 0. */
export async function scheduleCronTick(
  queue: Pick<Queue, "enqueue">,
  job: JobDefinition<CronTickPayload>,
  delaySeconds: number,
): Promise<void> {
  await enqueueOnce(queue, job, {}, { delaySeconds, singletonKey: TICK_SINGLETON_KEY });
}

/**
 * The cron jobs: `agent-cron.tick`, a pass queued every few seconds by the pass before it (the chain
 * survives a failed pass, and at most one waits across all processes), and `agent-cron.fire`, the
 * helper passes a tick queues for a burst so that every process shares it.
 */
export function createCronJobs(deps: CronTickDeps): {
  tick: JobDefinition<CronTickPayload>;
  fire: JobDefinition<CronTickPayload>;
} {
  const tickSeconds = deps.tickSeconds ?? DEFAULT_TICK_SECONDS;
  const fire = defineJob<CronTickPayload>({
    name: "agent-cron.fire",
    version: 1,
    // A helper that fails leaves its crons due: the next tick takes them.
    retryLimit: 0,
    retryDelaySeconds: 0,
    retryBackoff: false,
    // Thousands of firings take seconds; ten minutes means something is stuck.
    expireInSeconds: 10 * 60,
    async handler() {
      await fireDueCrons(deps);
    },
  });
  const tick: JobDefinition<CronTickPayload> = defineJob<CronTickPayload>({
    name: "agent-cron.tick",
    version: 1,
    policy: "short",
    // The next tick comes within seconds anyway.
    retryLimit: 0,
    retryDelaySeconds: 0,
    retryBackoff: false,
    expireInSeconds: 10 * 60,
    async handler() {
      const upcoming = await nextDueAfter(deps.sql, deps.clock.now());
      const untilUpcoming = upcoming
        ? Math.ceil((upcoming.getTime() - deps.clock.now().getTime()) / 1000)
        : tickSeconds;
      await scheduleCronTick(deps.queue(), tick, Math.max(1, Math.min(tickSeconds, untilUpcoming)));
      const due = await countDueCrons(deps.sql, deps.clock.now());
      const helpers = Math.min(MAX_HELPERS, Math.ceil(due / BATCH) - 1);
      for (let i = 0; i < helpers; i += 1) await deps.queue().enqueue(fire, {});
      if (due > 0) await fireDueCrons(deps);
    },
  });
  return { tick, fire };
}
