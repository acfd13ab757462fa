/**
 * Runs bench (`npm run bench:runs`): executing a trivial graph (bench/runs/graph.ts, one node) on
 * agentplane and on the JS reference server (`langgraphjs dev` from `@langchain/langgraph-cli`,
 * in-memory) side by side in one run, same graph, same client (node:http keep-alive Agent), same
 * machine. Measured per server:
 *
 * - `POST /runs/wait` one at a time: p50 and p99 latency (aim: agentplane p50 ≤ 7 ms; the JS server
 *   polls its queue and takes about 540 ms);
 * - `POST /runs/wait` with 50 in flight: completed runs per second (aim: ≥ 3 × the JS server's, and
 *   ≥ 3.5 × for api + worker);
 * - `POST /threads/{id}/runs/stream`: time to the first `values` event, p50 (aim ≤ 5 ms);
 * - CPU ms per completed run in the throughput cell: agentplane's processes with their Postgres
 *   backends, the JS server's process group (it keeps everything in memory). On a shared machine
 *   runs per second swing with other load; CPU per run much less (aim ≤ 7 ms);
 * - what each agentplane run says to Postgres in the throughput cell, counted on the wire by its
 *   processes (bench/support/pg-wire-meter.ts): statements, statements prepared, socket writes
 *   (round trips' starts: pipelined statements share one), chunks read and bytes each way;
 * - the thread-centric streaming protocol ("protocol v2", bench/runs/protocol-v2-calls.ts, as SDK
 *   1.15's ThreadStream speaks it over SSE): `run.start` → first `values` event p50 on an open event
 *   stream (aim: ≤ 1.2 × agentplane's own POST …/runs/stream), and completed protocol runs per
 *   second with 50 in flight (aim: ≥ 3 × the JS server's protocol v2).
 *
 * and the same for agentplane split in two processes, an `api` and a `worker` on one database, so
 * every run crosses processes (queue wake-up and stream fan-out through Postgres).
 *
 * The bench starts a throwaway embedded Postgres (fsync off); each agentplane setup gets a database
 * of its own and runs in child processes (bench/support/agentplane-child.ts), so the load generator
 * does not share a server's event loop. The JS server is installed on first run into
 * bench/peers/langgraph-js and started on this bench's graphs file.
 *
 *   npm run bench:runs -- [--samples 50] [--duration-s 5] [--warmup-s 1] [--concurrency 50] [--rounds 1]
 *     [--targets agentplane,agentplane-split,langgraph-js] [--profile-server <dir>] [--profile-cell <dir>]
 *     [--statements <n>] [--baseline <dir>]...
 *
 * `--baseline <dir>` adds another checkout of agentplane (an older commit: see
 * bench/support/checkouts.ts), one process on a database of its own, measured in every round beside
 * the targets and reported in a column of its own: a before/after on one loaded machine.
 *
 * Each round measures every target (in reverse order on odd rounds); the report keeps each cell's
 * best round; the custom-auth variant's cost is the median of its per-round ratios to plain
 * agentplane (rounds pair the two servers side by side). The same settings are read from BENCH_SAMPLES, BENCH_DURATION_S, BENCH_WARMUP_S,
 * BENCH_CONCURRENCY, BENCH_ROUNDS and BENCH_TARGETS. The target `agentplane-aes` (not run by default)
 * is the one-process agentplane with built-in encryption at rest (the graph's `reply` allowlisted),
 * reported with the ratio agentplane-aes ÷ agentplane per measure (aim ≥ 0.8). The target
 * `agentplane-notrace` (not run by default) is the one-process agentplane with run tracing off
 * (AGENTPLANE_RUN_TRACING=false): the JS server traces nothing, so this is the like-for-like peer.
 * `--profile-server` writes the V8 CPU profiles of the one-process agentplane and of the
 * custom-auth variant into `<dir>` (file names carry each pid). `--profile-cell` writes a CPU profile
 * of the one-process agentplane's throughput cell alone, one file per round (`runs-round-N.cpuprofile`):
 * the part of its life that CPU per run measures. `--statements <n>` loads `pg_stat_statements` into
 * the bench's Postgres and prints, after the last round, the `n` statements each agentplane target
 * (the one process, the api + worker pair, the variants) ran most in its last throughput cell, as
 * calls per run (the extension costs Postgres a little CPU per statement, so CPU per run is best
 * read from a run without it).
 */
