import type { Queryable } from "../store/db.js";
import type { ExportedFile, RunCursor } from "../store/export/bulk-export-run-store.js";
import {
  type ExportableRunField,
  type ExportRow,
  type ExportRowLayout,
  exportRowLayout,
  readExportRows,
} from "../store/export/run-export-store.js";
import type { RunCondition } from "../tracing/filter/index.js";
import { dataFileKey, dataFilePrefix, manifestKey, partitionFolder } from "./export-layout.js";
import { checkWrittenObject, type ExpectedObject, expectedOf } from "./object-check.js";
import { abortUnfinishedUploads, type ObjectUpload, startObjectUpload } from "./object-upload.js";
import { createParquetFileWriter, type ParquetFileWriter } from "./parquet-file-writer.js";
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
 * as Parquet files of bounded size with deterministic names (`runs-<run>-<seq>.parquet`), reads
 * each back to check it (where allowed) and checkpoints after each file is in the bucket; then
 * writes the manifest. A retry with the last
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
  const layout = exportRowLayout(work.fields);
  const client = await createS3Client(work.target);
  // The seed's file size check: every file read back and compared with what was written (size and
  // SHA-256, as the manifest lists them), unless the credentials may not read (s3:GetObject is
  // optional): the first refused read ends the checks of this attempt.
  let readable = true;
  const check = async (expected: ExpectedObject) => {
    if (readable) readable = await checkWrittenObject(client, location.bucketName, expected, signal);
  };
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
    let sequence = files.length;
    // The file before this one: its last bytes, its completion in the bucket and its checkpoint,
    // which go on while this one's rows are read, so Postgres and Node do not wait for S3.
    let previous: Promise<void> | undefined;
    for (;;) {
      signal.throwIfAborted();
      // No request is made before the first bytes, so a file that finds no rows costs nothing.
      const key = dataFileKey(folder, work.runId, sequence);
      const upload = await startObjectUpload(client, location.bucketName, key, PARQUET_TYPE);
      const stop = () => void upload.abort(signal.reason);
      signal.addEventListener("abort", stop, { once: true });
      let written: WrittenRows | undefined;
      try {
        written = await writeRows(upload, cursor, {
          fields: work.fields,
          layout,
          zstd,
          limits,
          signal,
          read,
        });
        // A file completes only after the one before it is checkpointed, so a retry rewrites at
        // most the one complete file its checkpoint does not list, under the same name.
        await previous;
        if (!written) await upload.abort(new Error("no rows left for another file"));
      } catch (error) {
        signal.removeEventListener("abort", stop);
        await upload.abort(error);
        // The file before must not checkpoint after this attempt has been recorded as failed.
        await previous?.catch(() => {});
        throw signal.aborted ? signal.reason : error;
      }
      if (!written) {
        signal.removeEventListener("abort", stop);
        break;
      }
      const { writer, exhausted } = written;
      const after = cursorOf(written.last, layout);
      previous = (async () => {
        try {
          const file: ExportedFile = { key, ...(await writer.finish()) };
          await upload.done;
          await check(file);
          await hooks.checkpoint(file, after);
          files.push(file);
        } catch (error) {
          await upload.abort(error);
          throw signal.aborted ? signal.reason : error;
        } finally {
          signal.removeEventListener("abort", stop);
        }
      })();
      // Awaited with the next file or after the last; a failure must not go unobserved meanwhile.
      previous.catch(() => {});
      cursor = after;
      sequence++;
      if (exhausted) break;
    }
    await previous;
    signal.throwIfAborted();
    const key = manifestKey(folder, work.runId);
    const text = JSON.stringify(manifest(work, files), null, 2);
    await putObject(client, location.bucketName, key, text, "application/json");
    await check(expectedOf(key, text));
    return key;
  } finally {
    client.destroy();
  }
}

/** A file's rows written: its writer (not finished yet), its last row, and whether the partition has no rows after it. */
interface WrittenRows {
  writer: ParquetFileWriter;
  last: ExportRow;
  exhausted: boolean;
}

/**
 * Writes the rows of one file, those after `after`, until it is full or the partition has no more
 * rows; undefined when there were none. Rows go into the Parquet writer as Postgres sends them, a
 * page (one query) at a time; between pages the writer waits for the upload to catch up. The caller
 * finishes the file.
 */
async function writeRows(
  upload: ObjectUpload,
  after: RunCursor | null,
  opts: {
    fields: readonly ExportableRunField[];
    layout: ExportRowLayout;
    zstd: Compressor;
    limits: PartitionLimits;
    signal: AbortSignal;
    read: (after: RunCursor | null, limit: number, onRow: (row: ExportRow) => void) => Promise<number>;
  },
): Promise<WrittenRows | undefined> {
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
    const count = await opts.read(last ? cursorOf(last, opts.layout) : after, limit, append);
    await writer.drained();
    if (count < limit) {
      exhausted = true;
      break;
    }
  }
  return last ? { writer, last, exhausted } : undefined;
}

/** The cursor after `row` (laid out as `layout` says): its start time as ISO text with microseconds, and its id. */
export function cursorOf(row: ExportRow, layout: ExportRowLayout): RunCursor {
  const micros = BigInt(String(row[layout.cursorStartUs]));
  const iso = new Date(Number(micros / 1000n)).toISOString();
  const sub = String(((micros % 1000n) + 1000n) % 1000n).padStart(3, "0");
  return { startTime: `${iso.slice(0, 23)}${sub}Z`, id: String(row[layout.cursorId]) };
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
