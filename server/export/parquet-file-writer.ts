import { createHash } from "node:crypto";
import { once } from "node:events";
import type { Writable } from "node:stream";
import { ByteWriter, ParquetWriter } from "hyparquet-writer";
import type { ExportableRunField, ExportRow } from "../store/run-export-store.js";
import { columnValues, FIELD_KINDS, parquetSchema } from "./parquet-schema.js";
import type { Compressor } from "./zstd-compressor.js";

/** What a finished file holds. */
export interface WrittenFile {
  rows: number;
  bytes: number;
  /** Hex SHA-256 of every byte written. */
  sha256: string;
}

/** Writes one Parquet file to a stream, a row group at a time. */
export interface ParquetFileWriter {
  /** Adds rows; writes a row group (and waits for the stream to drain) whenever one is full. */
  write(rows: readonly ExportRow[]): Promise<void>;
  /** Bytes handed to the stream so far (compressed): what a file-size bound looks at. */
  bytesWritten(): number;
  /** Rows added so far. */
  rowCount(): number;
  /** Writes the last row group and the footer, ends the stream and says what the file holds. */
  finish(): Promise<WrittenFile>;
}

/** Options of {@link createParquetFileWriter}. */
export interface ParquetFileWriterOptions {
  /** Where the bytes go (an S3 upload, or /dev/null in the benchmark); ended by `finish`. */
  out: Writable;
  /** The columns, in order. */
  fields: readonly ExportableRunField[];
  /** The ZSTD compressor. */
  zstd: Compressor;
  /** Rows per row group. */
  rowGroupRows: number;
}

/** Starting size of the writer's buffer; it grows to the largest row group and is reused. */
const INITIAL_BUFFER_BYTES = 1 << 20;

/**
 * A hyparquet-writer byte sink that hands each row group's bytes to a Node stream and hashes them.
 * ParquetWriter awaits the promise `flush` returns before encoding the next row group, so a slow
 * destination holds the writer back (backpressure) and at most one row group sits in memory.
 */
class StreamSink extends ByteWriter {
  readonly hash = createHash("sha256");
  constructor(private readonly out: Writable) {
    super(INITIAL_BUFFER_BYTES);
  }

  flush(): Promise<void> | undefined {
    if (this.index === 0) return undefined;
    // A copy: the writer reuses its buffer for the next row group while the stream may still hold this one.
    const chunk = Buffer.from(this.buffer.slice(0, this.index));
    this.index = 0;
    this.hash.update(chunk);
    if (this.out.write(chunk)) return undefined;
    return once(this.out, "drain").then(() => undefined);
  }

  override finish(): void {
    // The footer: flush() is awaited by finish() below, not here, since ParquetWriter ignores this result.
  }
}

/**
 * JSON documents are long and all different: plain encoding (a dictionary attempt over them only
 * costs time) and no min/max statistics (no reader prunes on a prefix of a JSON text).
 */
function columnOptions(field: ExportableRunField): { encoding?: "PLAIN"; statistics?: boolean } {
  return FIELD_KINDS[field] === "json" ? { encoding: "PLAIN", statistics: false } : {};
}

/** Starts a Parquet file (ZSTD, v2_beta types) on `options.out`. */
export function createParquetFileWriter(options: ParquetFileWriterOptions): ParquetFileWriter {
  const { out, fields, rowGroupRows } = options;
  const sink = new StreamSink(out);
  const writer = new ParquetWriter({
    writer: sink,
    schema: parquetSchema(fields),
    codec: "ZSTD",
    compressors: { ZSTD: options.zstd },
    createdBy: "agentplane bulk export (hyparquet-writer)",
  });
  let pending: ExportRow[] = [];
  let rows = 0;

  async function writeGroup(group: readonly ExportRow[]): Promise<void> {
    if (group.length === 0) return;
    await writer.write({
      columnData: fields.map((name) => ({ name, data: columnValues(group, name), ...columnOptions(name) })),
      rowGroupSize: group.length,
    });
  }

  return {
    async write(batch) {
      rows += batch.length;
      for (const row of batch) {
        pending.push(row);
        if (pending.length >= rowGroupRows) {
          const group = pending;
          pending = [];
          await writeGroup(group);
        }
      }
    },
    bytesWritten: () => sink.offset - sink.index,
    rowCount: () => rows,
    async finish() {
      await writeGroup(pending);
      pending = [];
      await writer.finish();
      await sink.flush();
      const ended = once(out, "finish");
      out.end();
      await ended;
      return { rows, bytes: sink.offset, sha256: sink.hash.digest("hex") };
    },
  };
}
