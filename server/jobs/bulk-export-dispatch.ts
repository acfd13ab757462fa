import type { BulkExportSettings } from "../config.js";
import type { Queryable, Sql } from "../store/db.js";
import { lockDispatch, markRunsQueued } from "../store/export/bulk-export-run-store.js";
import type { JobDefinition } from "./job-definition.js";
import type { Queue } from "./queue.js";

/** Payload of an export run job: the run (partition) to export. */
export interface ExportRunPayload {
  workspaceId: string;
  runId: string;
}

/** What {@link dispatchExportRuns} needs. */
export interface ExportDispatchDeps {
  queue: () => Pick<Queue, "enqueue">;
  /** The export run job (a getter: the job itself dispatches when a run finishes). */
  runJob: () => JobDefinition<ExportRunPayload>;
  settings: Pick<BulkExportSettings, "maxConcurrentRunsPerExport" | "maxConcurrentExportsPerWorkspace">;
}

/**
 * Hands a workspace's waiting export runs to the queue as far as the limits allow: at most
 * `maxConcurrentRunsPerExport` runs of one export and `maxConcurrentExportsPerWorkspace` exports
 * in flight, oldest export first, earliest partition first. What does not fit waits (status
 * Created) until a run finishes and dispatches again. Must run inside `tx`, a transaction: the
 * runs are marked and their jobs sent atomically, under a per-workspace lock.
 */
export async function dispatchExportRuns(
  tx: Queryable,
  deps: ExportDispatchDeps,
  workspaceId: string,
): Promise<number> {
  const { maxConcurrentRunsPerExport, maxConcurrentExportsPerWorkspace } = deps.settings;
  const candidates = await lockDispatch(tx, workspaceId);
  let activeExports = candidates.filter((c) => c.inFlight > 0).length;
  let sent = 0;
  for (const c of candidates) {
    if (c.waiting === 0) continue;
    if (c.inFlight === 0 && activeExports >= maxConcurrentExportsPerWorkspace) continue;
    const slots = maxConcurrentRunsPerExport - c.inFlight;
    if (slots <= 0) continue;
    const ids = await markRunsQueued(tx, workspaceId, c.bulkExportId, slots);
    for (const runId of ids) await deps.queue().enqueue(deps.runJob(), { workspaceId, runId }, { tx });
    if (c.inFlight === 0 && ids.length > 0) activeExports += 1;
    sent += ids.length;
  }
  return sent;
}

/** {@link dispatchExportRuns} in a transaction of its own. */
export function dispatchInOwnTransaction(
  sql: Sql,
  deps: ExportDispatchDeps,
  workspaceId: string,
): Promise<number> {
  return sql.begin((tx) => dispatchExportRuns(tx, deps, workspaceId));
}
