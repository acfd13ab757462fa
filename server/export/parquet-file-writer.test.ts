import { createHash } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { duckdb } from "../../test/support/bulk-export-fixtures.js";
import {
  EXPORTABLE_RUN_FIELDS,
  type ExportableRunField,
  type ExportRow,
} from "../store/export/run-export-store.js";
import { createParquetFileWriter } from "./parquet-file-writer.js";
import { loadZstdCompressor } from "./zstd-compressor.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "agentplane-parquet-"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** List elements Postgres quotes or writes bare as NULL: every path of the array parser. */
const AWKWARD = [
  "",
  "NULL",
  "null",
  null,
  'say "hi"',
  "a,b",
  "{x}",
  "back\\slash",
  "two words",
  "✓ 测试",
  "end",
];

/** A run's fields as a test states them. */
type Run = Record<ExportableRunField, unknown>;

/** `run` as Postgres's text output sends it, in the export query's column order. */
function wire(run: Run): ExportRow {
  const text = (value: unknown): Buffer | null => {
    if (value === null || value === undefined) return null;
    if (Array.isArray(value)) return Buffer.from(pgArray(value));
    if (typeof value === "boolean") return Buffer.from(value ? "t" : "f");
    return Buffer.from(String(value));
  };
  return EXPORTABLE_RUN_FIELDS.map((f) => text(run[f]));
}