import { mkdir } from "node:fs/promises";
import { availableParallelism } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import type { Sql } from "../server/store/db.js";
import { createSql } from "../server/store/db.js";
import { createJsonClient, type JsonClient } from "./agent-crud/json-client.js";
import {
  ensureLangGraphJsInstalled,
  type LangGraphJsServer,
  startLangGraphJs,
} from "./agent-crud/langgraph-js-peer.js";
import { processesMeter, processGroupMeter } from "./runs/cpu-meters.js";
import { createProtocolClient } from "./runs/protocol-v2-calls.js";
import { printStatementsPerRun, type StatementPerRun, statementsPerRun } from "./runs/statements-per-run.js";
import { createStreamClient } from "./runs/stream-call.js";
import { benchEncryption, createBenchApiKey } from "./support/bench-app.js";
import { type BenchPostgres, createBenchDatabase, startBenchPostgres } from "./support/bench-postgres.js";
import { BASELINE_OPTION, baselineCheckouts, type Checkout } from "./support/checkouts.js";
import { listValue, numberValue } from "./support/cli-values.js";
import { runClosedLoop } from "./support/closed-loop.js";
import { type CpuMeter, cpuSecondsBetween } from "./support/cpu-meter.js";
import { CUSTOM_AUTH_AIM_RATIO, CUSTOM_AUTH_VARIANT } from "./support/custom-auth-variant.js";
import { percentile } from "./support/percentile.js";
import type { PgWireCounts } from "./support/pg-wire-meter.js";
import { median, roundRatios } from "./support/round-ratios.js";
import { type AgentplaneChild, spawnAgentplane } from "./support/spawn-agentplane.js";
import { resetStatementStats, STATEMENT_STATS_SETTINGS } from "./support/statement-stats.js";
import { tableRow } from "./support/table-row.js";

/** The graphs file both servers serve: one graph, `agent`. */
const GRAPHS_FILE = fileURLToPath(new URL("./runs/langgraph.json", import.meta.url));
/** The aims (issue 30). */
const AIM_WAIT_P50_MS = 7;
const AIM_THROUGHPUT_RATIO = 3;
/** api + worker: every run crosses processes, and two processes share the cores. */
const AIM_SPLIT_THROUGHPUT_RATIO = 3.5;
const AIM_FIRST_VALUES_P50_MS = 5;
const AIM_CPU_MS_PER_RUN = 7;
/** Protocol v2's first values against agentplane's own run stream's (issue 25). */
const AIM_V2_FIRST_VALUES_RATIO = 1.2;
/** Protocol v2 runs per second against the JS server's protocol v2 (issue 25). */
const AIM_V2_THROUGHPUT_RATIO = 3;
/**
 * Calls before each latency series that are not counted: connections open, code paths warm. A
 * statement's first run on one of the pool's ten connections costs a round trip more (Parse and
 * Describe, then Bind), and a run's statements land on any of them: five calls left most of a
 * series' first calls paying it.
 */
const WARMUP_CALLS = 30;

const TARGETS = [
  "agentplane",
  "agentplane-split",
  "langgraph-js",
  "agentplane-aes",
  "agentplane-notrace",
  CUSTOM_AUTH_VARIANT.label,
] as const;
/** What runs without --targets: the encrypted and custom-auth variants are asked for by name. */
const DEFAULT_TARGETS = ["agentplane", "agentplane-split", "langgraph-js"];
/** The aim for encryption on ÷ off. */
const AIM_ENCRYPTION_RATIO = 0.8;
type Target = (typeof TARGETS)[number];

interface Settings {
  /** Calls per latency series. */
  samples: number;
  /** Measured window of the throughput cell. */
  durationMs: number;
  /** Calls before the throughput window, not counted. */
  warmupMs: number;
  /** Runs in flight in the throughput cell. */
  concurrency: number;
  rounds: number;
  targets: Target[];
  /** Where the one-process agentplane and the custom-auth variant write their CPU profiles, if anywhere. */
  profileDir: string | undefined;
  /** Where the one-process agentplane writes a CPU profile of each round's throughput cell, if anywhere. */
  profileCellDir: string | undefined;
  /** Statements of the one-process agentplane's last throughput cell to list per run; 0 for none. */
  statements: number;
  /** Other checkouts measured beside the targets, each labelled by its folder's name. */
  baselines: Checkout[];
}

/** What the report names each server: the targets, then every baseline. */
function labelsOf(settings: Settings): string[] {
  return [...settings.targets, ...settings.baselines.map((b) => b.label)];
}

