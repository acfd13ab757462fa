import type { ExportedFile, RunCursor } from "../store/bulk-export-run-store.js";
import type { Queryable } from "../store/db.js";
import {
  CURSOR_ID,
  CURSOR_START_US,
  type ExportableRunField,
  type ExportRow,
  readExportRows,
} from "../store/run-export-store.js";
import type { RunCondition } from "../tracing/filter/index.js";
import { dataFileKey, dataFilePrefix, manifestKey, partitionFolder } from "./export-layout.js";
import { abortUnfinishedUploads, type ObjectUpload, startObjectUpload } from "./object-upload.js";
import { createParquetFileWriter, type WrittenFile } from "./parquet-file-writer.js";
import { describeColumns } from "./parquet-schema.js";
import { createS3Client, putObject, type S3Target } from "./s3-destination.js";
import type { Compressor } from "./zstd-compressor.js";

/** One partition of an export, and where its last attempt stopped. */
export interface PartitionWork {
  workspaceId: string;
  exportId: string;
  runId: string;
  sessionId: string;
  /** The partition's window: runs that started in [start, end). */
  start: Date;
  end: Date;
  condition: RunCondition | undefined;
  fields: readonly ExportableRunField[];
  formatVersion: string;
  target: S3Target;
  /** The last checkpoint: continue after this row, with these files already in the bucket. */
  cursor: RunCursor | null;
  files: readonly ExportedFile[];
  /** Whether an earlier attempt of this run started (and may have died mid-file). */
  retried: boolean;
}

/** How files are cut and rows read. */
export interface PartitionLimits {
  /** Rows per file at most. */
  fileMaxRows: number;
  /** Compressed bytes after which a file is closed (at the next page boundary). */
  fileMaxBytes: number;
}

/** What the exporter calls back while it works. */
export interface PartitionHooks {
  /** Records a file that is complete in the bucket and the position after its last row. */
  checkpoint(file: ExportedFile, cursor: RunCursor): Promise<void>;
  /** Stops the work: the file being written is abandoned and its multipart upload aborted. */
  signal: AbortSignal;
}

/** Rows per Parquet row group: readers skip by row group; the writer holds one in memory. */
export const ROW_GROUP_ROWS = 10_000;
/**
 * Rows read from Postgres per query: rows stream into the writer as they arrive, so a page costs
 * no memory; it only bounds a query's duration, and the round trip between pages is small beside
 * this many rows.
 */
export const PAGE_ROWS = 10_000;
/** The media type of Parquet files (IANA registration of application/vnd.apache.parquet). */
const PARQUET_TYPE = "application/vnd.apache.parquet";

/**
 * Exports one partition: reads its runs in keyset order from the last checkpoint on, writes them
 * as Parquet files of bounded size with deterministic names (`runs-<run>-<seq>.parquet`), and
 * checkpoints after each file is in the bucket; then writes the manifest. A retry with the last
 * checkpoint rewrites at most the one file that was in flight, under the same name, so every
 * source row ends in the bucket exactly once. Returns the manifest's key.
 */
export async function exportPartition(
  sql: Queryable,
  work: PartitionWork,
  limits: PartitionLimits,
  zstd: Compressor,
  hooks: PartitionHooks,
): Promise<string> {
  const { signal } = hooks;
  const location = work.target.location;
  const folder = partitionFolder(location, {
    exportId: work.exportId,
    tenantId: work.workspaceId,
    sessionId: work.sessionId,
    day: work.start,
  });
  const files = [...work.files];
  const client = await createS3Client(work.target);
  const read = (after: RunCursor | null, limit: number, onRow: (row: ExportRow) => void) =>
    readExportRows(
      sql,
      {
        workspaceId: work.workspaceId,
        sessionId: work.sessionId,
        from: work.start,
        to: work.end,
        condition: work.condition,
        after,
        limit,
        fields: work.fields,
      },
      onRow,
    );
  try {
    // An earlier attempt of this run that died mid-file left its multipart upload behind.
    if (work.retried)
      await abortUnfinishedUploads(client, location.bucketName, dataFilePrefix(folder, work.runId));
    let cursor = work.cursor;
    for (;;) {
      signal.throwIfAborted();
      // No request is made before the first bytes, so a file that finds no rows costs nothing.
      const key = dataFileKey(folder, work.runId, files.length);
      const upload = await startObjectUpload(client, location.bucketName, key, PARQUET_TYPE);
      const stop = () => void upload.abort(signal.reason);
      signal.addEventListener("abort", stop, { once: true });
      let written: WrittenPart | undefined;
      try {
        written = await writeFile(upload, cursor, { fields: work.fields, zstd, limits, signal, read });
        if (!written) await upload.abort(new Error("no rows left for another file"));
      } catch (error) {
        await upload.abort(error);
        throw signal.aborted ? signal.reason : error;
      } finally {
        signal.removeEventListener("abort", stop);
      }
      if (!written) break;
      const file: ExportedFile = { key, ...written.file };
      cursor = cursorOf(written.last);
      await hooks.checkpoint(file, cursor);
      files.push(file);
      if (written.exhausted) break;
    }
    signal.throwIfAborted();
    const key = manifestKey(folder, work.runId);
    await putObject(
      client,
      location.bucketName,
      key,
      JSON.stringify(manifest(work, files), null, 2),
      "application/json",
    );
    return key;
  } finally {
    client.destroy();
  }
}

