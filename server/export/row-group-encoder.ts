import type { ColumnChunk, RowGroup, Statistics } from "hyparquet";
import { ByteWriter } from "hyparquet-writer";
import { writePageHeader } from "hyparquet-writer/src/datapage.js";
import { writeRleBitPackedHybrid } from "hyparquet-writer/src/encoding.js";
import type { ExportableRunField, ExportRow } from "../store/export/run-export-store.js";
import { type ColumnKind, FIELD_KINDS } from "./parquet-schema.js";
import type { Compressor } from "./zstd-compressor.js";

/**
 * Uncompressed value bytes after which a page is closed (at the next row): 1 MiB, the page size
 * Parquet writers default to, so a reader decompresses a page at a time.
 */
const PAGE_BYTES = 1 << 20;
/** Room for a data page header (Thrift, a few dozen bytes); the writer grows it if ever needed. */
const PAGE_HEADER_BYTES = 128;
/** Starting size of a column's page buffer; it grows to the column's largest page. */
const INITIAL_PAGE_BUFFER_BYTES = 64 * 1024;
/** The byte length in front of each BYTE_ARRAY value in PLAIN encoding. */
const LENGTH_PREFIX_BYTES = 4;
/**
 * Decimal digits of Number.MAX_SAFE_INTEGER (2^53 - 1): integers this long are parsed as numbers
 * and checked against it. Epoch microseconds of this century have 16 digits, so timestamps take
 * the number path.
 */
const SAFE_INTEGER_DIGITS = 16;
/** Significant decimal digits any integer of which a double holds exactly (below 2^53). */
const SAFE_SIGNIFICANT_DIGITS = 15;
/** `-` and `0` in ASCII, for parsing decimal text. */
const MINUS = 0x2d;
const ZERO = 0x30;
/** 2^32: splits an integer into the two halves of its little-endian int64. */
const TWO_POW_32 = 2 ** 32;
/** Bytes of Postgres's array text form. */
const QUOTE = 0x22;
const COMMA = 0x2c;
const BACKSLASH = 0x5c;
/** A null element of an array, unquoted. */
const NULL_TEXT = "NULL";
/** The first byte of Postgres's text output of `true`. */
const TRUE_TEXT = 0x74;

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

/**
 * Encodes export rows into Parquet row groups as they arrive, a row at a time: each value is
 * copied once, from the bytes Postgres sent into its column's page buffer (text and JSON are never
 * decoded into strings), and a column's page is compressed (ZSTD, PLAIN DATA_PAGE_V2) as soon as
 * it holds 1 MiB. Nothing of a row outlives the call that adds it, so rows die young and the
 * garbage collector has little to do; a row group in memory is its compressed pages plus one open
 * page per column. The schema is fixed, so none of a general writer's per-value work applies: no
 * dictionary attempt (ZSTD removes the repetition of the few low-cardinality columns), no type
 * conversion, min/max statistics only for numbers and timestamps (byte-array bounds would cost a
 * comparison per value, and no reader prunes on a prefix of a JSON text or a random id). Thrift
 * headers and the footer come from hyparquet-writer.
 */
export class RowGroupEncoder {
  private readonly columns: ColumnBuilder[];
  private rows = 0;

  constructor(fields: readonly ExportableRunField[], zstd: Compressor) {
    this.columns = fields.map((field, index) => new ColumnBuilder(field, index, zstd));
  }

  /** Rows added since the last row group was written. */
  pendingRows(): number {
    return this.rows;
  }

  /** Adds one row to the row group being built. */
  add(row: ExportRow): void {
    for (const column of this.columns) column.add(row);
    this.rows++;
  }

  /** Appends the row group built so far to `out`, describes it for the footer, and starts the next. */
  writeTo(out: ByteWriter): RowGroup {
    const start = out.offset;
    const chunks: ColumnChunk[] = [];
    let uncompressed = 0n;
    for (const column of this.columns) {
      const chunk = column.writeTo(out);
      uncompressed += chunk.meta_data?.total_uncompressed_size ?? 0n;
      chunks.push(chunk);
    }
    const group: RowGroup = {
      columns: chunks,
      total_byte_size: uncompressed,
      num_rows: BigInt(this.rows),
      file_offset: BigInt(start),
      total_compressed_size: BigInt(out.offset - start),
    };
    this.rows = 0;
    return group;
  }
}

/** One column of the row group being built: its finished pages and the page being filled. */
class ColumnBuilder {
  private readonly kind: ColumnKind;
  private readonly def: number;
  private readonly rep: number;
  /** The open page's PLAIN values. */
  private buffer = Buffer.allocUnsafe(INITIAL_PAGE_BUFFER_BYTES);
  private used = 0;
  private readonly defLevels: number[] = [];
  private readonly repLevels: number[] = [];
  /** The open page's booleans, bit-packed when it closes. */
  private readonly booleans: number[] = [];
  private pageRows = 0;
  /** Finished pages of this row group: each page's header, levels and compressed values, ready to write. */
  private pages: Uint8Array[] = [];
  private pageCount = 0;
  private uncompressed = 0;
  private values = 0;
  private stats: ColumnStats;

