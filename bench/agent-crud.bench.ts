/**
 * Agent CRUD bench (`npm run bench:agent-crud`): thread and store CRUD over REST against agentplane
 * and the JS reference server (`langgraphjs dev` from `@langchain/langgraph-cli`, in-memory) side by
 * side in one run, same client (node:http keep-alive Agent, maxSockets = concurrency), same machine.
 * Operations: GET /threads/{id}, POST /threads/search with 10,000 threads present (a filter matching
 * 1% of them, and one matching all), PUT /store/items, POST /store/items/search and POST /threads,
 * each at every concurrency. Aim: agentplane req/s ≥ 1.0 × the JS server's, while durable in Postgres.
 *
 * The bench starts a throwaway embedded Postgres (fsync off) and runs agentplane in a child process
 * (bench/support/agentplane-child.ts), so the load generator does not share the server's event loop. The JS
 * server runs as its CLI starts it; it is installed on first run into bench/peers/langgraph-js (its own
 * package.json; never by the root `npm install`). Both servers are seeded through their REST API first:
 * 10,000 threads and 1,000 store items each; each agentplane database is then analyzed, so every
 * server is measured with planner statistics, as autovacuum leaves a server soon after a bulk load.
 *
 *   npm run bench:agent-crud -- [--duration-s 2] [--warmup-s 0.5] [--rounds 3] [--concurrency 1,32]
 *     [--ops get-thread,search-threads,...] [--targets agentplane,langgraph-js] [--profile-server <dir>]
 *     [--baseline <dir>]...
 *
 * `--baseline <dir>` adds another checkout of agentplane (an older commit: see
 * bench/support/checkouts.ts), run the same way on a database of its own and reported beside this
 * one with the ratio agentplane / baseline. To compare checkouts only, add `--targets agentplane`.
 *
 * The same settings are read from BENCH_DURATION_S, BENCH_WARMUP_S, BENCH_ROUNDS, BENCH_CONCURRENCY,
 * BENCH_OPS and BENCH_TARGETS. `--profile-server` writes the V8 CPU profiles of agentplane and of the
 * custom-auth variant into `<dir>` (file names carry each process's pid).
 *
 * `--encryption` adds agentplane with built-in encryption at rest (AGENTPLANE_AES_KEY, the seeded
 * metadata's `n`, the created threads' `seq` and the store values' `text` allowlisted) on a database
 * of its own, reported as `agentplane+aes` with the ratio agentplane+aes / agentplane (aim ≥ 0.8).
 */
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createSql } from "../server/store/db.js";
import { createJsonClient } from "./agent-crud/json-client.js";
import {
  ensureLangGraphJsInstalled,
  type LangGraphJsServer,
  startLangGraphJs,
} from "./agent-crud/langgraph-js-peer.js";
import {
  OPERATION_LABELS,
  OPERATIONS,
  type OperationName,
  operationCall,
  SEED_THREADS,
  type Seeded,
} from "./agent-crud/operations.js";
import { seedServer } from "./agent-crud/seed.js";
import { BENCH_DB_POOL_MAX, benchEncryption, createBenchApiKey } from "./support/bench-app.js";
import { analyzeBenchDatabase, createBenchDatabase, startBenchPostgres } from "./support/bench-postgres.js";
import { BASELINE_OPTION, baselineCheckouts, type Checkout, THIS_CHECKOUT } from "./support/checkouts.js";
import { listValue } from "./support/cli-values.js";
import type { CellResult } from "./support/closed-loop.js";
import { type CpuMeter, cpuMeter } from "./support/cpu-meter.js";
import { CUSTOM_AUTH_AIM_RATIO, CUSTOM_AUTH_VARIANT } from "./support/custom-auth-variant.js";
import { type LoopSettings, loopOptions, readLoopSettings } from "./support/loop-settings.js";
import { type MeteredResult, runMeteredLoop } from "./support/metered-loop.js";
import { median, roundRatios } from "./support/round-ratios.js";
import { type AgentplaneChild, spawnAgentplane } from "./support/spawn-agentplane.js";
import { tableRow } from "./support/table-row.js";