/** A list as Postgres's array output writes it: quoted (with `"` and `\\` escaped) only when it must be. */
function pgArray(list: readonly (string | null)[]): string {
  const element = (e: string | null) => {
    if (e === null) return "NULL";
    if (e === "" || /^null$/i.test(e) || /[{},"\\\s]/.test(e)) return `"${e.replace(/["\\]/g, "\\$&")}"`;
    return e;
  };
  return `{${list.map(element).join(",")}}`;
}

/** Run `i`: every kind of column, with nulls, empty and null lists, multi-byte text and zero costs. */
function row(i: number): Run {
  const micros = 1_764_000_000_000_000n + BigInt(i) * 1_500n;
  return {
    id: `00000000-0000-7000-8000-${String(i).padStart(12, "0")}`,
    tenant_id: "tenant",
    session_id: "session",
    trace_id: `trace-${i - (i % 4)}`,
    parent_run_id: i % 4 === 0 ? null : `trace-${i - (i % 4)}`,
    parent_run_ids: i % 3 === 0 ? [] : i % 3 === 1 ? [`p-${i}`, `q-${i}`] : null,
    reference_example_id: null,
    name: i % 2 ? "ChatOpenAI" : "agent ✓ — 测试 😀",
    run_type: "llm",
    start_time: String(micros),
    end_time: i % 5 === 0 ? null : String(micros + 1_000_000n),
    status: "success",
    is_root: i % 4 === 0 ? true : i % 7 === 0 ? null : false,
    dotted_order: `20261120T000000000000Z${i}`,
    trace_tier: null,
    inputs: JSON.stringify({ messages: [{ role: "user", content: `q ${i} ${"x".repeat(i % 300)}` }] }),
    outputs: i % 6 === 0 ? null : JSON.stringify({ text: `a ${i} ünïcode` }),
    error: null,
    extra: "{}",
    events: "[]",
    tags: i % 2 ? ["bench", `variant-${i % 5}`] : i % 10 === 0 ? AWKWARD : [],
    feedback_stats: null,
    total_tokens: i % 9 === 0 ? null : String(9_007_199_254_740_993n + BigInt(i)),
    prompt_tokens: String(i - 2),
    // Both sides of the largest integer a number holds exactly, and 16-digit ones.
    completion_tokens: [
      "9007199254740991",
      "9007199254740992",
      "-9007199254740991",
      "-9007199254740993",
      "0",
    ][i % 5],
    total_cost: i % 8 === 0 ? null : i % 8 === 1 ? 0 : i * 0.000_001,
    prompt_cost: 0,
    completion_cost: -1.5,
    first_token_time: null,
  };
}

async function writeFileOf(name: string, runs: Run[], rowGroupRows: number) {
  const rows = runs.map(wire);
  const path = join(dir, name);
  const writer = createParquetFileWriter({
    out: createWriteStream(path),
    fields: EXPORTABLE_RUN_FIELDS,
    zstd: await loadZstdCompressor(),
    rowGroupRows,
  });
  for (const [i, row] of rows.entries()) {
    writer.append(row);
    if (i % 700 === 0) await writer.drained();
  }
  return { path, file: await writer.finish() };
}

describe("Parquet file writer", () => {
  it("writes every value back as DuckDB reads it, across row groups and pages", async () => {
    const rows = Array.from({ length: 5_000 }, (_, i) => row(i));
    // 2,000-row groups: three groups, the last partial (pages across 1 MiB are the test below).
    const { path, file } = await writeFileOf("all.parquet", rows, 2_000);
    const bytes = await readFile(path);
    expect(file.rows).toBe(5_000);
    expect(file.bytes).toBe(bytes.length);
    expect(file.sha256).toBe(createHash("sha256").update(bytes).digest("hex"));
    const read = await duckdb(
      `select id, name, parent_run_ids, tags, is_root, total_tokens, prompt_tokens, completion_tokens, total_cost, completion_cost,
        epoch_us(start_time)::varchar as start_us, epoch_us(end_time)::varchar as end_us, inputs, outputs,
        reference_example_id, first_token_time
       from read_parquet('${path}') order by id`,
    );
    expect(read).toHaveLength(5_000);
    for (let i = 0; i < rows.length; i += 1) {
      const want = rows[i] as Run;
      const got = read[i] as Record<string, unknown>;
      expect(got.id).toBe(want.id);
      expect(got.name).toBe(want.name);
      expect(got.parent_run_ids).toEqual(want.parent_run_ids);
      expect(got.tags).toEqual(want.tags);
      expect(got.is_root).toBe(want.is_root);
      expect(got.total_tokens).toBe(want.total_tokens);
      expect(got.prompt_tokens).toBe(String(i - 2));
      expect(got.completion_tokens).toBe(want.completion_tokens);
      expect(got.total_cost).toBe(want.total_cost);
      expect(got.completion_cost).toBe(-1.5);
      expect(got.start_us).toBe(want.start_time);
      expect(got.end_us).toBe(want.end_time);
      expect(got.inputs).toBe(want.inputs);
      expect(got.outputs).toBe(want.outputs);
      expect(got.reference_example_id).toBeNull();
      expect(got.first_token_time).toBeNull();
    }
  });

  it("types the columns as v2_beta asks, with UTC timestamps and min/max on numbers", async () => {
    const { path } = await writeFileOf("types.parquet", [row(1), row(2), row(3)], 10);
    const types = Object.fromEntries(
      (await duckdb(`describe select * from read_parquet('${path}')`)).map((r) => [
        r.column_name,
        r.column_type,
      ]),
    );
    expect(types).toMatchObject({
      start_time: "TIMESTAMP WITH TIME ZONE",
      tags: "VARCHAR[]",
      inputs: "VARCHAR",
      is_root: "BOOLEAN",
      total_tokens: "BIGINT",
      total_cost: "DOUBLE",
    });
    const stats = await duckdb(
      `select path_in_schema, stats_min_value, stats_max_value, stats_null_count, compression
       from parquet_metadata('${path}') where path_in_schema in ('prompt_tokens', 'end_time', 'outputs')
       order by path_in_schema`,
    );
    expect(stats).toEqual([
      expect.objectContaining({ path_in_schema: "end_time", stats_null_count: "0", compression: "ZSTD" }),
      expect.objectContaining({ path_in_schema: "outputs", stats_null_count: "0", stats_min_value: null }),
      expect.objectContaining({
        path_in_schema: "prompt_tokens",
        stats_min_value: "-1",
        stats_max_value: "1",
      }),
    ]);
  });

  it("splits a column chunk into pages of about 1 MiB", async () => {
    const big = Array.from({ length: 600 }, (_, i) => ({
      ...row(i),
      inputs: JSON.stringify({ t: "y".repeat(5_000 + i) }),
    }));
    const { path } = await writeFileOf("pages.parquet", big, 600);
    const [summary] = await duckdb(
      `select count(*)::int as n, sum(length(inputs))::bigint::varchar as chars from read_parquet('${path}')`,
    );
    expect(summary).toEqual({
      n: 600,
      chars: String(big.reduce((sum, r) => sum + Buffer.byteLength(String(r.inputs)), 0)),
    });
    const [meta] = await duckdb(
      `select total_uncompressed_size::bigint as size from parquet_metadata('${path}') where path_in_schema = 'inputs'`,
    );
    expect(Number(meta?.size)).toBeGreaterThan(3 << 20);
  });

  it("writes a valid empty file when no row came", async () => {
    const { path, file } = await writeFileOf("empty.parquet", [], 10);
    expect(file.rows).toBe(0);
    expect(await duckdb(`select count(*)::int as n from read_parquet('${path}')`)).toEqual([{ n: 0 }]);
  });
});
