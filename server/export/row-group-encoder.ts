import type { ColumnChunk, RowGroup, Statistics } from "hyparquet";
import { ByteWriter } from "hyparquet-writer";
import { writePageHeader } from "hyparquet-writer/src/datapage.js";
import { writeRleBitPackedHybrid } from "hyparquet-writer/src/encoding.js";
import { type ExportableRunField, type ExportRow, FIRST_FIELD } from "../store/run-export-store.js";
import { type ColumnKind, FIELD_KINDS } from "./parquet-schema.js";
import type { Compressor } from "./zstd-compressor.js";

/**
 * Uncompressed value bytes after which a page is closed (at the next row): 1 MiB, the page size
 * Parquet writers default to, so a reader decompresses a page at a time.
 */
const PAGE_BYTES = 1 << 20;
/** Starting size of the scratch buffer pages are encoded into; it grows to the largest page. */
const INITIAL_SCRATCH_BYTES = 2 * PAGE_BYTES;
/** UTF-8 takes at most 3 bytes per UTF-16 code unit: the room a string may need. */
const MAX_UTF8_PER_UNIT = 3;
/** The byte length in front of each BYTE_ARRAY value in PLAIN encoding. */
const LENGTH_PREFIX_BYTES = 4;

/** The highest definition and repetition levels of a column of each kind (see parquet-schema.ts). */
const LEVELS: Readonly<Record<ColumnKind, { def: number; rep: number }>> = {
  string: { def: 1, rep: 0 },
  json: { def: 1, rep: 0 },
  "string-list": { def: 3, rep: 1 },
  timestamp: { def: 1, rep: 0 },
  int64: { def: 1, rep: 0 },
  boolean: { def: 1, rep: 0 },
  double: { def: 1, rep: 0 },
};

/** The physical type of each kind's leaf column. */
const PHYSICAL: Readonly<Record<ColumnKind, "BYTE_ARRAY" | "INT64" | "BOOLEAN" | "DOUBLE">> = {
  string: "BYTE_ARRAY",
  json: "BYTE_ARRAY",
  "string-list": "BYTE_ARRAY",
  timestamp: "INT64",
  int64: "INT64",
  boolean: "BOOLEAN",
  double: "DOUBLE",
};

/** Decimal digits that always fit a number exactly (2^53 has 16). */
const SAFE_DIGITS = 15;
/** `-` and `0` in ASCII, for parsing decimal text. */
const MINUS = 0x2d;
const ZERO = 0x30;
/** 2^32: splits an integer into the two halves of its little-endian int64. */
const TWO_POW_32 = 2 ** 32;
/** The first byte of Postgres's text output of `true`. */
const TRUE_TEXT = 0x74;

/**
 * Encodes row groups of export rows straight into Parquet column chunks: each value is copied
 * once, from the bytes Postgres sent into a reused scratch buffer (text and JSON are never decoded
 * into strings), as a PLAIN DATA_PAGE_V2 page compressed with ZSTD. The schema is fixed and known, so none of the
 * general writer's per-value work applies: no dictionary attempt (ZSTD removes the repetition of
 * the few low-cardinality columns), no type conversion, min/max statistics only for numbers and
 * timestamps (byte-array bounds would cost a comparison per value, and no reader prunes on a
 * prefix of a JSON text or a random id). Thrift headers and the footer come from hyparquet-writer.
 */
export class RowGroupEncoder {
  private scratch = Buffer.allocUnsafe(INITIAL_SCRATCH_BYTES);
  private used = 0;
  private readonly defLevels: number[] = [];
  private readonly repLevels: number[] = [];
  private readonly levelWriter = new ByteWriter(64 * 1024);

  constructor(
    private readonly fields: readonly ExportableRunField[],
    private readonly zstd: Compressor,
  ) {}

  /**
   * Appends one row group of `rows` to `out` and describes it for the footer. It yields to the
   * event loop between columns, so the rows Postgres sends for the next page are taken off the
   * socket while this group is encoded (otherwise the socket buffer fills and Postgres waits).
   */
  async encode(out: ByteWriter, rows: readonly ExportRow[]): Promise<RowGroup> {
    const start = out.offset;
    const columns: ColumnChunk[] = [];
    let uncompressed = 0n;
    for (let index = 0; index < this.fields.length; index++) {
      const chunk = this.encodeColumn(
        out,
        rows,
        this.fields[index] as ExportableRunField,
        FIRST_FIELD + index,
      );
      uncompressed += chunk.meta_data?.total_uncompressed_size ?? 0n;
      columns.push(chunk);
      await new Promise(setImmediate);
    }
    return {
      columns,
      total_byte_size: uncompressed,
      num_rows: BigInt(rows.length),
      file_offset: BigInt(start),
      total_compressed_size: BigInt(out.offset - start),
    };
  }