  constructor(
    private readonly field: ExportableRunField,
    private readonly position: number,
    private readonly zstd: Compressor,
  ) {
    this.kind = FIELD_KINDS[field];
    ({ def: this.def, rep: this.rep } = LEVELS[this.kind]);
    this.stats = new ColumnStats(this.kind);
  }

  add(row: ExportRow): void {
    this.values += this.encodeValue(row[this.position] ?? null);
    this.pageRows++;
    if (this.used >= PAGE_BYTES) this.closePage();
  }

  /** Writes the column chunk (its pages) to `out` and starts the next row group's chunk. */
  writeTo(out: ByteWriter): ColumnChunk {
    if (this.pageRows > 0) this.closePage();
    const start = out.offset;
    for (const page of this.pages) out.appendBytes(page);
    const encoding = this.kind === "boolean" ? "RLE" : "PLAIN";
    const chunk: ColumnChunk = {
      file_offset: BigInt(start),
      meta_data: {
        type: PHYSICAL[this.kind],
        encodings: this.kind === "boolean" ? ["RLE"] : ["PLAIN", "RLE"],
        path_in_schema: this.kind === "string-list" ? [this.field, "list", "element"] : [this.field],
        codec: "ZSTD",
        num_values: BigInt(this.values),
        total_uncompressed_size: BigInt(this.uncompressed),
        total_compressed_size: BigInt(out.offset - start),
        data_page_offset: BigInt(start),
        statistics: this.stats.result(),
        encoding_stats: [{ page_type: "DATA_PAGE_V2", encoding, count: this.pageCount }],
      },
    };
    this.pages = [];
    this.pageCount = 0;
    this.uncompressed = 0;
    this.values = 0;
    this.stats = new ColumnStats(this.kind);
    return chunk;
  }

