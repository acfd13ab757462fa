/**
 * Agent CRUD bench (`npm run bench:agent-crud`): thread and store CRUD over REST against agentplane
 * and the JS reference server (`langgraphjs dev` from `@langchain/langgraph-cli`, in-memory) side by
 * side in one run, same client (node:http keep-alive Agent, maxSockets = concurrency), same machine.
 * Operations: GET /threads/{id}, POST /threads/search with 10,000 threads present (a filter matching
 * 1% of them, and one matching all), PUT /store/items, POST /store/items/search and POST /threads,
 * each at every concurrency. Aim: agentplane req/s ≥ 1.0 × the JS server's, while durable in Postgres.
 *
 * The bench starts a throwaway embedded Postgres (fsync off) and runs agentplane in a child process
 * (this file, argument `serve`), so the load generator does not share the server's event loop. The JS
 * server runs as its CLI starts it; it is installed on first run into bench/peers/langgraph-js (its own
 * package.json; never by the root `npm install`). Both servers are seeded through their REST API first:
 * 10,000 threads and 1,000 store items each.
 *
 *   npm run bench:agent-crud -- [--duration-s 2] [--warmup-s 0.5] [--rounds 2] [--concurrency 1,32]
 *     [--ops get-thread,search-threads,...] [--targets agentplane,langgraph-js] [--profile-server <dir>]
 *
 * The same settings are read from BENCH_DURATION_S, BENCH_WARMUP_S, BENCH_ROUNDS, BENCH_CONCURRENCY,
 * BENCH_OPS and BENCH_TARGETS. `--profile-server` writes agentplane's V8 CPU profile into `<dir>`.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startApp } from "../server/app.js";
import { createLogger } from "../server/logger.js";
import { startEmbeddedPostgres } from "../server/store/embedded-postgres.js";
import { type CellResult, runClosedLoop } from "./agent-crud/closed-loop.js";
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

/** The aim: agentplane keeps at least the JS server's throughput. */
const AIM_RATIO = 1.0;
/** The server's default pool size (server/config.ts), so concurrency 32 queues on the pool as in production. */
const DB_POOL_MAX = 10;
/** Random bytes in the bench's admin key: far above the 24-character minimum the server accepts. */
const API_KEY_BYTES = 24;
/** Time agentplane gets to drain at the end; the bench has nothing in flight by then. */
const SHUTDOWN_GRACE_MS = 1_000;
/** Postgres statement timeout: these queries take ms, so only a hung database would reach it. */
const STATEMENT_TIMEOUT_MS = 60_000;
/** Requests in flight while seeding: enough to keep either server busy. */
const SEED_CONCURRENCY = 32;

const TARGETS = ["agentplane", "langgraph-js"] as const;
type Target = (typeof TARGETS)[number];

interface Settings {
  durationMs: number;
  warmupMs: number;
  rounds: number;
  concurrencies: number[];
  ops: OperationName[];
  targets: Target[];
  profileDir: string | undefined;
}

/** The comma-separated `text` as members of `allowed`. */
function listOf<T extends string>(name: string, text: string, allowed: readonly T[]): T[] {
  const items = text.split(",").map((item) => item.trim());
  for (const item of items)
    if (!allowed.includes(item as T))
      throw new Error(`--${name}: unknown ${item} (one of ${allowed.join(", ")})`);
  return items as T[];
}

function readSettings(): Settings {
  const env = process.env;
  const { values } = parseArgs({
    options: {
      "duration-s": { type: "string", default: env.BENCH_DURATION_S ?? "2" },
      "warmup-s": { type: "string", default: env.BENCH_WARMUP_S ?? "0.5" },
      rounds: { type: "string", default: env.BENCH_ROUNDS ?? "2" },
      concurrency: { type: "string", default: env.BENCH_CONCURRENCY ?? "1,32" },
      ops: { type: "string", default: env.BENCH_OPS ?? OPERATIONS.join(",") },
      targets: { type: "string", default: env.BENCH_TARGETS ?? TARGETS.join(",") },
      "profile-server": { type: "string" },
    },
  });
  /** `text` as a number of at least `min`; `integer` also refuses fractions. */
  const number = (name: string, text: string, min: number, integer = false): number => {
    const value = Number(text);
    if (!(value >= min) || (integer && !Number.isInteger(value)))
      throw new Error(`--${name}: ${text} is not ${integer ? "an integer" : "a number"} ≥ ${min}`);
    return value;
  };
  const ops = listOf("ops", values.ops, OPERATIONS);
  return {
    // At least 0.1 s per cell: shorter windows hold too few calls for a p99.
    durationMs: number("duration-s", values["duration-s"], 0.1) * 1000,
    warmupMs: number("warmup-s", values["warmup-s"], 0) * 1000,
    rounds: number("rounds", values.rounds, 1, true),
    concurrencies: values.concurrency.split(",").map((c) => number("concurrency", c, 1, true)),
    // Always in the order of OPERATIONS: thread creation last, so that searches see exactly the seed.
    ops: OPERATIONS.filter((op) => ops.includes(op)),
    targets: listOf("targets", values.targets, TARGETS),
    profileDir: values["profile-server"] && resolve(values["profile-server"]),
  };
}