function readSettings(): Settings {
  const env = process.env;
  const { values } = parseArgs({
    options: {
      // 50 calls: enough for a p99 that means something at agentplane's speed, while the JS server,
      // at about half a second a run, finishes a series in under half a minute.
      samples: { type: "string", default: env.BENCH_SAMPLES ?? "50" },
      "duration-s": { type: "string", default: env.BENCH_DURATION_S ?? "5" },
      "warmup-s": { type: "string", default: env.BENCH_WARMUP_S ?? "1" },
      // The concurrency for throughput.
      concurrency: { type: "string", default: env.BENCH_CONCURRENCY ?? "50" },
      rounds: { type: "string", default: env.BENCH_ROUNDS ?? "1" },
      targets: { type: "string", default: env.BENCH_TARGETS ?? DEFAULT_TARGETS.join(",") },
      "profile-server": { type: "string" },
      "profile-cell": { type: "string" },
      statements: { type: "string", default: "0" },
      ...BASELINE_OPTION,
    },
  });
  return {
    samples: numberValue("samples", values.samples, 1, true),
    durationMs: numberValue("duration-s", values["duration-s"], 0.1) * 1000,
    warmupMs: numberValue("warmup-s", values["warmup-s"], 0) * 1000,
    concurrency: numberValue("concurrency", values.concurrency, 1, true),
    rounds: numberValue("rounds", values.rounds, 1, true),
    targets: listValue("targets", values.targets, TARGETS),
    profileDir: values["profile-server"] && resolve(values["profile-server"]),
    profileCellDir: values["profile-cell"] && resolve(values["profile-cell"]),
    statements: numberValue("statements", values.statements, 0, true),
    baselines: baselineCheckouts(values.baseline),
  };
}

/** What one round measured on one server. */
interface Cells {
  waitP50: number;
  waitP99: number;
  runsPerSecond: number;
  firstValuesP50: number;
  firstValuesP99: number;
  /** CPU ms the server (and its Postgres backends) spent per completed run in the throughput cell. */
  cpuMsPerRun: number;
  /** The part of it spent by the server's own processes (the rest is Postgres's); NaN for the JS server. */
  serverCpuMsPerRun: number;
  /** What the server's processes said to Postgres per completed run of the throughput cell. */
  wire: PgWireCounts | undefined;
  /** Protocol v2: run.start → first values, p50 and p99 ms. */
  v2FirstValuesP50: number;
  v2FirstValuesP99: number;
  /** Protocol v2 runs completed per second in flight. */
  v2RunsPerSecond: number;
  errors: number;
  firstError: string | undefined;
}

/** What a measured agentplane setup offers besides its port: its processes' wire counters. */
interface Probes {
  meter: CpuMeter | undefined;
  /** The server's own processes among the meter's (the others are its Postgres backends). */
  serverPids: number[];
  /** The Postgres wire counters of the server's processes, summed; absent for the JS server. */
  wire: (() => Promise<PgWireCounts>) | undefined;
  /** What brackets the throughput cell (a CPU profile of it, statement counts), in order. */
  cell: CellBracket[];
}

/** Work done just before and after a throughput cell; `stop` learns how many runs it completed. */
interface CellBracket {
  start(): Promise<void>;
  stop(runs: number): Promise<void>;
}

/** `after - before`, each counter divided by `runs`. */
function wirePerRun(before: PgWireCounts, after: PgWireCounts, runs: number): PgWireCounts {
  const per = (key: keyof PgWireCounts) => (after[key] - before[key]) / runs;
  return {
    statements: per("statements"),
    parses: per("parses"),
    writes: per("writes"),
    reads: per("reads"),
    bytesOut: per("bytesOut"),
    bytesIn: per("bytesIn"),
  };
}

/** The counters of several processes, summed. */
function sumWire(counts: PgWireCounts[]): PgWireCounts {
  const total: PgWireCounts = { statements: 0, parses: 0, writes: 0, reads: 0, bytesOut: 0, bytesIn: 0 };
  for (const c of counts)
    for (const key of Object.keys(total) as (keyof PgWireCounts)[]) total[key] += c[key];
  return total;
}

/** A stateless `/runs/wait` of the graph; throws unless it answers the graph's output. */
async function waitRun(client: JsonClient): Promise<void> {
  const answer = await client.send("POST", "/runs/wait", { assistant_id: "agent", input: {} });
  if (answer.status !== 200 || (answer.json as { reply?: string } | undefined)?.reply !== "ok")
    throw new Error(`HTTP ${answer.status}: ${answer.text.slice(0, 300)}`);
}

/** p50 and p99 of `samples` in ms. */
function quantiles(samples: number[]): { p50: number; p99: number } {
  const sorted = Float64Array.from(samples).sort();
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
}

/** Runs `call` `n` times one after another; returns each call's duration in ms. */
async function series(n: number, call: () => Promise<number | undefined>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    const measured = await call();
    out.push(measured ?? performance.now() - started);
  }
  return out;
}