/** The aim: agentplane keeps at least the JS server's throughput. */
const AIM_RATIO = 1.0;
/** The label of the encrypted variant (`--encryption`). */
const ENCRYPTED = "agentplane+aes";
/** Keys of the bench data that the encrypted variant encrypts: carried by writes and reads, never filtered on. */
const ENCRYPTED_KEYS = ["n", "seq", "text"];
/** The issue's aim for encryption on ÷ off. */
const ENCRYPTION_AIM = 0.8;
/** Requests in flight while seeding: enough to keep either server busy. */
const SEED_CONCURRENCY = 32;

const TARGETS = ["agentplane", "langgraph-js", CUSTOM_AUTH_VARIANT.label] as const;
type Target = (typeof TARGETS)[number];

interface Settings extends LoopSettings {
  ops: OperationName[];
  targets: Target[];
  /** Other checkouts of agentplane measured beside this one. */
  baselines: Checkout[];
  /** Whether agentplane with encryption at rest is measured beside it. */
  encryption: boolean;
}

function readSettings(): Settings {
  const env = process.env;
  const { values } = parseArgs({
    options: {
      // Three rounds: on a shared 2-core VM one cell can vary by ±20 % between rounds; best of three
      // keeps a slow round of either server from deciding the ratio.
      ...loopOptions({ durationS: "2", warmupS: "0.5", rounds: "3", concurrency: "1,32" }),
      ops: { type: "string", default: env.BENCH_OPS ?? OPERATIONS.join(",") },
      targets: { type: "string", default: env.BENCH_TARGETS ?? TARGETS.join(",") },
      ...BASELINE_OPTION,
      encryption: { type: "boolean", default: env.BENCH_ENCRYPTION === "1" },
    },
  });
  const ops = listValue("ops", values.ops, OPERATIONS);
  return {
    ...readLoopSettings(values),
    // Always in the order of OPERATIONS: thread creation last, so that searches see exactly the seed.
    ops: OPERATIONS.filter((op) => ops.includes(op)),
    targets: listValue("targets", values.targets, TARGETS),
    baselines: baselineCheckouts(values.baseline),
    encryption: values.encryption === true,
  };
}

/** A server under test: where it listens and what it was seeded with. */
interface Server {
  port: number;
  seeded: Seeded;
}

/** Cell results by `op/concurrency/label`, one per round. */
type Results = Map<string, MeteredResult[]>;

/** What the report names each server: the targets, and every baseline by its folder's name. */
function labelsOf(settings: Settings): string[] {
  return [
    ...settings.targets,
    ...(settings.encryption ? [ENCRYPTED] : []),
    ...settings.baselines.map((b) => b.label),
  ];
}

/**
 * Each operation in turn: every round runs every concurrency on every target; odd rounds run the
 * targets in reverse so that neither always goes first.
 */
async function runRounds(
  settings: Settings,
  servers: Map<string, Server>,
  apiKey: string,
  meters: Map<string, CpuMeter>,
): Promise<Results> {
  const results: Results = new Map();
  const labels = labelsOf(settings);
  for (const op of settings.ops) {
    for (let round = 0; round < settings.rounds; round++) {
      const order = round % 2 === 0 ? labels : [...labels].reverse();
      for (const concurrency of settings.concurrencies) {
        for (const target of order) {
          const server = servers.get(target);
          if (!server) continue;
          const client = createJsonClient(server.port, headersOf(target, apiKey), concurrency);
          const call = operationCall(op, server.seeded);
          const result = await runMeteredLoop(
            meters.get(target),
            (seq) => call(client, seq),
            concurrency,
            settings,
          ).finally(() => client.close());
          const key = `${op}/${concurrency}/${target}`;
          results.set(key, [...(results.get(key) ?? []), result]);
          console.log(
            `  ${op} round ${round + 1} c=${concurrency} ${target}: ${result.rps.toFixed(0)} req/s`,
          );
        }
      }
    }
  }
  return results;
}

