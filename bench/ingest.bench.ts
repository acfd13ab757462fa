/**
 * Ingest bench (`npm run bench:ingest`): trace runs per second through `POST /api/v1/runs/multipart`
 * with batches shaped like the langsmith JS SDK's (100 operations per batch, its `size_limit`;
 * parts `post.<id>`, `.inputs`, `.outputs`, `.extra`; gzip, as with `gzip_body_enabled`), sent
 * `--concurrency` at a time (the SDK's `traceBatchConcurrency` is 5), beside the ceiling: a plain
 * Postgres `COPY` of the same rows into a scratch copy of the `runs` table, once after every round
 * (the ratio is given per round as well as best against best). The OTLP cells store the same runs
 * as rows of their own (run ids from span ids, as LangSmith derives them, and the span's OTel
 * fields in `extra.otel`): they are measured against a COPY of those rows as well, read back from
 * the first OTLP cell's table, beside the COPY of multipart's. Then the read side on the ingested
 * runs: `POST /api/v1/runs/query` (a page of root runs; a filter with `or` and `search`) and
 * `GET /api/v1/runs/{id}`, closed loop at each `--query-concurrency`.
 *
 *   npm run bench:ingest -- [--runs 20000] [--warmup-runs 10000] [--concurrency 5] [--runs-per-trace 10]
 *     [--rounds 3] [--duration-s 2] [--warmup-s 0.5] [--query-concurrency 1,8] [--baseline <dir>]...
 *     [--profile-server <dir>] [--statements <n>]
 *
 * Each server runs in a child process (bench/support/agentplane-child.ts) on its own database of one
 * throwaway embedded Postgres (fsync off). `--baseline <dir>` adds another checkout of agentplane
 * (see bench/support/checkouts.ts), measured side by side: every round runs every checkout, in an
 * order that alternates, and the report gives each checkout's best round, the range over rounds and
 * the ratio to each baseline. Before the first round each server ingests `--warmup-runs` runs,
 * untimed, as a server that has been running would have. Bodies are built and compressed before
 * the clock starts, so the ingest figure is the server's: parsing, validation, project resolution,
 * the upserts and the usage rollup, all in one transaction per batch. After the ingest rounds each
 * server's peak resident memory (VmHWM) is printed, as the server's Node flags (package.json
 * `config.nodeFlags`) trade memory for CPU. `--profile-server` writes this checkout's V8 CPU
 * profile (`.cpuprofile`) into `<dir>` when its server stops. `--statements <n>` loads `pg_stat_statements`
 * and prints each checkout's `n` statements that took the most Postgres time over the ingest rounds.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { availableParallelism } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";
import { uuidv7 } from "../server/ids.js";
import { createSql, type Sql } from "../server/store/db.js";
import type { NormalizedRun } from "../server/store/tracing/trace-rows.js";
import { normalizeRun } from "../server/tracing/run-normalizer.js";
import { createJsonClient } from "./agent-crud/json-client.js";
import { otlpBodies, sendOtlpGrpc, sendOtlpHttp } from "./ingest/otlp-load.js";
import { createBenchApiKey } from "./support/bench-app.js";
import { type BenchPostgres, createBenchDatabase, startBenchPostgres } from "./support/bench-postgres.js";
import { BASELINE_OPTION, baselineCheckouts, type Checkout, THIS_CHECKOUT } from "./support/checkouts.js";
import { numberValue } from "./support/cli-values.js";
import { type CpuMeter, cpuMeter, cpuSecondsBetween } from "./support/cpu-meter.js";
import { runMeteredLoop } from "./support/metered-loop.js";
import { residentBytes } from "./support/process-memory.js";
import { median, roundRatios } from "./support/round-ratios.js";
import { type AgentplaneChild, spawnAgentplane } from "./support/spawn-agentplane.js";
import {
  printStatementStats,
  resetStatementStats,
  STATEMENT_STATS_SETTINGS,
} from "./support/statement-stats.js";
import { tableRow } from "./support/table-row.js";

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
/** Page size of the root-runs query: the SDK's listRuns page and the API's largest. */
const ROOTS_PAGE = 100;
/** The filter of the filtered query: nested and/or with a search, as a UI would send. */
const QUERY_FILTER = `and(eq(run_type, "llm"), or(gt(total_tokens, 150), search("Paris")))`;
/** Page size of the filtered query. */
const FILTER_PAGE = 20;
/** The ingest cell's name in the report. */
const INGEST_CELL = "POST /api/v1/runs/multipart (runs/s)";
/** The OTLP cells: the same runs as spans, 100 per export. */
const OTLP_HTTP_CELL = "OTLP/HTTP protobuf /v1/traces (spans/s)";
const OTLP_GRPC_CELL = "OTLP/gRPC TraceService/Export (spans/s)";