/** A file written: what it holds, its last row, and whether the partition has no rows after it. */
interface WrittenPart {
  file: WrittenFile;
  last: ExportRow;
  exhausted: boolean;
}

/**
 * Writes one file of the rows after `after`, until it is full or the partition has no more rows;
 * undefined when there were none. Rows go into the Parquet writer as Postgres sends them, a page
 * (one query) at a time; between pages the writer waits for the upload to catch up.
 */
async function writeFile(
  upload: ObjectUpload,
  after: RunCursor | null,
  opts: {
    fields: readonly ExportableRunField[];
    zstd: Compressor;
    limits: PartitionLimits;
    signal: AbortSignal;
    read: (after: RunCursor | null, limit: number, onRow: (row: ExportRow) => void) => Promise<number>;
  },
): Promise<WrittenPart | undefined> {
  const { limits } = opts;
  const writer = createParquetFileWriter({
    out: upload.body,
    fields: opts.fields,
    zstd: opts.zstd,
    rowGroupRows: Math.min(ROW_GROUP_ROWS, limits.fileMaxRows),
  });
  let last: ExportRow | undefined;
  const append = (row: ExportRow) => {
    writer.append(row);
    last = row;
  };
  let exhausted = false;
  while (writer.rowCount() < limits.fileMaxRows && writer.bytesWritten() < limits.fileMaxBytes) {
    opts.signal.throwIfAborted();
    const limit = Math.min(PAGE_ROWS, limits.fileMaxRows - writer.rowCount());
    const count = await opts.read(last ? cursorOf(last) : after, limit, append);
    await writer.drained();
    if (count < limit) {
      exhausted = true;
      break;
    }
  }
  if (!last) return undefined;
  const file = await writer.finish();
  await upload.done;
  return { file, last, exhausted };
}

/** The cursor after `row`: its start time as ISO text with microseconds, and its id. */
export function cursorOf(row: ExportRow): RunCursor {
  const micros = BigInt(String(row[CURSOR_START_US]));
  const iso = new Date(Number(micros / 1000n)).toISOString();
  const sub = String(((micros % 1000n) + 1000n) % 1000n).padStart(3, "0");
  return { startTime: `${iso.slice(0, 23)}${sub}Z`, id: String(row[CURSOR_ID]) };
}

/** The manifest of a finished partition: enough to check every file without opening it. */
function manifest(work: PartitionWork, files: readonly ExportedFile[]) {
  return {
    manifest_version: 1,
    export_id: work.exportId,
    run_id: work.runId,
    tenant_id: work.workspaceId,
    session_id: work.sessionId,
    partition: { start_time: work.start.toISOString(), end_time: work.end.toISOString() },
    format: "parquet",
    format_version: work.formatVersion,
    compression: "zstd",
    row_count: files.reduce((sum, f) => sum + f.rows, 0),
    byte_count: files.reduce((sum, f) => sum + f.bytes, 0),
    files: files.map((f) => ({ key: f.key, rows: f.rows, bytes: f.bytes, sha256: f.sha256 })),
    schema: describeColumns(work.fields),
  };
}