/** Measures every cell on the server at `port`. */
async function measure(
  port: number,
  headers: Record<string, string>,
  settings: Settings,
  probes: Probes,
): Promise<Cells> {
  const { meter } = probes;
  const one = createJsonClient(port, headers, 1);
  const many = createJsonClient(port, headers, settings.concurrency);
  const streams = createStreamClient(port, headers, 1);
  const v2one = createProtocolClient(port, headers, 1);
  const v2many = createProtocolClient(port, headers, settings.concurrency);
  try {
    await series(WARMUP_CALLS, () => waitRun(one).then(() => undefined));
    const wait = quantiles(await series(settings.samples, () => waitRun(one).then(() => undefined)));

    let completed = 0;
    for (const bracket of probes.cell) await bracket.start();
    const wireBefore = await probes.wire?.();
    const before = await meter?.read();
    const loop = await runClosedLoop(
      async () => {
        await waitRun(many);
        completed++;
      },
      settings.concurrency,
      settings,
    );
    const after = await meter?.read();
    const wireAfter = await probes.wire?.();
    for (const bracket of probes.cell) await bracket.stop(completed);
    // Every completed run of the cell, warm-up included, divides the CPU spent over the whole cell.
    const cpuMsPerRun = before && after ? (cpuSecondsBetween(before, after) * 1000) / completed : Number.NaN;
    const servers = probes.serverPids;
    const only = (ticks: Map<number, number> | undefined) =>
      new Map([...(ticks ?? [])].filter(([pid]) => servers.includes(pid)));
    const serverCpuMsPerRun =
      before && after && servers.length > 0
        ? (cpuSecondsBetween(only(before), only(after)) * 1000) / completed
        : Number.NaN;
    const wire = wireBefore && wireAfter ? wirePerRun(wireBefore, wireAfter, completed) : undefined;

    const streamRun = async () => {
      // A thread of its own per run, created before the clock starts: only the run is timed.
      const thread = await one.send("POST", "/threads", {});
      const threadId = (thread.json as { thread_id?: string } | undefined)?.thread_id;
      if (thread.status !== 200 || !threadId) throw new Error(`thread: HTTP ${thread.status} ${thread.text}`);
      const timing = await streams.stream(`/threads/${threadId}/runs/stream`, {
        assistant_id: "agent",
        input: {},
        stream_mode: ["values"],
      });
      return timing.firstValuesMs;
    };
    await series(WARMUP_CALLS, streamRun);
    const first = quantiles(await series(settings.samples, streamRun));

    const v2Run = () => v2one.run("agent", {}).then((timing) => timing.firstValuesMs);
    await series(WARMUP_CALLS, v2Run);
    const v2First = quantiles(await series(settings.samples, v2Run));
    const v2Loop = await runClosedLoop(
      async () => {
        await v2many.run("agent", {});
      },
      settings.concurrency,
      settings,
    );
    return {
      waitP50: wait.p50,
      waitP99: wait.p99,
      runsPerSecond: loop.rps,
      firstValuesP50: first.p50,
      firstValuesP99: first.p99,
      cpuMsPerRun,
      serverCpuMsPerRun,
      wire,
      v2FirstValuesP50: v2First.p50,
      v2FirstValuesP99: v2First.p99,
      v2RunsPerSecond: v2Loop.rps,
      errors: loop.errors + v2Loop.errors,
      firstError: loop.firstError ?? v2Loop.firstError,
    };
  } finally {
    one.close();
    many.close();
    streams.close();
    v2one.close();
    v2many.close();
  }
}

/** The best of several rounds: lowest latencies, highest throughput, errors summed. */
function best(rounds: Cells[]): Cells | undefined {
  if (rounds.length === 0) return undefined;
  const min = (f: (c: Cells) => number) => Math.min(...rounds.map(f));
  return {
    waitP50: min((c) => c.waitP50),
    waitP99: min((c) => c.waitP99),
    runsPerSecond: Math.max(...rounds.map((c) => c.runsPerSecond)),
    firstValuesP50: min((c) => c.firstValuesP50),
    firstValuesP99: min((c) => c.firstValuesP99),
    cpuMsPerRun: min((c) => c.cpuMsPerRun),
    serverCpuMsPerRun: min((c) => c.serverCpuMsPerRun),
    // The counts hardly vary between rounds: the last round's.
    wire: rounds[rounds.length - 1]?.wire,
    v2FirstValuesP50: min((c) => c.v2FirstValuesP50),
    v2FirstValuesP99: min((c) => c.v2FirstValuesP99),
    v2RunsPerSecond: Math.max(...rounds.map((c) => c.v2RunsPerSecond)),
    errors: rounds.reduce((sum, c) => sum + c.errors, 0),
    firstError: rounds.find((c) => c.firstError)?.firstError,
  };
}

