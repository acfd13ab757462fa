import { uuidv7 } from "../ids.js";
import type { Queryable } from "../store/db.js";
import { insertExportRuns } from "../store/export/bulk-export-run-store.js";
import { type ExportRecord, insertExport, type NewExport } from "../store/export/bulk-export-store.js";
import { dayPartitions } from "./partitions.js";

/**
 * Inserts an export and, unless it is a schedule, one run per UTC day of its range. Undefined when
 * a spawned window exists already (another process spawned it). Call inside a transaction, with the
 * dispatch that hands the runs to the queue.
 */
export async function insertExportWithRuns(q: Queryable, e: NewExport): Promise<ExportRecord | undefined> {
  const created = await insertExport(q, e);
  if (!created || created.endTime === null) return created;
  await insertExportRuns(
    q,
    dayPartitions(created.startTime, created.endTime).map((p) => ({
      id: uuidv7(),
      workspaceId: created.workspaceId,
      bulkExportId: created.id,
      startTime: p.start,
      endTime: p.end,
    })),
  );
  return created;
}