/** The headers a target's requests carry: the custom-auth variant's JWT, else the admin key. */
function headersOf(label: string, apiKey: string): Record<string, string> {
  return label === CUSTOM_AUTH_VARIANT.label ? CUSTOM_AUTH_VARIANT.headers() : { "x-api-key": apiKey };
}

/**
 * The cost of custom auth: per operation × concurrency, the custom-auth variant's best round over
 * plain agentplane's with the median and range of same-round ratios, and the CPU ms per request of
 * each (server and its Postgres backends, median over rounds), which a shared machine's load moves
 * far less than throughput. The aim is judged on the median of the same-round ratios (the two
 * servers ran side by side), not on bests that may come from different rounds. False when it misses
 * the aim; true when either was not measured.
 */
function printCustomAuthCost(settings: Settings, results: Results): boolean {
  const label = CUSTOM_AUTH_VARIANT.label;
  if (!settings.targets.includes(label) || !settings.targets.includes("agentplane")) return true;
  console.log(
    `\ncustom auth cost (${label} ÷ agentplane; aim: median of round ratios ≥ ${CUSTOM_AUTH_AIM_RATIO}):`,
  );
  let ok = true;
  for (const op of settings.ops) {
    for (const concurrency of settings.concurrencies) {
      const rps = (l: string) => (results.get(`${op}/${concurrency}/${l}`) ?? []).map((c) => c.rps);
      const cpu = (l: string) =>
        median((results.get(`${op}/${concurrency}/${l}`) ?? []).map((c) => c.cpuMs)).toFixed(3);
      const plain = rps("agentplane");
      const ratio = median(rps(label).map((v, i) => v / (plain[i] ?? Number.NaN)));
      if (!(ratio >= CUSTOM_AUTH_AIM_RATIO)) ok = false;
      console.log(
        `  ${OPERATION_LABELS[op]} c=${concurrency}: ${roundRatios(rps(label), rps("agentplane"))} ${ratio >= CUSTOM_AUTH_AIM_RATIO ? "PASS" : "FAIL"}; CPU ms/request ${cpu(label)} vs ${cpu("agentplane")}`,
      );
    }
  }
  return ok;
}

/** The best round of a cell: most requests per second. */
function bestOf(cells: readonly CellResult[]): CellResult | undefined {
  return cells.reduce<CellResult | undefined>((a, b) => (a && a.rps >= b.rps ? a : b), undefined);
}

/**
 * Prints one row per operation × concurrency: each server's best round (errors summed over all
 * rounds), the agentplane / JS ratio against the aim and, per baseline, the ratio of the best
 * rounds with the median and range of same-round ratios. Returns false when the JS ratio misses the aim or a
 * call failed.
 */