/** Prints the table with ratios and aims; returns false when an aim is missed or a call failed. */
function printReport(settings: Settings, results: Map<string, Cells[]>): boolean {
  const labels = labelsOf(settings);
  const cells = new Map(labels.map((l) => [l, best(results.get(l) ?? [])]));
  const ours = cells.get("agentplane");
  const js = cells.get("langgraph-js");
  const split = cells.get("agentplane-split");
  const aes = cells.get("agentplane-aes");
  const widths = [44, ...labels.map((l) => Math.max(12, l.length)), 14, 22, ...(aes ? [22] : [])];
  const aesHeader = aes ? [`aes ÷ plain (≥ ${AIM_ENCRYPTION_RATIO})`] : [];
  console.log(
    `\n${tableRow(["measure", ...labels, "JS vs agentplane", "aim (agentplane)", ...aesHeader], widths)}`,
  );
  let ok = true;
  const fmt = (n: number | undefined, digits = 1) =>
    n === undefined || Number.isNaN(n) ? "-" : n.toFixed(digits);
  const row = (
    name: string,
    pick: (c: Cells) => number,
    ratio: "faster" | "more" | "none",
    aim?: { text: string; met: (value: number, ratio: number) => boolean | undefined },
  ) => {
    const values = labels.map((l) => {
      const c = cells.get(l);
      return c ? pick(c) : undefined;
    });
    const a = ours ? pick(ours) : Number.NaN;
    const j = js ? pick(js) : Number.NaN;
    const r = ratio === "faster" ? j / a : ratio === "more" ? a / j : Number.NaN;
    const ratioText = Number.isNaN(r) ? "" : `${r.toFixed(1)}× ${ratio === "faster" ? "faster" : "more"}`;
    let aimText = "";
    if (aim && ours) {
      const met = aim.met(a, r);
      if (met === false) ok = false;
      aimText = `${aim.text} ${met === undefined ? "n/a" : met ? "PASS" : "FAIL"}`;
    }
    // Encrypted ÷ plain, as speed: above 1 means encryption made it faster, the aim is ≥ 0.8.
    const aesRatio = aes ? (ratio === "more" ? pick(aes) / a : a / pick(aes)) : undefined;
    const aesText = aesRatio === undefined ? [] : [fmt(aesRatio, 2)];
    console.log(tableRow([name, ...values.map((v) => fmt(v)), ratioText, aimText, ...aesText], widths));
  };
  row("POST /runs/wait, 1 at a time: p50 ms", (c) => c.waitP50, "faster", {
    text: `≤ ${AIM_WAIT_P50_MS} ms`,
    met: (v) => v <= AIM_WAIT_P50_MS,
  });
  row("POST /runs/wait, 1 at a time: p99 ms", (c) => c.waitP99, "faster");
  row(`completed runs/s, ${settings.concurrency} in flight`, (c) => c.runsPerSecond, "more", {
    text: `≥ ${AIM_THROUGHPUT_RATIO}× JS`,
    // Without the JS server in the run there is nothing to compare with.
    met: (_v, r) => (Number.isNaN(r) ? undefined : r >= AIM_THROUGHPUT_RATIO),
  });
  if (split && js) {
    const r = split.runsPerSecond / js.runsPerSecond;
    const met = r >= AIM_SPLIT_THROUGHPUT_RATIO;
    if (!met) ok = false;
    console.log(
      `  api + worker: ${r.toFixed(1)}× the JS server's runs/s (aim ≥ ${AIM_SPLIT_THROUGHPUT_RATIO}×) ${met ? "PASS" : "FAIL"}`,
    );
  }
  row("POST …/runs/stream → first values: p50 ms", (c) => c.firstValuesP50, "faster", {
    text: `≤ ${AIM_FIRST_VALUES_P50_MS} ms`,
    met: (v) => v <= AIM_FIRST_VALUES_P50_MS,
  });
  row("POST …/runs/stream → first values: p99 ms", (c) => c.firstValuesP99, "faster");
  row(`CPU ms per run, ${settings.concurrency} in flight (+ Postgres)`, (c) => c.cpuMsPerRun, "faster", {
    text: `≤ ${AIM_CPU_MS_PER_RUN} ms`,
    met: (v) => v <= AIM_CPU_MS_PER_RUN,
  });
  row("  of it the server's processes", (c) => c.serverCpuMsPerRun, "none");
  const wireRow = (name: string, pick: (w: PgWireCounts) => number, digits: number) => {
    const values = labels.map((l) => {
      const w = cells.get(l)?.wire;
      return w ? fmt(pick(w), digits) : "-";
    });
    console.log(tableRow([name, ...values], widths));
  };
  wireRow("Postgres statements per run", (w) => w.statements, 1);
  wireRow("  of them prepared (Parse) per run", (w) => w.parses, 2);
  wireRow("Postgres socket writes per run", (w) => w.writes, 1);
  wireRow("Postgres socket reads per run", (w) => w.reads, 1);
  wireRow("bytes to Postgres per run", (w) => w.bytesOut, 0);
  wireRow("bytes from Postgres per run", (w) => w.bytesIn, 0);
  const legacyFirst = ours?.firstValuesP50 ?? Number.NaN;
  row("protocol v2 run.start → first values: p50 ms", (c) => c.v2FirstValuesP50, "faster", {
    text: `≤ ${AIM_V2_FIRST_VALUES_RATIO}× runs/stream's`,
    met: (v) => (Number.isNaN(legacyFirst) ? undefined : v <= AIM_V2_FIRST_VALUES_RATIO * legacyFirst),
  });
  row("protocol v2 run.start → first values: p99 ms", (c) => c.v2FirstValuesP99, "faster");
  row(`protocol v2 completed runs/s, ${settings.concurrency} in flight`, (c) => c.v2RunsPerSecond, "more", {
    text: `≥ ${AIM_V2_THROUGHPUT_RATIO}× JS`,
    met: (_v, r) => (Number.isNaN(r) ? undefined : r >= AIM_V2_THROUGHPUT_RATIO),
  });
  for (const label of labels) {
    const c = cells.get(label);
    if (c && c.errors > 0) {
      ok = false;
      console.log(`  ${label}: ${c.errors} failed runs in the throughput cell, first: ${c.firstError}`);
    }
  }
  return ok;
}

