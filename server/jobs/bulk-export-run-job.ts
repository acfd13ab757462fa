import { hostname } from "node:os";
import type { BulkExportSettings } from "../config.js";
import { openCredentials } from "../export/destination-credentials.js";
import { DestinationError, destinationProblemOf } from "../export/destination-error.js";
import { exportPartition } from "../export/partition-exporter.js";
import { destinationPolicy } from "../export/s3-destination.js";
import { loadZstdCompressor } from "../export/zstd-compressor.js";
import { uuidv7 } from "../ids.js";
import type { Logger } from "../logger.js";
import type { SecretBox } from "../store/crypto/secret-box.js";
import { pgErrorCode, type Sql } from "../store/db.js";
import { findDestinationForExport } from "../store/export/bulk-export-destination-store.js";
import {
  claimExportRun,
  completeExportRun,
  recordExportRunFailure,
  renewExportRunLease,
  saveExportRunCheckpoint,
} from "../store/export/bulk-export-run-store.js";
import {
  completeExportIfDone,
  findExport,
  finishExport,
  markExportRunning,
} from "../store/export/bulk-export-store.js";
import { EXPORTABLE_RUN_FIELDS, type ExportableRunField } from "../store/export/run-export-store.js";
import { validateFilter } from "../tracing/filter/index.js";
import {
  dispatchInOwnTransaction,
  type ExportDispatchDeps,
  type ExportRunPayload,
} from "./bulk-export-dispatch.js";
import { defineJob, type JobDefinition } from "./job-definition.js";

/** Dependencies of {@link createExportRunJob}. */
export interface ExportRunJobDeps extends Omit<ExportDispatchDeps, "runJob"> {
  sql: Sql;
  settings: BulkExportSettings;
  secrets: SecretBox;
  log: Logger;
}

/**
 * pg-boss's own retry budget is larger than the export's: the run row counts attempts (crashes the
 * maintenance job notices included) and decides when a run fails; pg-boss must never give up first.
 */
const QUEUE_RETRY_MARGIN = 5;

/** The attempt lost its lease: another attempt owns the run now. */
class LeaseLost extends Error {
  constructor() {
    super("the attempt lost its lease on the export run");
    this.name = "LeaseLost";
  }
}

/** The export stopped (cancelled, failed elsewhere, timed out) while the attempt ran. */
class ExportStopped extends Error {
  constructor(status: string) {
    super(`the export is ${status}`);
    this.name = "ExportStopped";
  }
}

/**
 * Exports one partition per job. An attempt claims the run's lease (or leaves at once when the run
 * is finished, its export stopped, or a live attempt holds it), renews it every quarter lease,
 * checkpoints after each file, and completes the run (and the export, when it was the last). A
 * failed attempt is recorded under `retry_<n>`; destination errors fail the run and its export at
 * once, other errors are rethrown for pg-boss to retry after the fixed delay until the retries run
 * out. Stopping the export (cancel, another run failing, the export timeout) aborts the attempt's
 * upload at its next heartbeat.
 */