/** How one ingest protocol's cell sends the round's bodies to a server. */
interface IngestProtocol {
  cell: string;
  send(port: number): Promise<void>;
}

interface Settings {
  runs: number;
  concurrency: number;
  runsPerTrace: number;
  rounds: number;
  durationMs: number;
  warmupMs: number;
  /** Runs each server ingests, untimed, before the first round. */
  warmupRuns: number;
  queryConcurrencies: number[];
  checkouts: Checkout[];
  /** Where this checkout's server writes its CPU profile, if anywhere. */
  profileDir: string | undefined;
  /** How many of the ingest's most costly statements to print per checkout (0: none, not loaded). */
  statements: number;
}

function readSettings(): Settings {
  const { values } = parseArgs({
    options: {
      runs: { type: "string", default: "20000" },
      concurrency: { type: "string", default: "5" },
      "runs-per-trace": { type: "string", default: "10" },
      // Three rounds: on a shared 2-core VM a cell varies by ±20 % between rounds; the best of three
      // keeps one slow round of either checkout from deciding a ratio.
      rounds: { type: "string", default: "3" },
      "duration-s": { type: "string", default: "2" },
      "warmup-s": { type: "string", default: "0.5" },
      // Cold, a server's first round ran 6–21 % below its best later round in five of six runs of
      // this bench on the 2-core VM (2026-11-27, before there was a warm-up): JIT tiers, heap sizing,
      // the pool's connections and their plans. Sent once, untimed, before the rounds.
      "warmup-runs": { type: "string", default: "10000" },
      "query-concurrency": { type: "string", default: "1,8" },
      "profile-server": { type: "string" },
      statements: { type: "string", default: "0" },
      ...BASELINE_OPTION,
    },
  });
  return {
    runs: numberValue("runs", values.runs, BATCH_SIZE, true),
    concurrency: numberValue("concurrency", values.concurrency, 1, true),
    runsPerTrace: numberValue("runs-per-trace", values["runs-per-trace"], 1, true),
    rounds: numberValue("rounds", values.rounds, 1, true),
    durationMs: numberValue("duration-s", values["duration-s"], 0.1) * 1000,
    warmupMs: numberValue("warmup-s", values["warmup-s"], 0) * 1000,
    warmupRuns: numberValue("warmup-runs", values["warmup-runs"], 0, true),
    queryConcurrencies: values["query-concurrency"]
      .split(",")
      .map((c) => numberValue("query-concurrency", c, 1, true)),
    checkouts: [THIS_CHECKOUT, ...baselineCheckouts(values.baseline)],
    profileDir: values["profile-server"] && resolve(values["profile-server"]),
    statements: numberValue("statements", values.statements, 0, true),
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
function multipartBody(runs: Record<string, unknown>[], boundary: string): Buffer {
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
  return gzipSync(chunks.join(""));
}

/**
 * Sends every body, `concurrency` at a time over as many keep-alive connections. node:http rather
 * than fetch: the load generator shares the cores with the server and its Postgres, and fetch cost
 * it about twice the CPU per request for the same bytes on the wire.
 */
async function sendAll(
  port: number,
  apiKey: string,
  bodies: { body: Buffer; boundary: string }[],
  concurrency: number,
) {
  const client = createJsonClient(port, { "x-api-key": apiKey }, concurrency);
  const post = async ({ body, boundary }: { body: Buffer; boundary: string }) => {
    const answer = await client.sendBytes("POST", "/api/v1/runs/multipart", body, {
      "content-type": `multipart/form-data; boundary=${boundary}`,
      "content-encoding": "gzip",
    });
    if (answer.status !== 202) throw new Error(`multipart answered ${answer.status}: ${answer.text}`);
  };
  let next = 0;
  const worker = async () => {
    while (next < bodies.length) await post(bodies[next++] as { body: Buffer; boundary: string });
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, worker));
  } finally {
    client.close();
  }
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

/** The ceiling's rows: the same runs as COPY text lines, with the ids ingest gave them. */
function copyLines(runs: NormalizedRun[], workspaceId: string, projectId: string): string {
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
  return lines.join("");
}

/**
 * The ceiling, once: `rows` rows (`text`) in one COPY into a fresh scratch copy of `runs` (same
 * indexes and constraints), in rows per second.
 */
async function copyOnce(sql: Sql, text: string, rows: number): Promise<number> {
  await sql`create table bench_runs_copy (like runs including defaults including indexes including constraints)`;
  const started = performance.now();
  const stream =
    await sql`copy bench_runs_copy (${sql.unsafe(COPY_COLUMNS.join(", "))}) from stdin`.writable();
  await new Promise<void>((resolve, reject) => {
    stream.on("error", reject);
    stream.on("finish", resolve);
    stream.end(text);
  });
  const seconds = (performance.now() - started) / 1000;
  const [count] = await sql<{ n: number }[]>`select count(*)::int as n from bench_runs_copy`;
  if (count?.n !== rows) throw new Error(`COPY stored ${count?.n} rows, expected ${rows}`);
  await sql`drop table bench_runs_copy`;
  return rows / seconds;
}

/** The rows of `runs` as COPY text of {@link COPY_COLUMNS}, as the ingest stored them. */
async function storedRowsText(sql: Sql): Promise<string> {
  const chunks: Buffer[] = [];
  const stream =
    await sql`copy (select ${sql.unsafe(COPY_COLUMNS.join(", "))} from runs) to stdout`.readable();
  // Read by its events: postgres.js's COPY stream never ends an async iteration (3.4.9).
  await new Promise<void>((resolve, reject) => {
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("end", resolve);
    stream.on("error", reject);
  });
  return Buffer.concat(chunks).toString("utf8");
}

/** A checkout under test: its server, a pool on its database, and the meter of their CPU. */
interface Target {
  checkout: Checkout;
  child: AgentplaneChild;
  sql: Sql;
  meter: CpuMeter;
}

/** One database per checkout in the bench's cluster: `bench` for this one, `bench_<n>` for baselines. */
function databaseFor(pg: BenchPostgres, index: number): Promise<string> {
  return index === 0 ? Promise.resolve(pg.url) : createBenchDatabase(pg, `bench_${index}`);
}

/** One round of one cell on one checkout: units (runs or requests) per second, and CPU ms per unit. */
interface Sample {
  rate: number;
  cpuMs: number;
  /** The server process's share of cpuMs (the rest is its Postgres backends); ingest cells only. */
  nodeMs?: number;
}

/** One COPY of the same rows (the ceiling): rows per second, and its backend's CPU ms per 100 rows. */
interface Ceiling {
  rate: number;
  cpuMs: number;
  /** The same of a COPY of the rows the OTLP cells stored (their ids and `extra`). */
  otlp: { rate: number; cpuMs: number };
}

/** A meter reading cut down to one process, so that CPU between readings counts that process alone. */
function onlyPid(reading: Map<number, number>, pid: number): Map<number, number> {
  const ticks = reading.get(pid);
  return new Map(ticks === undefined ? [] : [[pid, ticks]]);
}

/** Results of one cell over the rounds, by checkout label, in round order. */
type Cells = Map<string, Map<string, Sample[]>>;

function record(cells: Cells, cell: string, label: string, sample: Sample): void {
  const byLabel = cells.get(cell) ?? new Map<string, Sample[]>();
  byLabel.set(label, [...(byLabel.get(label) ?? []), sample]);
  cells.set(cell, byLabel);
}

/** The checkouts in the order of round `round`: reversed every other round, so none always goes first. */
function inRoundOrder<T>(items: readonly T[], round: number): T[] {
  return round % 2 === 0 ? [...items] : [...items].reverse();
}

/** Every round, every checkout: empty the runs, send every body, and count runs per second. */
async function measureIngest(
  settings: Settings,
  targets: Target[],
  protocols: readonly IngestProtocol[],
  cells: Cells,
  ceiling: () => Promise<Ceiling>,
  /** Called once a cell's runs are stored and counted, before the next cell empties them. */
  afterCell: (target: Target, cell: string) => Promise<void>,
): Promise<Ceiling[]> {
  const ceilings: Ceiling[] = [];
  for (let round = 0; round < settings.rounds; round++) {
    for (const target of inRoundOrder(targets, round)) {
      for (const protocol of inRoundOrder(protocols, round)) {
        await target.sql`truncate runs, run_feedback, run_attachments, usage_rollups`;
        // Spans that wait for a parent (none here: a trace's spans share their request).
        await target.sql`truncate otel_pending_spans`.catch(() => undefined);
        await target.sql`vacuum analyze runs`;
        const before = await target.meter.read();
        const started = performance.now();
        const clientBefore = process.cpuUsage();
        await protocol.send(target.child.port);
        const client = process.cpuUsage(clientBefore);
        const rate = settings.runs / ((performance.now() - started) / 1000);
        const after = await target.meter.read();
        const perRun = (seconds: number) => (seconds * 1000) / settings.runs;
        const cpuMs = perRun(cpuSecondsBetween(before, after));
        const nodeMs = perRun(cpuSecondsBetween(onlyPid(before, target.child.pid), after));
        const [stored] = await target.sql<{ n: number }[]>`select count(*)::int as n from runs`;
        if (stored?.n !== settings.runs)
          throw new Error(`${target.checkout.label} stored ${stored?.n} runs, expected ${settings.runs}`);
        record(cells, protocol.cell, target.checkout.label, { rate, cpuMs, nodeMs });
        await afterCell(target, protocol.cell);
        console.log(
          `  ingest round ${round + 1} ${target.checkout.label} ${protocol.cell.replace(/ \(.*\)$/, "")}: ${rate.toFixed(0)}/s; CPU per ${BATCH_SIZE}: ` +
            `Node ${(nodeMs * BATCH_SIZE).toFixed(1)} ms, Postgres ${((cpuMs - nodeMs) * BATCH_SIZE).toFixed(1)} ms; ` +
            `the load generator ${(perRun((client.user + client.system) / 1e6) * BATCH_SIZE).toFixed(1)} ms`,
        );
      }
    }
    const copy = await ceiling();
    ceilings.push(copy);
    console.log(
      `  ingest round ${round + 1} COPY: ${copy.rate.toFixed(0)} rows/s; Postgres CPU per ${BATCH_SIZE} rows ${copy.cpuMs.toFixed(1)} ms; ` +
        `of the OTLP cells' rows: ${copy.otlp.rate.toFixed(0)} rows/s, ${copy.otlp.cpuMs.toFixed(1)} ms`,
    );
  }
  return ceilings;
}

/** The read calls measured on the ingested runs; each resolves only for a verified answer. */
function queryCalls(projectId: string, runIds: string[]) {
  const expectRuns = (status: number, json: unknown, min: number) => {
    const runs = (json as { runs?: unknown[] } | undefined)?.runs;
    if (status !== 200 || !Array.isArray(runs) || runs.length < min)
      throw new Error(`query answered ${status} with ${runs?.length} runs`);
  };
  return {
    "POST /api/v1/runs/query (roots, 100)": async (client: ReturnType<typeof createJsonClient>) => {
      const answer = await client.send("POST", "/api/v1/runs/query", {
        session: [projectId],
        is_root: true,
        limit: ROOTS_PAGE,
      });
      expectRuns(answer.status, answer.json, ROOTS_PAGE);
    },
    "POST /api/v1/runs/query (filter)": async (client: ReturnType<typeof createJsonClient>) => {
      const answer = await client.send("POST", "/api/v1/runs/query", {
        session: [projectId],
        filter: QUERY_FILTER,
        limit: FILTER_PAGE,
        select: ["id", "name", "run_type", "start_time", "total_tokens"],
      });
      expectRuns(answer.status, answer.json, FILTER_PAGE);
    },
    "GET /api/v1/runs/{id}": async (client: ReturnType<typeof createJsonClient>, seq: number) => {
      const id = runIds[seq % runIds.length] ?? "";
      const answer = await client.send("GET", `/api/v1/runs/${id}`);
      if (answer.status !== 200 || (answer.json as { id?: string }).id !== id)
        throw new Error(`read run answered ${answer.status}: ${answer.text.slice(0, 200)}`);
    },
  };
}

/** Every query, concurrency and round, on every checkout (all hold the same runs by now). */
async function measureQueries(
  settings: Settings,
  targets: Target[],
  apiKey: string,
  project: string,
  cells: Cells,
): Promise<void> {
  const calls = new Map<Target, ReturnType<typeof queryCalls>>();
  for (const target of targets) {
    // Fresh statistics everywhere, so that no checkout is planned on stale ones.
    await target.sql`analyze`;
    const [p] = await target.sql<{ id: string }[]>`select id from tracing_projects where name = ${project}`;
    const ids = await target.sql<{ id: string }[]>`select id from runs order by id limit 1000`;
    calls.set(
      target,
      queryCalls(
        p?.id ?? "",
        ids.map((r) => r.id),
      ),
    );
  }
  const names = Object.keys(calls.get(targets[0] as Target) ?? {}) as (keyof ReturnType<typeof queryCalls>)[];
  for (const name of names) {
    for (let round = 0; round < settings.rounds; round++) {
      for (const concurrency of settings.queryConcurrencies) {
        for (const target of inRoundOrder(targets, round)) {
          const client = createJsonClient(target.child.port, { "x-api-key": apiKey }, concurrency);
          const call = calls.get(target)?.[name];
          if (!call) throw new Error(`no call ${name}`);
          const result = await runMeteredLoop(
            target.meter,
            (seq) => call(client, seq),
            concurrency,
            settings,
          ).finally(() => client.close());
          if (result.errors > 0) throw new Error(`${name} on ${target.checkout.label}: ${result.firstError}`);
          record(cells, `${name} c=${concurrency} (req/s)`, target.checkout.label, {
            rate: result.rps,
            cpuMs: result.cpuMs,
          });
          console.log(
            `  ${name} round ${round + 1} c=${concurrency} ${target.checkout.label}: ${result.rps.toFixed(0)} req/s`,
          );
        }
      }
    }
  }
}

/**
 * Two tables, one row per cell. Throughput: each checkout's best round and its range over rounds,
 * then per baseline the ratio of this checkout's best to the baseline's, with the median and range
 * of same-round ratios. CPU: each checkout's median CPU per unit (its server and its Postgres
 * backends), then per baseline the ratio baseline CPU / this checkout's CPU, so that above 1 means
 * cheaper here, as for throughput.
 */
function printReport(settings: Settings, cells: Cells): void {
  const labels = settings.checkouts.map((c) => c.label);
  const baselines = labels.slice(1);
  const widths = [44, ...labels.map(() => 22), ...baselines.map(() => 34)];
  const header = (title: string) =>
    console.log(`\n${tableRow([title, ...labels, ...baselines.map((b) => `÷ ${b}`)], widths)}`);
  header("throughput: best (range over rounds)");
  for (const [cell, byLabel] of cells) {
    const rates = (label: string) => (byLabel.get(label) ?? []).map((s) => s.rate);
    const row = [cell];
    for (const label of labels)
      row.push(
        `${Math.max(...rates(label)).toFixed(0)} (${Math.min(...rates(label)).toFixed(0)}–${Math.max(...rates(label)).toFixed(0)})`,
      );
    for (const baseline of baselines) row.push(roundRatios(rates(THIS_CHECKOUT.label), rates(baseline)));
    console.log(tableRow(row, widths));
  }
  header("CPU ms per run or request: median");
  for (const [cell, byLabel] of cells) {
    const cpu = (label: string) => (byLabel.get(label) ?? []).map((s) => s.cpuMs);
    const row = [cell.replace(/ \((runs|req)\/s\)$/, "")];
    for (const label of labels) row.push(median(cpu(label)).toFixed(3));
    const inverse = (label: string) => cpu(label).map((ms) => 1 / ms);
    for (const baseline of baselines) row.push(roundRatios(inverse(THIS_CHECKOUT.label), inverse(baseline)));
    console.log(tableRow(row, widths));
  }
  header(`ingest CPU ms per ${BATCH_SIZE} runs: median`);
  const ingest = cells.get(INGEST_CELL);
  for (const [part, share] of [
    ["Node (the server process)", (s: Sample) => s.nodeMs ?? Number.NaN],
    ["Postgres (its backends)", (s: Sample) => s.cpuMs - (s.nodeMs ?? Number.NaN)],
  ] as const) {
    const row: string[] = [part];
    for (const label of labels)
      row.push(median((ingest?.get(label) ?? []).map((s) => share(s) * BATCH_SIZE)).toFixed(1));
    console.log(tableRow(row, widths));
  }
}

/**
 * The ceiling beside this checkout's ingest. The COPY runs once after every round, so each round has
 * its own, measured minutes apart from the ingest at most: the ratio of each round's ingest to its
 * COPY follows the machine's speed, which on a shared VM swings by a third within one run. Printed:
 * the best of each side (as the throughput table), and the median and range of the per-round ratios.
 */
function printCeiling(cells: Cells, ceilings: readonly Ceiling[]): void {
  const ours = (cells.get(INGEST_CELL)?.get(THIS_CHECKOUT.label) ?? []).map((s) => s.rate);
  const copies = ceilings.map((c) => c.rate);
  const otlpCopies = ceilings.map((c) => c.otlp.rate);
  const perRound = ours.map((rate, round) => rate / (copies[round] ?? Number.NaN));
  console.log(
    `\nceiling: one COPY of the same rows per round: best ${Math.max(...copies).toFixed(0)} rows/s ` +
      `(${Math.min(...copies).toFixed(0)}–${Math.max(...copies).toFixed(0)}), Postgres CPU ` +
      `${median(ceilings.map((c) => c.cpuMs)).toFixed(1)} ms per ${BATCH_SIZE} rows (median); ` +
      `of the OTLP cells' rows: best ${Math.max(...otlpCopies).toFixed(0)} rows/s, Postgres CPU ` +
      `${median(ceilings.map((c) => c.otlp.cpuMs)).toFixed(1)} ms per ${BATCH_SIZE} rows (median)`,
  );
  console.log(
    `ratio agentplane / COPY: best ÷ best ${(Math.max(...ours) / Math.max(...copies)).toFixed(2)}; ` +
      `per round median ${median(perRound).toFixed(2)} (${Math.min(...perRound).toFixed(2)}–${Math.max(...perRound).toFixed(2)})`,
  );
  for (const cell of [OTLP_HTTP_CELL, OTLP_GRPC_CELL]) {
    const spans = (cells.get(cell)?.get(THIS_CHECKOUT.label) ?? []).map((s) => s.rate);
    const ratio = (against: readonly number[]) => {
      const rounds = spans.map((rate, round) => rate / (against[round] ?? Number.NaN));
      return `best ÷ best ${(Math.max(...spans) / Math.max(...against)).toFixed(2)}; per round median ${median(rounds).toFixed(2)} (${Math.min(...rounds).toFixed(2)}–${Math.max(...rounds).toFixed(2)})`;
    };
    const name = cell.replace(/ \(.*\)$/, "");
    console.log(`ratio ${name} spans/s ÷ multipart runs/s: ${ratio(ours)}`);
    console.log(`ratio ${name} spans/s ÷ COPY rows/s: ${ratio(copies)}`);
    console.log(`ratio ${name} spans/s ÷ COPY of its own rows (rows/s): ${ratio(otlpCopies)}`);
  }
}

async function main(): Promise<void> {
  const settings = readSettings();
  const pg = await startBenchPostgres("ingest", settings.statements > 0 ? STATEMENT_STATS_SETTINGS : {});
  const apiKey = createBenchApiKey();
  const targets: Target[] = [];
  // A superuser connection that finds each database's backends for the CPU meters.
  const admin = createSql(pg.url, { max: 1, statementTimeoutMs: 0, applicationName: "bench-ingest-meter" });
  try {
    for (const [index, checkout] of settings.checkouts.entries()) {
      const databaseUrl = await databaseFor(pg, index);
      const child = await spawnAgentplane(
        { databaseUrl, apiKey, dataDir: join(pg.dir, `data-${index}`) },
        index === 0 ? settings.profileDir : undefined,
        checkout.root,
      );
      const sql = createSql(databaseUrl, { max: 2, statementTimeoutMs: 0, applicationName: "bench-ingest" });
      const database = new URL(databaseUrl).pathname.slice(1);
      targets.push({
        checkout,
        child,
        sql,
        meter: cpuMeter(admin, database, child.pid),
      });
    }
    const first = targets[0] as Target;
    const [version] = await first.sql<{ v: string }[]>`select current_setting('server_version') as v`;
    console.log(
      `ingest bench: ${settings.runs} runs after ${Math.min(settings.warmupRuns, settings.runs)} untimed, ${settings.runsPerTrace} per trace, ${BATCH_SIZE} per request, concurrency ${settings.concurrency}; ` +
        `queries ${settings.durationMs / 1000} s per cell after ${settings.warmupMs / 1000} s warm-up at c=${settings.queryConcurrencies.join(",")}; ` +
        `${settings.rounds} round(s); checkouts ${settings.checkouts.map((c) => c.label).join(", ")}; ` +
        `PostgreSQL ${version?.v} (embedded, fsync off), Node ${process.version}, ${availableParallelism()} cores`,
    );
    const project = `bench-${randomUUID()}`;
    const runs = buildRuns(settings, project);
    const bodies: { body: Buffer; boundary: string }[] = [];
    for (let i = 0; i < runs.length; i += BATCH_SIZE) {
      const boundary = `----LangSmithFormBoundary${randomBytes(6).toString("hex")}`;
      bodies.push({ body: multipartBody(runs.slice(i, i + BATCH_SIZE), boundary), boundary });
    }
    // Warm-up, untimed: one batch alone (the project row), then `--warmup-runs` at the bench's
    // concurrency, so that the pool's connections and their plans, the JIT and the heap are those of
    // a server that has been running. Each round empties the runs again before it starts.
    const warmupBatches = Math.ceil(Math.min(settings.warmupRuns, settings.runs) / BATCH_SIZE);
    const warmup = bodies.slice(0, warmupBatches);
    const otlp = otlpBodies(runs, BATCH_SIZE);
    for (const target of targets) {
      await sendAll(target.child.port, apiKey, bodies.slice(0, 1), 1);
      await sendAll(target.child.port, apiKey, warmup, settings.concurrency);
      const port = target.child.port;
      await sendOtlpHttp(port, apiKey, project, otlp.slice(0, warmupBatches), settings.concurrency);
      await sendOtlpGrpc(port, apiKey, project, otlp.slice(0, warmupBatches), settings.concurrency);
    }
    const protocols: IngestProtocol[] = [
      { cell: INGEST_CELL, send: (port) => sendAll(port, apiKey, bodies, settings.concurrency) },
      {
        cell: OTLP_HTTP_CELL,
        send: (port) => sendOtlpHttp(port, apiKey, project, otlp, settings.concurrency),
      },
      {
        cell: OTLP_GRPC_CELL,
        send: (port) => sendOtlpGrpc(port, apiKey, project, otlp, settings.concurrency),
      },
    ];

    const [ids] = await first.sql<{ workspace_id: string; id: string }[]>`
      select workspace_id, id from tracing_projects where name = ${project}`;
    const copyText = copyLines(
      runs.map((r) => normalizeRun(r, "post")),
      ids!.workspace_id,
      ids!.id,
    );
    // The rows the OTLP cells store, as COPY text: read back once, after the first of them.
    let otlpCopyText: string | undefined;
    const captureOtlpRows = async (target: Target, cell: string) => {
      if (target === first && cell !== INGEST_CELL && otlpCopyText === undefined)
        otlpCopyText = await storedRowsText(first.sql);
    };
    const copyOf = async (text: string) => {
      const before = await first.meter.read();
      const rate = await copyOnce(first.sql, text, runs.length);
      const after = await first.meter.read();
      // The COPY runs on the bench's own connection, so the server process is left out.
      const seconds =
        cpuSecondsBetween(before, after) - cpuSecondsBetween(onlyPid(before, first.child.pid), after);
      return { rate, cpuMs: (seconds * 1000 * BATCH_SIZE) / runs.length };
    };
    const ceiling = async (): Promise<Ceiling> => ({
      ...(await copyOf(copyText)),
      otlp: await copyOf(otlpCopyText ?? ""),
    });

    const cells: Cells = new Map();
    if (settings.statements > 0) for (const target of targets) await resetStatementStats(target.sql);
    const ceilings = await measureIngest(settings, targets, protocols, cells, ceiling, captureOtlpRows);
    for (const target of targets) {
      const peak = await residentBytes([target.child.pid], "VmHWM");
      console.log(
        `  ${target.checkout.label}: the server's peak resident memory ${(peak / 2 ** 20).toFixed(0)} MiB`,
      );
    }
    if (settings.statements > 0) {
      for (const target of targets) {
        const title = `${target.checkout.label}: statements by Postgres time over the ingest rounds`;
        await printStatementStats(target.sql, settings.statements, title);
      }
    }
    await measureQueries(settings, targets, apiKey, project, cells);

    printReport(settings, cells);
    printCeiling(cells, ceilings);
  } finally {
    for (const target of targets) {
      await target.sql.end();
      await target.child.stop();
    }
    await admin.end();
    await pg.stop();
  }
}

await main();
