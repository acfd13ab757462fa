import { createHash } from "node:crypto";
import { once } from "node:events";
import type { Writable } from "node:stream";
import type { RowGroup } from "hyparquet";
import { ByteWriter } from "hyparquet-writer";
import { writeMetadata } from "hyparquet-writer/src/metadata.js";
import type { ExportableRunField, ExportRow } from "../store/export/run-export-store.js";
import { parquetSchema } from "./parquet-schema.js";
import { RowGroupEncoder } from "./row-group-encoder.js";
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
  /**
   * Adds a row. When the row group is full it is written to the stream at once; a stream that
   * asks to wait is waited for in {@link drained}. Synchronous, so rows can be added as Postgres
   * sends them.
   */
  append(row: ExportRow): void;
  /** Resolves once the stream has taken what was written (backpressure); rejects if it failed. */
  drained(): Promise<void>;
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

/** Starting size of the output buffer; it grows to the largest compressed row group and is reused. */
const INITIAL_BUFFER_BYTES = 1 << 20;
/**
 * Copy buffers a file keeps for reuse: the stream holds up to its high-water mark (a part, 8 MiB,
 * for an upload) of row groups, so a few cover it; more are allocated when needed and let go.
 */
const SPARE_COPIES = 4;
/** The magic bytes that open and close a Parquet file ("PAR1", little-endian). */
const PARQUET_MAGIC = 0x31524150;
/** What the footer names as the file's writer. */
const CREATED_BY = "agentplane bulk export";

/**
 * The file's bytes, handed to a Node stream a row group at a time and hashed on the way. A copy
 * goes to the stream because the buffer is reused for the next row group while the stream may
 * still hold this one; the copies' buffers are reused in turn once the stream has taken them, so
 * a file allocates a few of them, not one a row group.
 */
class StreamSink extends ByteWriter {
  readonly hash = createHash("sha256");
  /** Set when the stream asked the writer to wait for `drain`. */
  private full = false;
  /** Copy buffers the stream has taken (written out or copied), ready for the next row group. */
  private readonly spare: Buffer[] = [];
  constructor(private readonly out: Writable) {
    super(INITIAL_BUFFER_BYTES);
  }

  /** Hands what is buffered to the stream. */
  push(): void {
    if (this.index === 0) return;
    const size = this.index;
    let copy = this.spare.pop();
    if (copy === undefined || copy.length < size)
      copy = Buffer.allocUnsafeSlow(Math.max(size, copy?.length ?? 0));
    copy.set(new Uint8Array(this.buffer, 0, size));
    this.index = 0;
    const chunk = copy.subarray(0, size);
    this.hash.update(chunk);
    const taken = copy;
    const written = this.out.write(chunk, (error) => {
      if (!error && this.spare.length < SPARE_COPIES) this.spare.push(taken);
    });
    if (!written) this.full = true;
  }

  /** Waits until the stream drains, if it asked to; fails with the stream's error. */
  async drained(): Promise<void> {
    if (this.out.errored) throw this.out.errored;
    if (!this.full) return;
    this.full = false;
    if (this.out.writableNeedDrain) await once(this.out, "drain");
  }
}

/** Starts a Parquet file (ZSTD, v2_beta types) on `options.out`. */
export function createParquetFileWriter(options: ParquetFileWriterOptions): ParquetFileWriter {
  const { out, fields, rowGroupRows } = options;
  const sink = new StreamSink(out);
  const encoder = new RowGroupEncoder(fields, options.zstd);
  const rowGroups: RowGroup[] = [];
  let rows = 0;
  sink.appendUint32(PARQUET_MAGIC);

  function writeGroup(): void {
    if (encoder.pendingRows() === 0) return;
    rowGroups.push(encoder.writeTo(sink));
    sink.push();
  }

  return {
    append(row) {
      encoder.add(row);
      rows++;
      if (encoder.pendingRows() >= rowGroupRows) writeGroup();
    },
    drained: () => sink.drained(),
    bytesWritten: () => sink.offset - sink.index,
    rowCount: () => rows,
    async finish() {
      writeGroup();
      writeMetadata(sink, {
        version: 2,
        created_by: CREATED_BY,
        schema: parquetSchema(fields),
        num_rows: BigInt(rows),
        row_groups: rowGroups,
        metadata_length: 0,
      });
      sink.appendUint32(PARQUET_MAGIC);
      sink.push();
      await sink.drained();
      const ended = once(out, "finish");
      out.end();
      await ended;
      return { rows, bytes: sink.offset, sha256: sink.hash.digest("hex") };
    },
  };
}
