/**
 * Costs are read as numeric's decimal text and turned into doubles by the Parquet encoder, not cast
 * to float8 by Postgres: the exported double of every stored cost must be the one Postgres's own
 * float8 cast gives, including values that are not exact in binary, long decimals, tiny and huge
 * magnitudes, zero, negative values and NaN.
 */
import { createWriteStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createParquetFileWriter } from "../../server/export/parquet-file-writer.js";
import { loadZstdCompressor } from "../../server/export/zstd-compressor.js";
import { uuidv7 } from "../../server/ids.js";
import { type ExportableRunField, readExportRows } from "../../server/store/export/run-export-store.js";
import { unconfined } from "../../server/store/tracing/workspace-scope.js";
import { duckdb } from "../support/bulk-export-fixtures.js";
import { useTestDatabase } from "../support/database.js";

const db = useTestDatabase();
const org = uuidv7();
const ws = uuidv7();
const project = uuidv7();
const DAY = new Date("2024-03-01T00:00:00Z");
/** Costs as stored (numeric text): each row's total, prompt and completion cost. */
const COSTS: [string | null, string, string][] = [
  ["0.1", "0.2", "0.3"],
  ["0.000078000", "0.0000000015", "1e-20"],
  ["123456789.123456789123456789", "-0.5", "0"],
  ["0.30000000000000004", "-0", "9007199254740993"],
  [null, "NaN", "1.7976931348623157e308"],
  ["2.5e-308", "4.9e-324", "0.1234567890123456789012345678901234567890"],
];
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "agentplane-export-costs-"));
  const sql = db().sql;
  await sql`insert into organizations (id, display_name, plan) values (${org}, 'o', 'enterprise')`;
  await sql`insert into workspaces (id, organization_id, display_name, tenant_handle) values (${ws}, ${org}, 'w', 'w')`;
  await sql`insert into tracing_projects (id, workspace_id, name) values (${project}, ${ws}, 'p')`;
  for (const [i, [total, prompt, completion]] of COSTS.entries()) {
    const id = uuidv7();
    await sql`
      insert into runs (id, workspace_id, session_id, trace_id, name, run_type, start_time, status, is_root,
                        dotted_order, total_cost, prompt_cost, completion_cost)
      values (${id}, ${ws}, ${project}, ${id}, ${`run-${i}`}, 'llm',
              ${new Date(DAY.getTime() + i * 1000)}, 'pending', true, ${id},
              ${total}::numeric, ${prompt}::numeric, ${completion}::numeric)`;
  }
});
afterAll(() => rm(dir, { recursive: true, force: true }));

it("exports each cost as the double Postgres's float8 cast gives", async () => {
  const fields: ExportableRunField[] = ["name", "total_cost", "prompt_cost", "completion_cost"];
  const path = join(dir, "costs.parquet");
  const writer = createParquetFileWriter({
    out: createWriteStream(path),
    fields,
    zstd: await loadZstdCompressor(),
    rowGroupRows: 100,
  });
  const count = await readExportRows(
    unconfined(db().sql),
    {
      workspaceId: ws,
      sessionId: project,
      from: DAY,
      to: new Date(DAY.getTime() + 86_400_000),
      condition: undefined,
      after: null,
      limit: 100,
      fields,
    },
    (row) => writer.append(row),
  );
  await writer.finish();
  expect(count).toBe(COSTS.length);

  // float8's text output is the shortest form that reads back as the same double.
  const expected = await unconfined(db().sql)<Record<string, string | null>[]>`
    select name, total_cost::float8::text as total, prompt_cost::float8::text as prompt,
           completion_cost::float8::text as completion
    from runs where workspace_id = ${ws} order by start_time`;
  const exported = await duckdb(
    `select name, total_cost, prompt_cost, completion_cost from read_parquet('${path}') order by name`,
  );
  // The DuckDB helper returns NaN as the text "NaN".
  const double = (value: unknown) => (value === null ? null : Number(value));
  expect(
    exported.map((r) => [r.name, double(r.total_cost), double(r.prompt_cost), double(r.completion_cost)]),
  ).toEqual(expected.map((r) => [r.name, double(r.total), double(r.prompt), double(r.completion)]));
});