function printReport(settings: Settings, results: Results): boolean {
  const labels = labelsOf(settings);
  const baselines = settings.baselines.map((b) => b.label);
  const peer = labels.includes("agentplane") && labels.includes("langgraph-js");
  const headers = ["operation", "c", ...labels.flatMap((l) => [l, "p50 ms", "p99 ms"])];
  const widths = [32, 3, ...labels.flatMap((l) => [Math.max(10, l.length), 7, 7])];
  if (peer) headers.push("÷ JS", `aim ≥ ${AIM_RATIO.toFixed(1)}`);
  if (peer) widths.push(5, 9);
  if (settings.encryption) {
    headers.push(`÷ plain (aim ≥ ${ENCRYPTION_AIM})`);
    widths.push(34);
  }
  for (const b of baselines) {
    headers.push(`÷ ${b}`);
    widths.push(Math.max(34, b.length + 2));
  }
  console.log(`\n${tableRow(headers, widths)}`);
  console.log(tableRow(["", "", ...labels.flatMap(() => ["req/s", "", ""])], widths));
  let ok = true;
  const notes: string[] = [];
  for (const op of settings.ops) {
    for (const concurrency of settings.concurrencies) {
      const row = [OPERATION_LABELS[op], String(concurrency)];
      const cellsOf = (label: string) => results.get(`${op}/${concurrency}/${label}`) ?? [];
      for (const label of labels) {
        const cells = cellsOf(label);
        const top = bestOf(cells);
        row.push(
          top ? top.rps.toFixed(0) : "-",
          top ? top.p50.toFixed(2) : "-",
          top ? top.p99.toFixed(2) : "-",
        );
        const errors = cells.reduce((sum, c) => sum + c.errors, 0);
        if (errors > 0) {
          ok = false;
          const first = cells.find((c) => c.firstError)?.firstError;
          notes.push(`${op} c=${concurrency} ${label}: ${errors} errors, first: ${first}`);
        }
      }
      const ours = bestOf(cellsOf("agentplane"));
      const theirs = bestOf(cellsOf("langgraph-js"));
      if (peer) {
        const ratio = ours && theirs ? ours.rps / theirs.rps : Number.NaN;
        if (!(ratio >= AIM_RATIO)) ok = false;
        row.push(ratio.toFixed(2), ratio >= AIM_RATIO ? "PASS" : "FAIL");
      }
      const rps = (label: string) => cellsOf(label).map((c) => c.rps);
      if (settings.encryption) row.push(roundRatios(rps(ENCRYPTED), rps("agentplane")));
      for (const b of baselines) row.push(roundRatios(rps("agentplane"), rps(b)));
      console.log(tableRow(row, widths));
    }
  }
  for (const note of notes) console.log(`  ${note}`);
  if (baselines.length > 0) printCpu(settings, results);
  return ok;
}

/**
 * CPU ms per request of agentplane and each baseline (the server and its Postgres backends, median
 * over rounds), and per baseline the ratio baseline CPU / agentplane CPU: above 1 means agentplane
 * is cheaper, as for throughput. On a shared machine it is steadier than requests per second.
 */
function printCpu(settings: Settings, results: Results): void {
  const labels = ["agentplane", ...settings.baselines.map((b) => b.label)];
  const widths = [32, 3, ...labels.map((l) => Math.max(10, l.length)), ...labels.slice(1).map(() => 34)];
  console.log(
    `\n${tableRow(["CPU ms per request (median)", "c", ...labels, ...labels.slice(1).map((b) => `÷ ${b}`)], widths)}`,
  );
  for (const op of settings.ops) {
    for (const concurrency of settings.concurrencies) {
      const cpu = (label: string) => (results.get(`${op}/${concurrency}/${label}`) ?? []).map((r) => r.cpuMs);
      const inverse = (label: string) => cpu(label).map((ms) => 1 / ms);
      const row = [
        OPERATION_LABELS[op],
        String(concurrency),
        ...labels.map((l) => median(cpu(l)).toFixed(3)),
      ];
      for (const b of labels.slice(1)) row.push(roundRatios(inverse("agentplane"), inverse(b)));
      console.log(tableRow(row, widths));
    }
  }
}

