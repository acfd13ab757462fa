import { Code, ConnectError } from "@connectrpc/connect";
import type { Logger } from "../logger.js";
import type { Sql } from "../store/db.js";
import { deletePendingTraces, orphanedTraces } from "../store/tracing/otel-pending-store.js";
import { inWorkspaceScope, unconfined } from "../store/tracing/workspace-scope.js";
import type { IngestActor, IngestService } from "../tracing/ingest-service.js";
import { enqueueOnce } from "./enqueue-once.js";
import { defineJob, type JobDefinition } from "./job-definition.js";
import type { Queue } from "./queue.js";

/** Payload of the orphan sweep: none, a sweep covers every workspace. */
export type OtelOrphanSweepPayload = Record<string, never>;

/** Dependencies of {@link createOtelOrphanSweepJob}. */
export interface OtelOrphanSweepJobDeps {
  sql: Sql;
  ingest: IngestService;
  log: Logger;
  /** The queue the job schedules its next run on; a getter, as the queue is built from the job list. */
  queue: () => Pick<Queue, "enqueue">;
  /** Seconds a trace's spans wait for their parent (tests shorten it); default {@link ORPHAN_WAIT_SECONDS}. */
  waitSeconds?: number;
}

/**
 * How long the spans of an OTel trace wait for a parent that has not come, counted from the last
 * waiting span of that trace to arrive: an hour. An SDK exports a span when it ends, and a parent
 * ends after its children, so children wait as long as the operation around them runs; an agent
 * turn runs seconds to minutes, and an hour is the default limit of a run on this server
 * (AGENTPLANE_RUN_TIMEOUT_SECONDS), past which a trace still missing its parent almost surely lost
 * it (sampled out upstream, sent by a service that is not instrumented, or dropped by an exporter
 * that gave up). A parent that still comes later starts a trace of its own: its children have been
 * stored already, and stay where they are.
 */
export const ORPHAN_WAIT_SECONDS = 60 * 60;
/** Seconds between sweeps: an orphaned span shows up at most this long after its wait. */
const INTERVAL_SECONDS = 5 * 60;
/** OTel traces stored per transaction: one batch's worth of spans in the usual case. */
const TRACES_PER_BATCH = 50;
/** The one key under which at most one sweep is queued across all processes (policy `short`). */
const SINGLETON_KEY = "otel.orphan-sweep";

/**
 * Stores the spans whose parent never came, and keeps itself going (each run first queues the
 * next): every {@link INTERVAL_SECONDS}, the waiting spans of each OTel trace that has had no new one
 * for {@link ORPHAN_WAIT_SECONDS} become runs, as LangSmith shows a span whose parent it never got:
 * a run at the top of a trace of its own, its parent's ids kept in `extra.otel` (missing_parent_run_id,
 * parent_span_id), with the spans under it in their places (span-placement.ts, placeOrphans). Kept
 * rather than dropped: they are what the user sent, and all of it that will ever arrive. Seed the
 * chain with {@link scheduleOtelOrphanSweep} at start-up.
 */
export function createOtelOrphanSweepJob(
  deps: OtelOrphanSweepJobDeps,
): JobDefinition<OtelOrphanSweepPayload> {
  const { sql, ingest, log, queue } = deps;
  const waitSeconds = deps.waitSeconds ?? ORPHAN_WAIT_SECONDS;
  /**
   * Stores the orphans of `ids`. A trace holding data Postgres refuses (INVALID_ARGUMENT: a number
   * beyond a column's range) would fail its transaction at every sweep, and hold back the traces
   * sharing it: those are stored one by one, and a trace that fails alone is dropped, logged, as an
   * ingest request holding it would have been refused.
   */
  const store = async (actor: IngestActor, ids: readonly string[]): Promise<void> => {
    try {
      const { runs, rejected } = await ingest.storeOrphanedSpans(actor, ids);
      log.info("stored spans whose parent never came", {
        workspace_id: actor.workspaceId,
        traces: ids.length,
        runs,
        ...(rejected.length > 0 ? { refused: rejected.length, first_refusal: rejected[0]?.reason } : {}),
      });
    } catch (error) {
      if (!(error instanceof ConnectError) || error.code !== Code.InvalidArgument) throw error;
      if (ids.length > 1) {
        for (const id of ids) await store(actor, [id]);
        return;
      }
      const spans = await inWorkspaceScope(sql, [actor.workspaceId], (tx) =>
        deletePendingTraces(tx, actor.workspaceId, ids),
      );
      log.warn("dropped spans whose parent never came: Postgres refuses to store them", {
        workspace_id: actor.workspaceId,
        otel_trace_id: ids[0],
        spans,
        reason: error.rawMessage,
      });
    }
  };
  const job: JobDefinition<OtelOrphanSweepPayload> = defineJob<OtelOrphanSweepPayload>({
    name: "otel.orphan-sweep",
    version: 1,
    policy: "short",
    // A failed sweep is retried a few times; the next scheduled one covers anything left anyway.
    retryLimit: 3,
    retryDelaySeconds: 60,
    retryBackoff: true,
    // Thirty minutes stores hundreds of thousands of spans, fifty traces per transaction.
    expireInSeconds: 30 * 60,
    async handler(_payload, { signal }) {
      await scheduleOtelOrphanSweep(queue(), job, INTERVAL_SECONDS);
      for (;;) {
        const due = await orphanedTraces(unconfined(sql), waitSeconds, TRACES_PER_BATCH);
        // One transaction per workspace and sender, as an ingest request would be.
        const groups = new Map<string, { actor: IngestActor; ids: string[] }>();
        for (const trace of due) {
          const key = `${trace.workspaceId}/${trace.userId}/${trace.apiKeyId}`;
          const group = groups.get(key) ?? {
            actor: { workspaceId: trace.workspaceId, userId: trace.userId, apiKeyId: trace.apiKeyId },
            ids: [],
          };
          group.ids.push(trace.otelTraceId);
          groups.set(key, group);
        }
        for (const { actor, ids } of groups.values()) {
          signal.throwIfAborted();
          await store(actor, ids);
        }
        if (due.length < TRACES_PER_BATCH) return;
      }
    },
  });
  return job;
}

/** Queues a sweep `delaySeconds` from now unless one is queued already (then it does nothing). */
export async function scheduleOtelOrphanSweep(
  queue: Pick<Queue, "enqueue">,
  job: JobDefinition<OtelOrphanSweepPayload>,
  delaySeconds: number,
): Promise<void> {
  await enqueueOnce(queue, job, {}, { delaySeconds, singletonKey: SINGLETON_KEY });
}
