import type { Clock } from "../clock.js";
import type { BulkExportSettings } from "../config.js";
import { insertExportWithRuns } from "../export/new-export.js";
import { dueWindows, SPAWN_DELAY_SECONDS } from "../export/schedule-windows.js";
import { uuidv7 } from "../ids.js";
import type { Sql } from "../store/db.js";
import { releaseLapsedExportRuns } from "../store/export/bulk-export-run-store.js";
import {
  advanceSchedule,
  findDueSchedules,
  findOverdueExports,
  findWorkspacesWithWaitingRuns,
  finishExport,
  lockSchedule,
} from "../store/export/bulk-export-store.js";
import {
  dispatchExportRuns,
  dispatchInOwnTransaction,
  type ExportDispatchDeps,
} from "./bulk-export-dispatch.js";
import { enqueueOnce } from "./enqueue-once.js";
import { defineJob, type JobDefinition } from "./job-definition.js";

/** Payload of the maintenance pass: none, a pass covers every workspace. */
export type ExportMaintenancePayload = Record<string, never>;

/** Dependencies of {@link createExportMaintenanceJob}. */
export interface ExportMaintenanceDeps extends ExportDispatchDeps {
  sql: Sql;
  settings: BulkExportSettings;
  /** Decides which scheduled windows are due. */
  clock: Clock;
}

/** At most one pass is queued across all processes (policy `short`). */
const SINGLETON_KEY = "bulk-export.maintain";
/** Windows one schedule spawns per pass; a longer outage is caught up over the next passes. */
const WINDOWS_PER_PASS = 100;

/**
 * The periodic bulk-export pass, every `maintenanceIntervalSeconds`, rescheduling itself first so a
 * failed pass never breaks the chain:
 * 1. runs whose attempt stopped renewing its lease (a worker that died) are released and requeued,
 *    so they resume from their checkpoint within lease + interval, not after the 4 h run timeout;
 * 2. exports past the export timeout end TimedOut (not retried);
 * 3. schedules spawn every window that is due by the clock, each exactly once (after an outage,
 *    all the missed ones, in order);
 * 4. waiting runs are dispatched, in case a dispatch was lost.
 */
export function createExportMaintenanceJob(
  deps: ExportMaintenanceDeps,
): JobDefinition<ExportMaintenancePayload> {
  const { sql, settings, clock } = deps;

  async function recoverLapsedRuns(): Promise<void> {
    await sql.begin(async (tx) => {
      const released = await releaseLapsedExportRuns(tx, settings.maxRetries);
      for (const run of released) {
        if (run.status === "Running") {
          await deps.queue().enqueue(deps.runJob(), { workspaceId: run.workspaceId, runId: run.id }, { tx });
        } else {
          await finishExport(tx, run.workspaceId, run.bulkExportId, "Failed", "Cancelled");
        }
      }
    });
  }

  async function timeOutExports(): Promise<void> {
    for (const overdue of await findOverdueExports(sql, settings.exportTimeoutSeconds)) {
      await finishExport(sql, overdue.workspaceId, overdue.id, "TimedOut", "TimedOut");
    }
  }

  async function spawnScheduledExports(): Promise<void> {
    const now = clock.now();
    for (const due of await findDueSchedules(sql, now, SPAWN_DELAY_SECONDS)) {
      await sql.begin(async (tx) => {
        const schedule = await lockSchedule(tx, due.workspaceId, due.id);
        if (!schedule || schedule.nextWindowStart === null || schedule.intervalHours === null) return;
        const windows = dueWindows(schedule.nextWindowStart, schedule.intervalHours, now, WINDOWS_PER_PASS);
        for (const window of windows) {
          await insertExportWithRuns(tx, {
            id: uuidv7(),
            workspaceId: schedule.workspaceId,
            destinationId: schedule.destinationId,
            sessionId: schedule.sessionId,
            startTime: window.start,
            endTime: window.end,
            filter: schedule.filter,
            exportFields: schedule.exportFields,
            intervalHours: null,
            formatVersion: schedule.formatVersion,
            compression: schedule.compression,
            status: "Created",
            sourceBulkExportId: schedule.id,
            nextWindowStart: null,
          });
        }
        const last = windows.at(-1);
        if (last) {
          await advanceSchedule(tx, schedule.id, last.end);
          await dispatchExportRuns(tx, deps, schedule.workspaceId);
        }
      });
    }
  }

  const job: JobDefinition<ExportMaintenancePayload> = defineJob<ExportMaintenancePayload>({
    name: "bulk-export.maintain",
    version: 1,
    policy: "short",
    // The next pass comes soon anyway; a failed one is retried once.
    retryLimit: 1,
    retryDelaySeconds: settings.maintenanceIntervalSeconds,
    retryBackoff: false,
    // A pass touches a few rows per export; ten minutes means something is stuck.
    expireInSeconds: 10 * 60,
    async handler() {
      await scheduleExportMaintenance(deps.queue(), job, settings.maintenanceIntervalSeconds);
      await recoverLapsedRuns();
      await timeOutExports();
      await spawnScheduledExports();
      for (const workspaceId of await findWorkspacesWithWaitingRuns(sql)) {
        await dispatchInOwnTransaction(sql, deps, workspaceId);
      }
    },
  });
  return job;
}

/**
 * Queues a maintenance pass `delaySeconds` from now unless one is queued already. Called at start
 * with 0, so a restarted server resumes orphaned runs and catches up schedules at once.
 */
export async function scheduleExportMaintenance(
  queue: Parameters<typeof enqueueOnce>[0],
  job: JobDefinition<ExportMaintenancePayload>,
  delaySeconds: number,
): Promise<void> {
  await enqueueOnce(queue, job, {}, { delaySeconds, singletonKey: SINGLETON_KEY });
}