/**
 * This checkout against each baseline, per measure, as per-round ratios (a round ran both side by
 * side, so a loaded spell of the machine weighs on both): the ratio of best rounds, with the median
 * and range of the per-round ratios. CPU and latency are baseline ÷ this checkout, so above 1 is
 * always this checkout doing better.
 */
function printBaselineRatios(settings: Settings, results: Map<string, Cells[]>): void {
  const ours = results.get("agentplane") ?? [];
  if (ours.length === 0) return;
  for (const baseline of settings.baselines) {
    const theirs = results.get(baseline.label) ?? [];
    if (theirs.length === 0) continue;
    const inverse = (cells: Cells[], pick: (c: Cells) => number) => cells.map((c) => 1 / pick(c));
    console.log(`\nagentplane vs ${baseline.label}, per round (above 1: this checkout does better):`);
    console.log(
      `  CPU ms per run: ${roundRatios(
        inverse(ours, (c) => c.cpuMsPerRun),
        inverse(theirs, (c) => c.cpuMsPerRun),
      )}`,
    );
    console.log(
      `  of it the server's processes: ${roundRatios(
        inverse(ours, (c) => c.serverCpuMsPerRun),
        inverse(theirs, (c) => c.serverCpuMsPerRun),
      )}`,
    );
    console.log(
      `  runs/s at concurrency: ${roundRatios(
        ours.map((c) => c.runsPerSecond),
        theirs.map((c) => c.runsPerSecond),
      )}`,
    );
    console.log(
      `  wait p50: ${roundRatios(
        inverse(ours, (c) => c.waitP50),
        inverse(theirs, (c) => c.waitP50),
      )}`,
    );
    console.log(
      `  first values p50: ${roundRatios(
        inverse(ours, (c) => c.firstValuesP50),
        inverse(theirs, (c) => c.firstValuesP50),
      )}`,
    );
  }
}

/**
 * The cost of custom auth, per measure: the ratio of the custom-auth variant to plain agentplane in
 * each round (the two ran beside each other, so a round's load weighs on both), reported as the
 * ratio of best rounds with the median and range of the per-round ratios. Throughput is variant ÷
 * plain; latency and CPU per run are plain ÷ variant, so below 1 is always the variant being slower
 * or costlier. The aim is judged on the median of the per-round ratios: on a shared machine one
 * round of either server can swing by a fifth, and the best of each, taken from different rounds,
 * paired a lucky round with an unlucky one. False when a median misses the aim; true when either
 * was not measured.
 */
function printCustomAuthCost(results: Map<string, Cells[]>): boolean {
  const plain = results.get("agentplane") ?? [];
  const variant = results.get(CUSTOM_AUTH_VARIANT.label) ?? [];
  if (plain.length === 0 || variant.length === 0) return true;
  const inverse = (cells: Cells[], pick: (c: Cells) => number) => cells.map((c) => 1 / pick(c));
  const measures: [string, number[], number[]][] = [
    ["runs/s at concurrency", variant.map((c) => c.runsPerSecond), plain.map((c) => c.runsPerSecond)],
    ["wait p50 (plain ÷ auth)", inverse(variant, (c) => c.waitP50), inverse(plain, (c) => c.waitP50)],
    [
      "first values p50 (plain ÷ auth)",
      inverse(variant, (c) => c.firstValuesP50),
      inverse(plain, (c) => c.firstValuesP50),
    ],
    [
      "CPU ms per run (plain ÷ auth)",
      inverse(variant, (c) => c.cpuMsPerRun),
      inverse(plain, (c) => c.cpuMsPerRun),
    ],
  ];
  console.log(
    `\ncustom auth cost (${CUSTOM_AUTH_VARIANT.label} vs agentplane, per-round ratios; aim: median ≥ ${CUSTOM_AUTH_AIM_RATIO}):`,
  );
  let ok = true;
  for (const [name, ours, theirs] of measures) {
    const paired = median(ours.map((v, i) => v / (theirs[i] ?? Number.NaN)));
    const met = paired >= CUSTOM_AUTH_AIM_RATIO;
    if (!met) ok = false;
    console.log(`  ${name}: ${roundRatios(ours, theirs)} ${met ? "PASS" : "FAIL"}`);
  }
  return ok;
}