  private encodeColumn(
    out: ByteWriter,
    rows: readonly ExportRow[],
    field: ExportableRunField,
    position: number,
  ): ColumnChunk {
    const kind = FIELD_KINDS[field];
    const chunkStart = out.offset;
    const stats = new ColumnStats(kind);
    let uncompressed = 0;
    let pages = 0;
    let values = 0;
    let pageStart = 0;
    this.resetPage();
    for (let i = 0; i < rows.length; i++) {
      const value = (rows[i] as ExportRow)[position] ?? null;
      values += this.encodeValue(kind, value, stats);
      if (this.used >= PAGE_BYTES || i === rows.length - 1) {
        uncompressed += this.writePage(out, kind, i + 1 - pageStart);
        pages++;
        pageStart = i + 1;
        this.resetPage();
      }
    }
    return {
      file_offset: BigInt(chunkStart),
      meta_data: {
        type: PHYSICAL[kind],
        encodings: kind === "boolean" ? ["RLE"] : ["PLAIN", "RLE"],
        path_in_schema: kind === "string-list" ? [field, "list", "element"] : [field],
        codec: "ZSTD",
        num_values: BigInt(values),
        total_uncompressed_size: BigInt(uncompressed),
        total_compressed_size: BigInt(out.offset - chunkStart),
        data_page_offset: BigInt(chunkStart),
        statistics: stats.result(),
        encoding_stats: [
          { page_type: "DATA_PAGE_V2", encoding: kind === "boolean" ? "RLE" : "PLAIN", count: pages },
        ],
      },
    };
  }

  private resetPage(): void {
    this.used = 0;
    this.defLevels.length = 0;
    this.repLevels.length = 0;
    this.booleans.length = 0;
  }

  /** Booleans of the page being encoded: bit-packed when the page is written. */
  private readonly booleans: number[] = [];

  /** Encodes one row's value of a column; returns how many leaf values (levels) it added. */
  private encodeValue(kind: ColumnKind, value: Buffer | null, stats: ColumnStats): number {
    if (kind === "string-list") {
      const list = value === null ? null : (JSON.parse(value.toString("utf8")) as readonly (string | null)[]);
      if (!list || list.length === 0) {
        this.defLevels.push(list ? 1 : 0);
        this.repLevels.push(0);
        if (!list) stats.nulls++;
        return 1;
      }
      for (let j = 0; j < list.length; j++) {
        const element = list[j];
        this.repLevels.push(j === 0 ? 0 : 1);
        if (element === null || element === undefined) {
          this.defLevels.push(2);
          stats.nulls++;
        } else {
          this.defLevels.push(3);
          this.writeText(element);
        }
      }
      return list.length;
    }
    this.defLevels.push(value === null ? 0 : 1);
    if (value === null) {
      stats.nulls++;
      return 1;
    }
    switch (kind) {
      case "string":
      case "json":
        this.ensure(LENGTH_PREFIX_BYTES + value.length);
        this.scratch.writeUInt32LE(value.length, this.used);
        this.scratch.set(value, this.used + LENGTH_PREFIX_BYTES);
        this.used += LENGTH_PREFIX_BYTES + value.length;
        break;
      case "timestamp":
      case "int64":
        this.writeInt64(value, stats);
        break;
      case "double": {
        const n = Number(value.toString("latin1"));
        if (!Number.isNaN(n)) stats.see(n);
        this.ensure(8);
        this.scratch.writeDoubleLE(n, this.used);
        this.used += 8;
        break;
      }
      case "boolean":
        this.booleans.push(value[0] === TRUE_TEXT ? 1 : 0);
        break;
    }
    return 1;
  }