/** What the parent tells the agentplane child through the BENCH_SERVER environment variable (JSON). */
interface ServerEnv {
  databaseUrl: string;
  apiKey: string;
  dataDir: string;
}

/** Child-process mode: serve agentplane on a free port until SIGTERM; prints `{"port":N}` once listening. */
async function serve(): Promise<void> {
  // Set by spawnAgentplane; the key stays out of the process list.
  const { databaseUrl, apiKey, dataDir } = JSON.parse(process.env.BENCH_SERVER ?? "") as ServerEnv;
  const app = await startApp(
    {
      port: 0,
      host: "127.0.0.1",
      databaseUrl,
      dataDir,
      role: "all",
      auth: "apikey",
      bootstrapApiKey: apiKey,
      plan: "enterprise",
      adminEmail: "admin@example.com",
      dbPoolMax: DB_POOL_MAX,
      statementTimeoutMs: STATEMENT_TIMEOUT_MS,
      shutdownGraceMs: SHUTDOWN_GRACE_MS,
      logLevel: "error",
      graphConfigPath: undefined,
      usageReporting: true,
    },
    createLogger("error"),
  );
  process.once("SIGTERM", () => {
    // process.exit (not a natural end) so --cpu-prof writes its profile even with timers left behind.
    void app.stop().finally(() => process.exit(0));
  });
  process.stdout.write(`${JSON.stringify({ port: app.address.port })}\n`);
}

async function spawnAgentplane(server: ServerEnv, profileDir: string | undefined) {
  const profile = profileDir ? ["--cpu-prof", "--cpu-prof-dir", profileDir] : [];
  const child = spawn(
    process.execPath,
    [...profile, "--import", "tsx", fileURLToPath(import.meta.url), "serve"],
    {
      cwd: fileURLToPath(new URL("..", import.meta.url)),
      env: { ...process.env, BENCH_SERVER: JSON.stringify(server) },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  const port = await new Promise<number>((done, fail) => {
    let out = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split("\n").find((l) => l.startsWith("{"));
      if (line) done((JSON.parse(line) as { port: number }).port);
    });
    child.once("exit", (code) => fail(new Error(`agentplane process exited with ${code}`)));
  });
  return { child, port };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  child.kill("SIGTERM");
  await exited;
}

/** A server under test: where it listens and what it was seeded with. */
interface Server {
  port: number;
  seeded: Seeded;
}

/** Cell results by `op/concurrency/target`, one per round. */
type Results = Map<string, CellResult[]>;

/**
 * Each operation in turn: every round runs every concurrency on every target; odd rounds run the
 * targets in reverse so that neither always goes first.
 */