/** Starts the servers the targets need and returns their ports (and what to stop). */
async function startServers(settings: Settings, pg: BenchPostgres, apiKey: string, admin: Sql) {
  const ports = new Map<string, number>();
  const meters = new Map<string, CpuMeter>();
  const children: AgentplaneChild[] = [];
  /** The processes of each agentplane target. */
  const processes = new Map<string, AgentplaneChild[]>();
  /** The database of each agentplane target. */
  const databases = new Map<string, string>();
  let peer: LangGraphJsServer | undefined;
  /** Meters the CPU of a target's processes and their backends in `database`. */
  const meterProcesses = (target: string, database: string, pids: number[]): void => {
    databases.set(target, database);
    meters.set(target, processesMeter(admin, database, pids));
  };
  const setup = (databaseUrl: string, data: string) => ({
    databaseUrl,
    apiKey,
    dataDir: join(pg.dir, data),
    graphConfigPath: GRAPHS_FILE,
  });
  if (settings.targets.includes("agentplane")) {
    const child = await spawnAgentplane(setup(pg.url, "data"), settings.profileDir);
    children.push(child);
    ports.set("agentplane", child.port);
    processes.set("agentplane", [child]);
    meterProcesses("agentplane", "bench", [child.pid]);
  }
  if (settings.targets.includes("agentplane-split")) {
    const url = await createBenchDatabase(pg, "bench_split");
    // The API process first: it creates the admin key the worker's database shares.
    const api = await spawnAgentplane({ ...setup(url, "data-api"), role: "api" }, undefined);
    children.push(api);
    const worker = await spawnAgentplane({ ...setup(url, "data-worker"), role: "worker" }, undefined);
    children.push(worker);
    ports.set("agentplane-split", api.port);
    processes.set("agentplane-split", [api, worker]);
    meterProcesses("agentplane-split", "bench_split", [api.pid, worker.pid]);
  }
  if (settings.targets.includes("agentplane-notrace")) {
    const url = await createBenchDatabase(pg, "bench_notrace");
    const child = await spawnAgentplane({ ...setup(url, "data-notrace"), runTracing: false }, undefined);
    children.push(child);
    ports.set("agentplane-notrace", child.port);
    processes.set("agentplane-notrace", [child]);
    meterProcesses("agentplane-notrace", "bench_notrace", [child.pid]);
  }
  if (settings.targets.includes("agentplane-aes")) {
    const url = await createBenchDatabase(pg, "bench_aes");
    const child = await spawnAgentplane(
      { ...setup(url, "data-aes"), encryption: benchEncryption(["reply"]) },
      undefined,
    );
    children.push(child);
    ports.set("agentplane-aes", child.port);
    processes.set("agentplane-aes", [child]);
    meterProcesses("agentplane-aes", "bench_aes", [child.pid]);
  }
  for (const [index, baseline] of settings.baselines.entries()) {
    const database = `bench_baseline_${index}`;
    const url = await createBenchDatabase(pg, database);
    const child = await spawnAgentplane(setup(url, `data-baseline-${index}`), undefined, baseline.root);
    children.push(child);
    ports.set(baseline.label, child.port);
    processes.set(baseline.label, [child]);
    meterProcesses(baseline.label, database, [child.pid]);
  }
  if (settings.targets.includes(CUSTOM_AUTH_VARIANT.label)) {
    const url = await createBenchDatabase(pg, "bench_custom_auth");
    const graphConfigPath = await CUSTOM_AUTH_VARIANT.graphsFile(GRAPHS_FILE, pg.dir);
    // The issue measures custom auth and encryption on together.
    const encryption = benchEncryption(["reply"]);
    const child = await spawnAgentplane(
      { ...setup(url, "data-custom-auth"), graphConfigPath, encryption },
      settings.profileDir,
    );
    children.push(child);
    ports.set(CUSTOM_AUTH_VARIANT.label, child.port);
    processes.set(CUSTOM_AUTH_VARIANT.label, [child]);
    meterProcesses(CUSTOM_AUTH_VARIANT.label, "bench_custom_auth", [child.pid]);
  }
  if (settings.targets.includes("langgraph-js")) {
    peer = await startLangGraphJs(GRAPHS_FILE);
    ports.set("langgraph-js", peer.port);
    meters.set("langgraph-js", processGroupMeter(peer.pgid));
  }
  const stop = async () => {
    for (const child of children.reverse()) await child.stop();
    await peer?.stop();
  };
  return { ports, meters, processes, databases, peer, stop };
}

