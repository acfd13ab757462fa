/**
 * Ingest bench (`npm run bench:ingest`): trace runs per second through `POST /api/v1/runs/multipart`
 * with batches shaped like the langsmith JS SDK's (100 operations per batch, its `size_limit`;
 * parts `post.<id>`, `.inputs`, `.outputs`, `.extra`; gzip, as with `gzip_body_enabled`), sent
 * `--concurrency` at a time (the SDK's `traceBatchConcurrency` is 5), beside the ceiling: a plain
 * Postgres `COPY` of the same rows into a scratch copy of the `runs` table, in the same run.
 *
 *   npm run bench:ingest -- [--runs 20000] [--concurrency 5] [--runs-per-trace 10]
 *
 * The server runs in this process on a throwaway embedded Postgres (fsync off). Bodies are built and
 * compressed before the clock starts, so the figure is the server's: parsing, validation, project
 * resolution, the upserts and the usage rollup, all in one transaction per batch.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";
import { uuidv7 } from "../server/ids.js";
import { createSql, type Sql } from "../server/store/db.js";
import { type NormalizedRun, normalizeRun } from "../server/tracing/run-normalizer.js";
import { createBenchApiKey, startBenchApp } from "./support/bench-app.js";
import { startBenchPostgres } from "./support/bench-postgres.js";

/** Operations per multipart request: the SDK's default `size_limit`. */
const BATCH_SIZE = 100;
/** Columns the COPY ceiling writes: those ingest fills (status as ingest derives it). */
const COPY_COLUMNS = [
  "id",
  "workspace_id",
  "session_id",
  "trace_id",
  "parent_run_id",
  "parent_run_ids",
  "name",
  "run_type",
  "start_time",
  "end_time",
  "status",
  "is_root",
  "dotted_order",
  "inputs",
  "outputs",
  "extra",
  "tags",
  "total_tokens",
  "prompt_tokens",
  "completion_tokens",
] as const;

interface Settings {
  runs: number;
  concurrency: number;
  runsPerTrace: number;
}

function readSettings(): Settings {
  const { values } = parseArgs({
    options: {
      runs: { type: "string", default: "20000" },
      concurrency: { type: "string", default: "5" },
      "runs-per-trace": { type: "string", default: "10" },
    },
  });
  return {
    runs: Number(values.runs),
    concurrency: Number(values.concurrency),
    runsPerTrace: Number(values["runs-per-trace"]),
  };
}

/** Traces as the SDK posts them once ended: a root chain and children (every third an LLM with usage). */
function buildRuns(settings: Settings, project: string): Record<string, unknown>[] {
  const runs: Record<string, unknown>[] = [];
  const base = Date.now() - 60_000;
  while (runs.length < settings.runs) {
    const start = new Date(base + runs.length);
    const stamp = (i: number) =>
      `${start.toISOString().replace(/[-:]/g, "").replace(".", "").slice(0, -1)}${String(i).padStart(3, "0")}`;
    const rootId = uuidv7(start.getTime());
    const rootDotted = `${stamp(0)}Z${rootId}`;
    for (let i = 0; i < settings.runsPerTrace && runs.length < settings.runs; i++) {
      const id = i === 0 ? rootId : uuidv7(start.getTime());
      const llm = i % 3 === 2;
      runs.push({
        id,
        name: i === 0 ? "agent" : llm ? "ChatModel" : `step-${i}`,
        run_type: i === 0 ? "chain" : llm ? "llm" : "tool",
        start_time: `${start.toISOString().slice(0, -1)}${String(i).padStart(3, "0")}Z`,
        end_time: start.getTime() + 5,
        trace_id: rootId,
        dotted_order: i === 0 ? rootDotted : `${rootDotted}.${stamp(i)}Z${id}`,
        ...(i === 0 ? {} : { parent_run_id: rootId }),
        session_name: project,
        tags: ["bench"],
        child_runs: [],
        inputs: {
          messages: [{ role: "user", content: "What is the weather like in Paris today? ".repeat(8) }],
        },
        outputs: {
          text: "It is sunny and 21 degrees in Paris. ".repeat(8),
          ...(llm ? { usage_metadata: { input_tokens: 120, output_tokens: 80, total_tokens: 200 } } : {}),
        },
        extra: {
          metadata: { ls_provider: "openai", ls_model_name: "gpt-4o-mini", LANGSMITH_TRACING: "true" },
          runtime: { library: "langsmith", runtime: "node", sdk: "langsmith-js", sdk_version: "0.10.5" },
        },
      });
    }
  }
  return runs;
}

/** One SDK-shaped multipart request body (gzip), as `Client.multipartIngestRuns` streams it. */
function multipartBody(runs: Record<string, unknown>[], boundary: string): Blob {
  const chunks: string[] = [];
  const part = (name: string, value: unknown) => {
    const json = JSON.stringify(value);
    chunks.push(
      `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\nContent-Type: application/json; length=${json.length}\r\n\r\n${json}\r\n`,
    );
  };
  for (const run of runs) {
    const { inputs, outputs, extra, ...main } = run;
    part(`post.${run.id}`, main);
    part(`post.${run.id}.inputs`, inputs);
    part(`post.${run.id}.outputs`, outputs);
    part(`post.${run.id}.extra`, extra);
  }
  chunks.push(`--${boundary}--\r\n`);
  return new Blob([gzipSync(chunks.join(""))]);
}