export function createExportRunJob(deps: ExportRunJobDeps): JobDefinition<ExportRunPayload> {
  const { sql, settings, secrets, log } = deps;
  const owner = `${hostname()}:${process.pid}:${uuidv7().slice(-12)}`;
  const heartbeatMs = (settings.leaseSeconds * 1000) / 4;
  const dispatchDeps: ExportDispatchDeps = { ...deps, runJob: () => job };
  const dispatch = (workspaceId: string) => dispatchInOwnTransaction(sql, dispatchDeps, workspaceId);

  async function attempt(payload: ExportRunPayload, jobSignal: AbortSignal): Promise<void> {
    const { workspaceId, runId } = payload;
    const claim = await claimExportRun(sql, {
      workspaceId,
      runId,
      owner,
      leaseSeconds: settings.leaseSeconds,
    });
    if (!claim) return;
    const { run, leaseToken } = claim;
    const stop = new AbortController();
    const onJobAbort = () => stop.abort(jobSignal.reason);
    jobSignal.addEventListener("abort", onJobAbort, { once: true });
    const heartbeat = setInterval(() => {
      renewExportRunLease(sql, runId, leaseToken, settings.leaseSeconds).then(
        (state) => {
          if (!state) stop.abort(new LeaseLost());
          else if (state.runStatus !== "Running") stop.abort(new ExportStopped(state.exportStatus));
          else if (state.destinationDeleted) stop.abort(destinationDeleted());
        },
        // A missed heartbeat is retried at the next tick; the lease outlives three of them.
        (error: unknown) => log.warn("export run heartbeat failed", { runId, error }),
      );
    }, heartbeatMs);
    try {
      await markExportRunning(sql, workspaceId, run.bulkExportId);
      const exp = await findExport(sql, workspaceId, run.bulkExportId);
      if (!exp) throw new LeaseLost();
      const destination = await findDestinationForExport(sql, workspaceId, exp.destinationId);
      if (!destination || destination.deletedAt !== null)
        throw new DestinationError(
          "Destination was deleted",
          "recreate the destination and create a new export",
        );
      const manifestKey = await exportPartition(
        sql,
        {
          workspaceId,
          exportId: exp.id,
          runId,
          sessionId: exp.sessionId,
          start: run.startTime,
          end: run.endTime,
          condition: exp.filter === null ? undefined : validateFilter(exp.filter),
          fields: (exp.exportFields ?? EXPORTABLE_RUN_FIELDS) as readonly ExportableRunField[],
          formatVersion: exp.formatVersion,
          target: {
            location: destination,
            credentials: openCredentials(secrets, destination),
            policy: destinationPolicy(settings.allowPrivateEndpoints),
          },
          cursor: run.cursor,
          files: run.files,
          retried: run.retryNumber > 0,
        },
        settings,
        await loadZstdCompressor(),
        {
          signal: stop.signal,
          async checkpoint(file, cursor) {
            if (!(await saveExportRunCheckpoint(sql, runId, leaseToken, { file, cursor })))
              throw new LeaseLost();
          },
        },
      );
      if (!(await completeExportRun(sql, runId, leaseToken, manifestKey))) return;
      await completeExportIfDone(sql, workspaceId, run.bulkExportId);
      await dispatch(workspaceId);
    } catch (error) {
      const reason = stop.signal.aborted ? stop.signal.reason : error;
      // Whoever stopped the export or took the run over has recorded the run's state already.
      if (reason instanceof LeaseLost || reason instanceof ExportStopped) return;
      const problem = destinationProblemOf(reason);
      const outcome = await recordExportRunFailure(sql, runId, leaseToken, {
        message: problem ? problem.message : describeAttemptError(reason, jobSignal),
        retryable: problem === undefined,
        maxRetries: settings.maxRetries,
      });
      if (!outcome) return;
      if (outcome.status === "Failed") {
        // One failed run fails the export; its other runs stop.
        await finishExport(sql, workspaceId, run.bulkExportId, "Failed", "Cancelled");
        await dispatch(workspaceId);
        return;
      }
      throw reason;
    } finally {
      clearInterval(heartbeat);
      jobSignal.removeEventListener("abort", onJobAbort);
    }
  }

  const job: JobDefinition<ExportRunPayload> = defineJob<ExportRunPayload>({
    name: "bulk-export.run",
    version: 1,
    retryLimit: settings.maxRetries + QUEUE_RETRY_MARGIN,
    retryDelaySeconds: settings.retryDelaySeconds,
    // The seed: retries are 30 s apart, without backoff.
    retryBackoff: false,
    expireInSeconds: settings.runTimeoutSeconds,
    workers: settings.workers,
    handler: (payload, { signal }) => attempt(payload, signal),
  });
  return job;
}

/** The error of an attempt whose destination was deleted: the seed's "destination deleted", not retried. */
function destinationDeleted(): DestinationError {
  return new DestinationError("Destination was deleted", "recreate the destination and create a new export");
}

/**
 * What a failed attempt's `retry_<n>` error says. Database errors name their SQLSTATE only (their
 * text can quote SQL); everything else its message, which the S3 client and the writer keep free
 * of secrets.
 */
function describeAttemptError(error: unknown, jobSignal: AbortSignal): string {
  if (jobSignal.aborted) {
    const why = jobSignal.reason instanceof Error ? jobSignal.reason.message : String(jobSignal.reason);
    return /expired/.test(why)
      ? "the run exceeded its time limit; the retry resumes from the last checkpoint"
      : "the worker stopped during the attempt (restart or deployment); the retry resumes from the last checkpoint";
  }
  const code = pgErrorCode(error);
  if (code !== undefined)
    return `database error (SQLSTATE ${code}); the retry resumes from the last checkpoint`;
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}