  /**
   * Writes a decimal integer from its text. Up to {@link SAFE_DIGITS} digits are parsed as a
   * number (no BigInt and no string per value); longer ones, which a number may not hold exactly,
   * through BigInt.
   */
  private writeInt64(text: Buffer, stats: ColumnStats): void {
    this.ensure(8);
    const negative = text[0] === MINUS;
    const digits = text.length - (negative ? 1 : 0);
    if (digits > SAFE_DIGITS) {
      const n = BigInt(text.toString("latin1"));
      stats.see(n);
      this.scratch.writeBigInt64LE(n, this.used);
    } else {
      let n = 0;
      for (let i = negative ? 1 : 0; i < text.length; i++) n = n * 10 + ((text[i] as number) - ZERO);
      if (negative) n = -n;
      stats.see(n);
      const high = Math.floor(n / TWO_POW_32);
      this.scratch.writeUInt32LE(n - high * TWO_POW_32, this.used);
      this.scratch.writeInt32LE(high, this.used + 4);
    }
    this.used += 8;
  }

  private writeText(text: string): void {
    this.ensure(LENGTH_PREFIX_BYTES + text.length * MAX_UTF8_PER_UNIT);
    const length = this.scratch.write(text, this.used + LENGTH_PREFIX_BYTES, "utf8");
    this.scratch.writeUInt32LE(length, this.used);
    this.used += LENGTH_PREFIX_BYTES + length;
  }

  private ensure(bytes: number): void {
    if (this.used + bytes <= this.scratch.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.scratch.length * 2, this.used + bytes));
    this.scratch.copy(grown, 0, 0, this.used);
    this.scratch = grown;
  }

  /** Writes the page encoded so far (`rowCount` rows); returns its uncompressed size with header. */
  private writePage(out: ByteWriter, kind: ColumnKind, rowCount: number): number {
    const { def, rep } = LEVELS[kind];
    if (kind === "boolean") {
      // PLAIN booleans are the RLE encoding's bit-packed runs (RLE is what readers expect here).
      const body = new ByteWriter(this.booleans.length / 8 + 16);
      body.appendUint32(0);
      const length = writeRleBitPackedHybrid(body, this.booleans, 1);
      body.view.setUint32(0, length, true);
      this.ensure(body.offset);
      this.scratch.set(body.getBytes(), this.used);
      this.used += body.offset;
    }
    const levels = this.levelWriter;
    levels.index = 0;
    levels.offset = 0;
    const repBytes = rep > 0 ? writeRleBitPackedHybrid(levels, this.repLevels, bitWidth(rep)) : 0;
    const defBytes = writeRleBitPackedHybrid(levels, this.defLevels, bitWidth(def));
    const nulls = countBelow(this.defLevels, def);
    const data = this.scratch.subarray(0, this.used);
    const compressed = this.zstd(data);
    const headerStart = out.offset;
    writePageHeader(out, {
      type: "DATA_PAGE_V2",
      uncompressed_page_size: levels.offset + data.length,
      compressed_page_size: levels.offset + compressed.length,
      data_page_header_v2: {
        num_values: this.defLevels.length,
        num_nulls: nulls,
        num_rows: rowCount,
        encoding: kind === "boolean" ? "RLE" : "PLAIN",
        definition_levels_byte_length: defBytes,
        repetition_levels_byte_length: repBytes,
        is_compressed: true,
      },
    });
    const headerBytes = out.offset - headerStart;
    out.appendBytes(levels.getBytes());
    out.appendBytes(compressed);
    return headerBytes + levels.offset + data.length;
  }
}

/** Bits needed for levels up to `max`. */
function bitWidth(max: number): number {
  return Math.ceil(Math.log2(max + 1));
}

/** How many levels are below `max` (null or empty at some depth). */
function countBelow(levels: readonly number[], max: number): number {
  let count = 0;
  for (const level of levels) if (level < max) count++;
  return count;
}

/** A column chunk's statistics: null count always, min and max for numbers and timestamps. */
class ColumnStats {
  nulls = 0;
  private min: bigint | number | undefined;
  private max: bigint | number | undefined;

  constructor(private readonly kind: ColumnKind) {}

  see(value: bigint | number): void {
    if (this.min === undefined || value < this.min) this.min = value;
    if (this.max === undefined || value > this.max) this.max = value;
  }

  result(): Statistics {
    const bounded = this.kind === "timestamp" || this.kind === "int64" || this.kind === "double";
    // Parquet's rule for floating-point bounds: a zero minimum is -0 and a zero maximum +0.
    if (this.kind === "double" && this.min === 0) this.min = -0;
    if (this.kind === "double" && this.max === 0) this.max = 0;
    return {
      null_count: BigInt(this.nulls),
      ...(bounded && this.min !== undefined ? { min_value: this.min, max_value: this.max } : {}),
    };
  }
}