async function sendAll(
  url: string,
  apiKey: string,
  bodies: { body: Blob; boundary: string }[],
  concurrency: number,
) {
  let next = 0;
  const worker = async () => {
    while (next < bodies.length) {
      const { body, boundary } = bodies[next++] as { body: Blob; boundary: string };
      const res = await fetch(`${url}/api/v1/runs/multipart`, {
        method: "POST",
        headers: {
          "x-api-key": apiKey,
          "content-type": `multipart/form-data; boundary=${boundary}`,
          "content-encoding": "gzip",
        },
        body,
      });
      if (res.status !== 202) throw new Error(`multipart answered ${res.status}: ${await res.text()}`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** COPY text format: tab-separated, `\N` for null, backslash escapes. */
function copyField(value: unknown): string {
  if (value === null || value === undefined) return "\\N";
  const text =
    typeof value === "string"
      ? value
      : Array.isArray(value) && value.every((v) => typeof v === "string")
        ? `{${value.map((v) => `"${v}"`).join(",")}}`
        : typeof value === "object"
          ? JSON.stringify(value)
          : String(value);
  return text.replace(/\\/g, "\\\\").replace(/\t/g, "\\t").replace(/\n/g, "\\n").replace(/\r/g, "\\r");
}

/** The ceiling: the same rows in one COPY into a scratch copy of `runs` (same indexes and constraints). */
async function copyCeiling(
  sql: Sql,
  runs: NormalizedRun[],
  workspaceId: string,
  projectId: string,
): Promise<number> {
  await sql`create table bench_runs_copy (like runs including defaults including indexes including constraints)`;
  const lines = runs.map((r) => {
    const row: Record<(typeof COPY_COLUMNS)[number], unknown> = {
      id: r.id,
      workspace_id: workspaceId,
      session_id: projectId,
      trace_id: r.traceId,
      parent_run_id: r.parentRunId,
      parent_run_ids: r.parentRunIds,
      name: r.name,
      run_type: r.runType,
      start_time: r.startTime,
      end_time: r.endTime,
      status: r.endTime ? "success" : "pending",
      is_root: r.isRoot,
      dotted_order: r.dottedOrder,
      inputs: r.inputs,
      outputs: r.outputs,
      extra: r.extra,
      tags: r.tags,
      total_tokens: r.totalTokens,
      prompt_tokens: r.promptTokens,
      completion_tokens: r.completionTokens,
    };
    return `${COPY_COLUMNS.map((c) => copyField(row[c])).join("\t")}\n`;
  });
  const started = performance.now();
  const stream =
    await sql`copy bench_runs_copy (${sql.unsafe(COPY_COLUMNS.join(", "))}) from stdin`.writable();
  await new Promise<void>((resolve, reject) => {
    stream.on("error", reject);
    stream.on("finish", resolve);
    stream.end(lines.join(""));
  });
  const seconds = (performance.now() - started) / 1000;
  const [count] = await sql<{ n: number }[]>`select count(*)::int as n from bench_runs_copy`;
  if (count?.n !== runs.length) throw new Error(`COPY stored ${count?.n} rows, expected ${runs.length}`);
  return runs.length / seconds;
}

async function main(): Promise<void> {
  const settings = readSettings();
  const pg = await startBenchPostgres("ingest");
  const apiKey = createBenchApiKey();
  const app = await startBenchApp({ databaseUrl: pg.url, apiKey, dataDir: join(pg.dir, "data") });
  const sql = createSql(pg.url, { max: 2, statementTimeoutMs: 0, applicationName: "bench-ingest" });
  try {
    const [version] = await sql<{ v: string }[]>`select current_setting('server_version') as v`;
    console.log(
      `ingest bench: ${settings.runs} runs, ${settings.runsPerTrace} per trace, ${BATCH_SIZE} per request, concurrency ${settings.concurrency}; PostgreSQL ${version?.v} (embedded, fsync off), Node ${process.version}, ${availableParallelism()} cores`,
    );
    const project = `bench-${randomUUID()}`;
    const runs = buildRuns(settings, project);
    const bodies = [];
    for (let i = 0; i < runs.length; i += BATCH_SIZE) {
      const boundary = `----LangSmithFormBoundary${randomBytes(6).toString("hex")}`;
      bodies.push({ body: multipartBody(runs.slice(i, i + BATCH_SIZE), boundary), boundary });
    }
    const url = `http://127.0.0.1:${app.address.port}`;
    // Warm-up: one batch of its own project, so connections, JIT and the project row exist.
    await sendAll(url, apiKey, bodies.slice(0, 1), 1);
    await sql`delete from runs`;

    const started = performance.now();
    await sendAll(url, apiKey, bodies, settings.concurrency);
    const oursSeconds = (performance.now() - started) / 1000;
    const [stored] = await sql<{ n: number }[]>`select count(*)::int as n from runs`;
    if (stored?.n !== runs.length)
      throw new Error(`ingest stored ${stored?.n} runs, expected ${runs.length}`);
    const ours = runs.length / oursSeconds;

    const [ids] = await sql<{ workspace_id: string; id: string }[]>`
      select workspace_id, id from tracing_projects where name = ${project}`;
    const normalized = runs.map((r) => normalizeRun(r, "post"));
    const ceiling = await copyCeiling(sql, normalized, ids!.workspace_id, ids!.id);

    console.log(`\n${"".padEnd(52)}${"runs/s".padStart(10)}`);
    console.log(
      `${"ours: POST /api/v1/runs/multipart (gzip, SDK-shaped)".padEnd(52)}${ours.toFixed(0).padStart(10)}`,
    );
    console.log(`${"ceiling: one COPY of the same rows".padEnd(52)}${ceiling.toFixed(0).padStart(10)}`);
    console.log(`\nratio ours / COPY: ${(ours / ceiling).toFixed(2)}`);
  } finally {
    await sql.end();
    await app.stop();
    await pg.stop();
  }
}

await main();