async function main(settings: Settings): Promise<void> {
  if (settings.targets.includes("langgraph-js")) await ensureLangGraphJsInstalled();
  const pg = await startBenchPostgres("agent-crud");
  const apiKey = createBenchApiKey();
  const children: AgentplaneChild[] = [];
  const meters = new Map<string, CpuMeter>();
  // A superuser connection that finds each database's backends for the CPU meters.
  const admin = createSql(pg.url, {
    max: 1,
    statementTimeoutMs: 0,
    applicationName: "bench-agent-crud-meter",
  });
  let peer: LangGraphJsServer | undefined;
  try {
    const ports = new Map<string, number>();
    // Each agentplane server's database, analyzed once it is seeded.
    const databases = new Map<string, string>();
    if (settings.targets.includes("agentplane")) {
      const child = await spawnAgentplane(
        { databaseUrl: pg.url, apiKey, dataDir: join(pg.dir, "data") },
        settings.profileDir,
        THIS_CHECKOUT.root,
      );
      children.push(child);
      ports.set("agentplane", child.port);
      databases.set("agentplane", pg.url);
      meters.set("agentplane", cpuMeter(admin, new URL(pg.url).pathname.slice(1), child.pid));
    }
    if (settings.encryption) {
      const database = "bench_encrypted";
      const databaseUrl = await createBenchDatabase(pg, database);
      const child = await spawnAgentplane(
        {
          databaseUrl,
          apiKey,
          dataDir: join(pg.dir, "data-encrypted"),
          encryption: benchEncryption(ENCRYPTED_KEYS),
        },
        undefined,
        THIS_CHECKOUT.root,
      );
      children.push(child);
      ports.set(ENCRYPTED, child.port);
      databases.set(ENCRYPTED, databaseUrl);
      meters.set(ENCRYPTED, cpuMeter(admin, database, child.pid));
    }
    for (const [index, baseline] of settings.baselines.entries()) {
      const database = `bench_baseline_${index}`;
      const databaseUrl = await createBenchDatabase(pg, database);
      const child = await spawnAgentplane(
        { databaseUrl, apiKey, dataDir: join(pg.dir, `data-baseline-${index}`) },
        undefined,
        baseline.root,
      );
      children.push(child);
      ports.set(baseline.label, child.port);
      databases.set(baseline.label, databaseUrl);
      meters.set(baseline.label, cpuMeter(admin, database, child.pid));
    }
    if (settings.targets.includes(CUSTOM_AUTH_VARIANT.label)) {
      const database = "bench_custom_auth";
      const databaseUrl = await createBenchDatabase(pg, database);
      const child = await spawnAgentplane(
        {
          databaseUrl,
          apiKey,
          dataDir: join(pg.dir, "data-custom-auth"),
          graphConfigPath: await CUSTOM_AUTH_VARIANT.graphsFile(undefined, pg.dir),
          // The issue measures custom auth and encryption on together.
          encryption: benchEncryption(ENCRYPTED_KEYS),
        },
        settings.profileDir,
        THIS_CHECKOUT.root,
      );
      children.push(child);
      ports.set(CUSTOM_AUTH_VARIANT.label, child.port);
      databases.set(CUSTOM_AUTH_VARIANT.label, databaseUrl);
      meters.set(CUSTOM_AUTH_VARIANT.label, cpuMeter(admin, database, child.pid));
    }
    if (settings.targets.includes("langgraph-js")) {
      peer = await startLangGraphJs();
      ports.set("langgraph-js", peer.port);
    }
    const servers = new Map<string, Server>();
    for (const [label, port] of ports) {
      const started = performance.now();
      const client = createJsonClient(port, headersOf(label, apiKey), SEED_CONCURRENCY);
      const seeded = await seedServer(client, SEED_CONCURRENCY).finally(() => client.close());
      servers.set(label, { port, seeded });
      const database = databases.get(label);
      if (database) await analyzeBenchDatabase(database);
      console.log(
        `seeded ${label}: ${SEED_THREADS} threads in ${((performance.now() - started) / 1000).toFixed(1)} s`,
      );
    }

    console.log(
      `agent CRUD bench: agentplane (Postgres, fsync off, pool ${BENCH_DB_POOL_MAX})` +
        (settings.baselines.length > 0
          ? ` beside ${settings.baselines.map((b) => b.label).join(", ")} (same settings, databases of their own)`
          : "") +
        (peer ? ` vs langgraph-js (@langchain/langgraph-cli ${peer.version} dev, in-memory)` : "") +
        `, Node ${process.version}, ${availableParallelism()} cores; ` +
        `${settings.durationMs / 1000} s per cell after ${settings.warmupMs / 1000} s warm-up, ` +
        `best of ${settings.rounds} round(s), server order alternating per round`,
    );
    const results = await runRounds(settings, servers, apiKey, meters);
    if (!printReport(settings, results)) process.exitCode = 1;
    if (!printCustomAuthCost(settings, results)) process.exitCode = 1;
  } finally {
    for (const child of children) await child.stop();
    await peer?.stop();
    await admin.end();
    await pg.stop();
  }
  if (settings.profileDir) console.log(`agentplane CPU profile written to ${settings.profileDir}`);
}

await main(readSettings());