  /** Encodes one row's value; returns how many leaf values (levels) it added. */
  private encodeValue(value: Buffer | null): number {
    if (this.kind === "string-list") return this.encodeList(value);
    this.defLevels.push(value === null ? 0 : 1);
    if (value === null) {
      this.stats.nulls++;
      return 1;
    }
    switch (this.kind) {
      case "string":
      case "json":
        this.ensure(LENGTH_PREFIX_BYTES + value.length);
        this.buffer.writeUInt32LE(value.length, this.used);
        this.buffer.set(value, this.used + LENGTH_PREFIX_BYTES);
        this.used += LENGTH_PREFIX_BYTES + value.length;
        break;
      case "timestamp":
      case "int64":
        this.writeInt64(value);
        break;
      case "double": {
        const n = parseDecimal(value);
        if (!Number.isNaN(n)) this.stats.see(n);
        this.ensure(8);
        this.buffer.writeDoubleLE(n, this.used);
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
   * A list arrives in Postgres's array text form (see run-export-store.ts): `{a,b}`, `{}`, with an
   * element in double quotes (backslash escaping `"` and `\\`) when it is empty or holds a delimiter,
   * brace, quote, backslash or space, or spells NULL, and a bare NULL for a null element. Elements
   * are copied from those bytes into the page, unescaped, without becoming strings.
   */
  private encodeList(value: Buffer | null): number {
    if (value === null) {
      this.defLevels.push(0);
      this.repLevels.push(0);
      this.stats.nulls++;
      return 1;
    }
    const end = value.length - 1; // the closing brace
    if (end <= 1) {
      this.defLevels.push(1);
      this.repLevels.push(0);
      return 1;
    }
    let count = 0;
    let at = 1; // after the opening brace
    while (at < end) {
      this.repLevels.push(count === 0 ? 0 : 1);
      count++;
      if (value[at] === QUOTE) {
        at = this.writeQuotedElement(value, at + 1);
      } else {
        let stop = value.indexOf(COMMA, at);
        if (stop === -1 || stop > end) stop = end;
        if (stop - at === NULL_TEXT.length && value.toString("latin1", at, stop) === NULL_TEXT) {
          this.defLevels.push(2);
          this.stats.nulls++;
        } else {
          this.defLevels.push(3);
          this.ensure(LENGTH_PREFIX_BYTES + stop - at);
          this.buffer.writeUInt32LE(stop - at, this.used);
          value.copy(this.buffer, this.used + LENGTH_PREFIX_BYTES, at, stop);
          this.used += LENGTH_PREFIX_BYTES + stop - at;
        }
        at = stop;
      }
      at++; // the comma, or the closing brace after the last element
    }
    return count;
  }

  /** Writes the quoted element starting after its opening quote; returns where its closing quote is, plus one. */
  private writeQuotedElement(value: Buffer, from: number): number {
    this.defLevels.push(3);
    this.ensure(LENGTH_PREFIX_BYTES + value.length);
    const start = this.used + LENGTH_PREFIX_BYTES;
    let out = start;
    let at = from;
    while (value[at] !== QUOTE) {
      if (value[at] === BACKSLASH) at++;
      this.buffer[out++] = value[at++] as number;
    }
    this.buffer.writeUInt32LE(out - start, this.used);
    this.used = out;
    return at + 1;
  }

  /**
   * Writes a decimal integer from its text. One of up to {@link SAFE_INTEGER_DIGITS} digits that a
   * number holds exactly is parsed as a number (no BigInt and no string per value); any other
   * through BigInt.
   */
  private writeInt64(text: Buffer): void {
    this.ensure(8);
    const negative = text[0] === MINUS;
    const digits = text.length - (negative ? 1 : 0);
    let n = 0;
    // Every step below 2^53 is exact, so a result up to Number.MAX_SAFE_INTEGER is the value itself.
    if (digits <= SAFE_INTEGER_DIGITS)
      for (let i = negative ? 1 : 0; i < text.length; i++) n = n * 10 + ((text[i] as number) - ZERO);
    if (digits > SAFE_INTEGER_DIGITS || n > Number.MAX_SAFE_INTEGER) {
      const big = BigInt(text.toString("latin1"));
      this.stats.see(big);
      this.buffer.writeBigInt64LE(big, this.used);
    } else {
      if (negative) n = -n;
      this.stats.see(n);
      const high = Math.floor(n / TWO_POW_32);
      this.buffer.writeUInt32LE(n - high * TWO_POW_32, this.used);
      this.buffer.writeInt32LE(high, this.used + 4);
    }
    this.used += 8;
  }

  private ensure(bytes: number): void {
    if (this.used + bytes <= this.buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.used + bytes));
    this.buffer.copy(grown, 0, 0, this.used);
    this.buffer = grown;
  }

  /** Compresses the open page and keeps it, with its header and levels, for the column chunk. */
  private closePage(): void {
    const encoding = this.kind === "boolean" ? "RLE" : "PLAIN";
    if (this.kind === "boolean") {
      // RLE booleans in a v2 page: a 4-byte length, then bit-packed runs of width 1.
      const body = new ByteWriter(this.booleans.length / 8 + 16);
      body.appendUint32(0);
      const length = writeRleBitPackedHybrid(body, this.booleans, 1);
      body.view.setUint32(0, length, true);
      this.ensure(body.offset);
      this.buffer.set(body.getBytes(), this.used);
      this.used += body.offset;
    }
    const header = new ByteWriter(PAGE_HEADER_BYTES);
    const levels = new ByteWriter(1024);
    const repBytes = this.rep > 0 ? writeRleBitPackedHybrid(levels, this.repLevels, bitWidth(this.rep)) : 0;
    const defBytes = writeRleBitPackedHybrid(levels, this.defLevels, bitWidth(this.def));
    const data = this.buffer.subarray(0, this.used);
    const compressed = this.zstd(data);
    writePageHeader(header, {
      type: "DATA_PAGE_V2",
      uncompressed_page_size: levels.offset + data.length,
      compressed_page_size: levels.offset + compressed.length,
      data_page_header_v2: {
        num_values: this.defLevels.length,
        num_nulls: countBelow(this.defLevels, this.def),
        num_rows: this.pageRows,
        encoding,
        definition_levels_byte_length: defBytes,
        repetition_levels_byte_length: repBytes,
        is_compressed: true,
      },
    });
    // Kept as they are, copied once into the file when the row group is written.
    this.pages.push(header.getBytes(), levels.getBytes(), compressed);
    this.pageCount++;
    this.uncompressed += header.offset + levels.offset + data.length;
    this.used = 0;
    this.pageRows = 0;
    this.defLevels.length = 0;
    this.repLevels.length = 0;
    this.booleans.length = 0;
  }
}

/** Powers of ten a double holds exactly (10^22 is the largest). */
const EXACT_POWERS_OF_TEN = Array.from({ length: 23 }, (_, k) => 10 ** k);
/** The `.` of a decimal text. */
const POINT = 0x2e;

/**
 * The double nearest to a decimal text (numeric's output: `-123.4500`, `NaN`, `Infinity`), as
 * `Number` gives it. A text of at most 15 significant digits and 22 decimals is its digits as an
 * integer, exact in a double, divided by an exact power of ten: IEEE division rounds that quotient
 * to the nearest double, the correct result (Clinger's fast path), with no string made. Any other
 * text goes through `Number`.
 */
export function parseDecimal(text: Buffer): number {
  const negative = text[0] === MINUS;
  let n = 0;
  let significant = 0;
  let decimals = -1;
  for (let i = negative ? 1 : 0; i < text.length; i++) {
    const c = text[i] as number;
    if (c === POINT && decimals === -1) {
      decimals = 0;
      continue;
    }
    const digit = c - ZERO;
    if (digit < 0 || digit > 9) return Number(text.toString("latin1"));
    if (decimals !== -1) decimals++;
    if (n !== 0 || digit !== 0) significant++;
    n = n * 10 + digit;
  }
  const scale = decimals === -1 ? 0 : decimals;
  if (
    significant > SAFE_SIGNIFICANT_DIGITS ||
    scale >= EXACT_POWERS_OF_TEN.length ||
    text.length === (negative ? 1 : 0)
  )
    return Number(text.toString("latin1"));
  const x = n / (EXACT_POWERS_OF_TEN[scale] as number);
  return negative ? -x : x;
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