async function runRounds(settings: Settings, servers: Map<Target, Server>, apiKey: string): Promise<Results> {
  const results: Results = new Map();
  for (const op of settings.ops) {
    for (let round = 0; round < settings.rounds; round++) {
      const order = round % 2 === 0 ? settings.targets : [...settings.targets].reverse();
      for (const concurrency of settings.concurrencies) {
        for (const target of order) {
          const server = servers.get(target);
          if (!server) continue;
          const client = createJsonClient(server.port, { "x-api-key": apiKey }, concurrency);
          const call = operationCall(op, server.seeded);
          const result = await runClosedLoop((seq) => call(client, seq), concurrency, settings).finally(() =>
            client.close(),
          );
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

function pad(cells: string[], widths: number[]): string {
  return cells.map((c, i) => (i === 0 ? c.padEnd(widths[0] ?? 0) : c.padStart(widths[i] ?? 0))).join("  ");
}

/**
 * Prints one row per operation × concurrency (each target's best round; errors summed over all
 * rounds) with the agentplane / JS ratio. Returns false when a ratio misses the aim or a call failed.
 */
function printReport(settings: Settings, results: Results): boolean {
  const widths = [32, 3, 10, 7, 7, 12, 7, 7, 6, 4];
  const headers = ["operation", "c", "agentplane", "p50 ms", "p99 ms", "langgraph-js", "p50 ms", "p99 ms"];
  console.log(`\n${pad([...headers, "ratio", `aim ≥ ${AIM_RATIO.toFixed(1)}`], widths)}`);
  console.log(pad(["", "", "req/s", "", "", "req/s"], widths));
  let ok = true;
  const notes: string[] = [];
  for (const op of settings.ops) {
    for (const concurrency of settings.concurrencies) {
      const row = [OPERATION_LABELS[op], String(concurrency)];
      const best = new Map<Target, CellResult>();
      for (const target of TARGETS) {
        const cells = results.get(`${op}/${concurrency}/${target}`) ?? [];
        const top = cells.reduce<CellResult | undefined>((a, b) => (a && a.rps >= b.rps ? a : b), undefined);
        if (top) best.set(target, top);
        row.push(
          top ? top.rps.toFixed(0) : "-",
          top ? top.p50.toFixed(2) : "-",
          top ? top.p99.toFixed(2) : "-",
        );
        const errors = cells.reduce((sum, c) => sum + c.errors, 0);
        if (errors > 0) {
          ok = false;
          const first = cells.find((c) => c.firstError)?.firstError;
          notes.push(`${op} c=${concurrency} ${target}: ${errors} errors, first: ${first}`);
        }
      }
      const ours = best.get("agentplane");
      const theirs = best.get("langgraph-js");
      if (ours && theirs) {
        const ratio = ours.rps / theirs.rps;
        if (ratio < AIM_RATIO) ok = false;
        row.push(ratio.toFixed(2), ratio >= AIM_RATIO ? "PASS" : "FAIL");
      }
      console.log(pad(row, widths));
    }
  }
  for (const note of notes) console.log(`  ${note}`);
  return ok;
}

async function main(settings: Settings): Promise<void> {
  if (settings.targets.includes("langgraph-js")) await ensureLangGraphJsInstalled();
  const root = await mkdtemp(join(tmpdir(), "agentplane-bench-agent-crud-"));
  // mkdtemp makes the directory 0700; as root, Postgres runs as the `postgres` user and must enter it.
  await chmod(root, 0o711);
  const pg = await startEmbeddedPostgres({
    dataDir: join(root, "postgres"),
    database: "bench",
    persistent: false,
    durable: false,
    log: () => {},
  });
  const apiKey = `ap_pt_bench_${randomBytes(API_KEY_BYTES).toString("base64url")}`;
  let child: ChildProcess | undefined;
  let peer: LangGraphJsServer | undefined;
  try {
    const ports = new Map<Target, number>();
    if (settings.targets.includes("agentplane")) {
      const server = await spawnAgentplane(
        { databaseUrl: pg.url, apiKey, dataDir: join(root, "data") },
        settings.profileDir,
      );
      child = server.child;
      ports.set("agentplane", server.port);
    }
    if (settings.targets.includes("langgraph-js")) {
      peer = await startLangGraphJs();
      ports.set("langgraph-js", peer.port);
    }
    const servers = new Map<Target, Server>();
    for (const [target, port] of ports) {
      const started = performance.now();
      const client = createJsonClient(port, { "x-api-key": apiKey }, SEED_CONCURRENCY);
      const seeded = await seedServer(client, SEED_CONCURRENCY).finally(() => client.close());
      servers.set(target, { port, seeded });
      console.log(
        `seeded ${target}: ${SEED_THREADS} threads in ${((performance.now() - started) / 1000).toFixed(1)} s`,
      );
    }

    console.log(
      `agent CRUD bench: agentplane (Postgres, fsync off, pool ${DB_POOL_MAX})` +
        (peer ? ` vs langgraph-js (@langchain/langgraph-cli ${peer.version} dev, in-memory)` : "") +
        `, Node ${process.version}, ${availableParallelism()} cores; ` +
        `${settings.durationMs / 1000} s per cell after ${settings.warmupMs / 1000} s warm-up, ` +
        `best of ${settings.rounds} round(s), target order alternating per round`,
    );
    const results = await runRounds(settings, servers, apiKey);
    if (!printReport(settings, results)) process.exitCode = 1;
  } finally {
    if (child) await stopChild(child);
    await peer?.stop();
    await pg.stop();
    await rm(root, { recursive: true, force: true });
  }
  if (settings.profileDir) console.log(`agentplane CPU profile written to ${settings.profileDir}`);
}

if (process.argv[2] === "serve") await serve();
else await main(readSettings());