/** The statements per run of each agentplane target's last throughput cell, by target. */
type StatementsByTarget = Map<string, StatementPerRun[]>;

/**
 * What brackets an agentplane target's throughput cell in `round`: a CPU profile of the one-process
 * target's cell with `--profile-cell`, and with `--statements` the statements the target's database
 * ran, per run (kept in `statements` under the target's label).
 */
function cellBrackets(
  settings: Settings,
  round: number,
  target: string,
  database: string | undefined,
  child: AgentplaneChild | undefined,
  admin: Sql,
  statements: StatementsByTarget,
): CellBracket[] {
  const brackets: CellBracket[] = [];
  const dir = settings.profileCellDir;
  if (target === "agentplane" && child && dir) {
    const file = join(dir, `runs-round-${round + 1}.cpuprofile`);
    brackets.push({ start: () => child.startProfile(), stop: () => child.stopProfile(file) });
  }
  if (settings.statements > 0 && database)
    brackets.push({
      start: () => resetStatementStats(admin),
      stop: async (runs) => {
        statements.set(target, await statementsPerRun(admin, database, settings.statements, runs));
      },
    });
  return brackets;
}

async function main(settings: Settings): Promise<void> {
  if (settings.targets.includes("langgraph-js")) await ensureLangGraphJsInstalled();
  if (settings.profileCellDir) await mkdir(settings.profileCellDir, { recursive: true });
  const pg = await startBenchPostgres("runs", settings.statements > 0 ? STATEMENT_STATS_SETTINGS : {});
  const apiKey = createBenchApiKey();
  // A superuser connection that finds each database's backends for the CPU meters.
  const admin = createSql(pg.url, { max: 1, statementTimeoutMs: 0, applicationName: "bench-runs-meter" });
  let servers: Awaited<ReturnType<typeof startServers>> | undefined;
  try {
    servers = await startServers(settings, pg, apiKey, admin);
    console.log(
      "runs bench: agentplane (Postgres, fsync off; one process, and api + worker processes)" +
        (servers.peer
          ? ` vs langgraph-js (@langchain/langgraph-cli ${servers.peer.version} dev, in-memory)`
          : "") +
        (settings.baselines.length > 0
          ? ` beside ${settings.baselines.map((b) => b.label).join(", ")} (one process each, databases of their own)`
          : "") +
        `, Node ${process.version}, ${availableParallelism()} cores; one-node graph; ` +
        `${settings.samples} calls per latency series, ${settings.durationMs / 1000} s at ` +
        `${settings.concurrency} in flight after ${settings.warmupMs / 1000} s warm-up; best of ${settings.rounds} round(s)`,
    );
    const results = new Map<string, Cells[]>();
    const statements: StatementsByTarget = new Map();
    for (let round = 0; round < settings.rounds; round++) {
      const labels = labelsOf(settings);
      const order = round % 2 === 0 ? labels : [...labels].reverse();
      for (const target of order) {
        const port = servers.ports.get(target);
        if (port === undefined) continue;
        const headers =
          target === CUSTOM_AUTH_VARIANT.label ? CUSTOM_AUTH_VARIANT.headers() : { "x-api-key": apiKey };
        const children = servers.processes.get(target);
        const probes: Probes = {
          meter: servers.meters.get(target),
          serverPids: (children ?? []).map((c) => c.pid),
          wire: children && (async () => sumWire(await Promise.all(children.map((c) => c.wire())))),
          cell: cellBrackets(
            settings,
            round,
            target,
            servers.databases.get(target),
            children?.[0],
            admin,
            statements,
          ),
        };
        const cells = await measure(port, headers, settings, probes);
        results.set(target, [...(results.get(target) ?? []), cells]);
        console.log(
          `  round ${round + 1} ${target}: wait p50 ${cells.waitP50.toFixed(1)} ms, ` +
            `${cells.runsPerSecond.toFixed(0)} runs/s, first values p50 ${cells.firstValuesP50.toFixed(1)} ms; ` +
            `protocol v2: first values p50 ${cells.v2FirstValuesP50.toFixed(1)} ms, ${cells.v2RunsPerSecond.toFixed(0)} runs/s`,
        );
      }
    }
    if (!printReport(settings, results)) process.exitCode = 1;
    printBaselineRatios(settings, results);
    for (const [target, rows] of statements)
      printStatementsPerRun(rows, `statements of ${target}'s last throughput cell, per run`);
    if (!printCustomAuthCost(results)) process.exitCode = 1;
  } finally {
    await servers?.stop();
    await admin.end();
    await pg.stop();
  }
  if (settings.profileDir) console.log(`agentplane CPU profile written to ${settings.profileDir}`);
}

await main(readSettings());
