/**
 * Transport bench (`npm run bench:transport`): one unary RPC, agentplane.iam.v1.IdentityService/Whoami
 * authenticated with the admin key, through REST (`GET /api/v1/whoami`), Connect JSON and gRPC (h2c)
 * against the same server, side by side in one run. REST and Connect JSON share one HTTP/1.1 client
 * (node:http, keep-alive Agent, maxSockets = concurrency), so their ratio compares the server paths.
 * Aim: REST req/s ≥ 0.8 × Connect JSON req/s at every concurrency.
 *
 * The bench starts a throwaway embedded Postgres (fsync off) and runs the server in a child process
 * (this file, argument `serve`), so the load generator does not share the server's event loop.
 *
 *   npm run bench:transport -- [--duration-s 5] [--warmup-s 1] [--rounds 2] [--concurrency 1,32]
 *     [--protocols rest,connect,grpc] [--profile-server <dir>]
 *
 * The same settings are read from BENCH_DURATION_S, BENCH_WARMUP_S, BENCH_ROUNDS, BENCH_CONCURRENCY and
 * BENCH_PROTOCOLS. `--profile-server` writes the server's V8 CPU profile (`.cpuprofile`) into `<dir>`.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { Agent, type RequestOptions, request } from "node:http";
import { availableParallelism, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { IdentityService } from "../gen/agentplane/iam/v1/identity_service_pb.js";
import { startApp } from "../server/app.js";
import { createLogger } from "../server/logger.js";
import { startEmbeddedPostgres } from "../server/store/embedded-postgres.js";

/** The aim: REST keeps at least this share of Connect JSON's throughput. */
const AIM_RATIO = 0.8;
/** The server's default pool size (server/config.ts), so concurrency 32 queues on the pool as in production. */
const DB_POOL_MAX = 10;
/** Random bytes in the bench's admin key: far above the 24-character minimum the server accepts. */
const API_KEY_BYTES = 24;
/** Time the server gets to drain at the end; the bench has nothing in flight by then. */
const SHUTDOWN_GRACE_MS = 1_000;
/** Postgres statement timeout: Whoami's queries take ms, so only a hung database would reach it. */
const STATEMENT_TIMEOUT_MS = 60_000;
/** Enough of an unexpected answer's body to tell what went wrong, short enough for one line. */
const ERROR_BODY_CHARS = 200;
/** What a Connect client sends with a unary JSON call (the body is `{}`, 2 bytes). */
const CONNECT_JSON_HEADERS = {
  "content-type": "application/json",
  "content-length": 2,
  "connect-protocol-version": "1",
};

const PROTOCOLS = ["rest", "connect", "grpc"] as const;
type Protocol = (typeof PROTOCOLS)[number];
const LABELS: Record<Protocol, string> = { rest: "REST", connect: "Connect JSON", grpc: "gRPC (h2c)" };

/** One protocol's client for one cell: `call` resolves only for a verified answer and throws otherwise. */
interface BenchClient {
  call(): Promise<void>;
  close(): void;
}

/** What one closed-loop run of a protocol at a concurrency measured. */
interface CellResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  firstError: string | undefined;
}

interface Settings {
  durationMs: number;
  warmupMs: number;
  rounds: number;
  concurrencies: number[];
  protocols: Protocol[];
  profileDir: string | undefined;
}

function readSettings(): Settings {
  const env = process.env;
  const { values } = parseArgs({
    options: {
      "duration-s": { type: "string", default: env.BENCH_DURATION_S ?? "5" },
      "warmup-s": { type: "string", default: env.BENCH_WARMUP_S ?? "1" },
      rounds: { type: "string", default: env.BENCH_ROUNDS ?? "2" },
      concurrency: { type: "string", default: env.BENCH_CONCURRENCY ?? "1,32" },
      protocols: { type: "string", default: env.BENCH_PROTOCOLS ?? PROTOCOLS.join(",") },
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
  const protocols = values.protocols.split(",").map((p) => p.trim());
  for (const p of protocols)
    if (!PROTOCOLS.includes(p as Protocol)) throw new Error(`--protocols: unknown protocol ${p}`);
  return {
    // At least 0.1 s per cell: shorter windows hold too few calls for a p99.
    durationMs: number("duration-s", values["duration-s"], 0.1) * 1000,
    warmupMs: number("warmup-s", values["warmup-s"], 0) * 1000,
    rounds: number("rounds", values.rounds, 1, true),
    concurrencies: values.concurrency.split(",").map((c) => number("concurrency", c, 1, true)),
    protocols: protocols as Protocol[],
    profileDir: values["profile-server"] && resolve(values["profile-server"]),
  };
}

/** Nearest-rank percentile of ascending `sorted`. */
function percentile(sorted: Float64Array, p: number): number {
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

function expectOrganization(json: unknown, organizationId: string): void {
  const id = (json as { organization?: { id?: unknown } } | null)?.organization?.id;
  if (id !== organizationId) throw new Error(`unexpected organization id ${String(id)}`);
}

/** REST or Connect JSON over one keep-alive node:http Agent with `concurrency` sockets. */
function createHttp1Client(
  protocol: "rest" | "connect",
  port: number,
  apiKey: string,
  organizationId: string,
  concurrency: number,
): BenchClient {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const connect = protocol === "connect";
  const options: RequestOptions = {
    agent,
    host: "127.0.0.1",
    port,
    method: connect ? "POST" : "GET",
    path: connect ? "/agentplane.iam.v1.IdentityService/Whoami" : "/api/v1/whoami",
    headers: connect ? { "x-api-key": apiKey, ...CONNECT_JSON_HEADERS } : { "x-api-key": apiKey },
  };
  const body = connect ? "{}" : undefined;
  const call = () =>
    new Promise<void>((done, fail) => {
      const req = request(options, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("error", fail);
        res.on("end", () => {
          try {
            if (res.statusCode !== 200)
              throw new Error(`status ${res.statusCode}: ${text.slice(0, ERROR_BODY_CHARS)}`);
            expectOrganization(JSON.parse(text), organizationId);
            done();
          } catch (error) {
            fail(error);
          }
        });
      });
      req.on("error", fail);
      req.end(body);
    });
  return { call, close: () => agent.destroy() };
}

/** gRPC over one h2c session, as a gRPC client multiplexes its calls. */
function createGrpcClient(baseUrl: string, apiKey: string, organizationId: string): BenchClient {
  const sessionManager = new Http2SessionManager(baseUrl);
  const client = createClient(IdentityService, createGrpcTransport({ baseUrl, sessionManager }));
  const headers = { "x-api-key": apiKey };
  return {
    call: async () => expectOrganization(await client.whoami({}, { headers }), organizationId),
    close: () => sessionManager.abort(),
  };
}

/**
 * Closed loop: `concurrency` workers issue calls back to back for warm-up + duration; calls that
 * complete inside the measured window count (successes towards req/s and latency, failures as errors).
 */
async function runCell(client: BenchClient, concurrency: number, settings: Settings): Promise<CellResult> {
  const measureFrom = performance.now() + settings.warmupMs;
  const end = measureFrom + settings.durationMs;
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  const worker = async () => {
    for (let started = performance.now(); started < end; started = performance.now()) {
      let failure: unknown;
      try {
        await client.call();
      } catch (error) {
        failure = error ?? "unknown failure";
      }
      const finished = performance.now();
      if (finished < measureFrom || finished > end) continue;
      if (failure === undefined) latencies.push(finished - started);
      else {
        errors += 1;
        firstError ??= failure instanceof Error ? failure.message : String(failure);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const sorted = Float64Array.from(latencies).sort();
  return {
    rps: latencies.length / (settings.durationMs / 1000),
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    errors,
    firstError,
  };
}

/** What the parent tells the server child through the BENCH_SERVER environment variable (JSON). */
interface ServerEnv {
  databaseUrl: string;
  apiKey: string;
  dataDir: string;
}

/** Child-process mode: serve the API on a free port until SIGTERM; prints `{"port":N}` once listening. */
async function serve(): Promise<void> {
  // Set by spawnServer; the key stays out of the process list.
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

async function spawnServer(server: ServerEnv, profileDir: string | undefined) {
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
    child.once("exit", (code) => fail(new Error(`server process exited with ${code}`)));
  });
  return { child, port };
}

async function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  child.kill("SIGTERM");
  await exited;
}

function pad(cells: string[], widths: number[]): string {
  return cells.map((c, i) => (i === 0 ? c.padEnd(widths[0] ?? 0) : c.padStart(widths[i] ?? 0))).join("  ");
}

/** Cell results by `protocol/concurrency`, one per round. */
type Results = Map<string, CellResult[]>;

/** Every cell once per round; odd rounds run the protocols in reverse so that none always goes first. */
async function runRounds(
  settings: Settings,
  open: (protocol: Protocol, concurrency: number) => BenchClient,
): Promise<Results> {
  const results: Results = new Map();
  for (let round = 0; round < settings.rounds; round++) {
    const order = round % 2 === 0 ? settings.protocols : [...settings.protocols].reverse();
    for (const concurrency of settings.concurrencies) {
      for (const protocol of order) {
        const client = open(protocol, concurrency);
        const result = await runCell(client, concurrency, settings).finally(() => client.close());
        const key = `${protocol}/${concurrency}`;
        results.set(key, [...(results.get(key) ?? []), result]);
        console.log(
          `  round ${round + 1}: ${LABELS[protocol]} c=${concurrency} ${result.rps.toFixed(0)} req/s`,
        );
      }
    }
  }
  return results;
}

/**
 * Prints the table (each cell's best round; errors summed over all rounds) and the ratios. Returns
 * false when a REST / Connect JSON ratio misses the aim or any call failed.
 */
function printReport(settings: Settings, results: Results): boolean {
  const best = (protocol: Protocol, concurrency: number): CellResult | undefined =>
    results.get(`${protocol}/${concurrency}`)?.reduce((a, b) => (b.rps > a.rps ? b : a));
  const widths = [12, 11, 9, 8, 8, 16, 20];
  const headers = [
    "protocol",
    "concurrency",
    "req/s",
    "p50 ms",
    "p99 ms",
    "errors (all rds)",
    "req/s per round",
  ];
  console.log(`\n${pad(headers, widths)}`);
  let ok = true;
  for (const concurrency of settings.concurrencies) {
    for (const protocol of settings.protocols) {
      const cells = results.get(`${protocol}/${concurrency}`) ?? [];
      const top = best(protocol, concurrency);
      if (!top) continue;
      const errors = cells.reduce((sum, c) => sum + c.errors, 0);
      if (errors > 0) ok = false;
      const row = [LABELS[protocol], String(concurrency), top.rps.toFixed(0), top.p50.toFixed(2)];
      row.push(top.p99.toFixed(2), String(errors), cells.map((c) => c.rps.toFixed(0)).join(" / "));
      console.log(pad(row, widths));
      const firstError = cells.find((c) => c.firstError)?.firstError;
      if (firstError) console.log(`  first error: ${firstError}`);
    }
  }
  console.log("");
  for (const concurrency of settings.concurrencies) {
    const [rest, connect, grpc] = PROTOCOLS.map((p) => best(p, concurrency));
    if (rest && connect) {
      const ratio = rest.rps / connect.rps;
      const verdict = ratio >= AIM_RATIO ? "PASS" : "FAIL";
      if (ratio < AIM_RATIO) ok = false;
      console.log(
        `c=${concurrency}: REST / Connect JSON req/s = ${ratio.toFixed(2)} (aim ≥ ${AIM_RATIO}) ${verdict}`,
      );
    }
    if (grpc && connect)
      console.log(
        `c=${concurrency}: gRPC / Connect JSON req/s = ${(grpc.rps / connect.rps).toFixed(2)} (reference)`,
      );
  }
  return ok;
}

async function main(settings: Settings): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), "agentplane-bench-transport-"));
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
  try {
    const server = await spawnServer(
      { databaseUrl: pg.url, apiKey, dataDir: join(root, "data") },
      settings.profileDir,
    );
    child = server.child;
    const baseUrl = `http://127.0.0.1:${server.port}`;
    const open = (protocol: Protocol, concurrency: number, organizationId: string): BenchClient =>
      protocol === "grpc"
        ? createGrpcClient(baseUrl, apiKey, organizationId)
        : createHttp1Client(protocol, server.port, apiKey, organizationId, concurrency);

    // Learn the organization id once, then check that every protocol answers with it before measuring.
    const me = await fetch(`${baseUrl}/api/v1/whoami`, { headers: { "x-api-key": apiKey } });
    const organizationId = ((await me.json()) as { organization?: { id?: string } }).organization?.id ?? "";
    for (const protocol of PROTOCOLS) {
      const client = open(protocol, 1, organizationId);
      await client.call().finally(() => client.close());
    }

    console.log(
      `transport bench: IdentityService/Whoami (admin key), Node ${process.version}, ${availableParallelism()} cores; ` +
        `${settings.durationMs / 1000} s per cell after ${settings.warmupMs / 1000} s warm-up, ` +
        `best of ${settings.rounds} round(s), protocol order alternating per round`,
    );
    const results = await runRounds(settings, (protocol, concurrency) =>
      open(protocol, concurrency, organizationId),
    );
    if (!printReport(settings, results)) process.exitCode = 1;
  } finally {
    if (child) await stopServer(child);
    await pg.stop();
    await rm(root, { recursive: true, force: true });
  }
  if (settings.profileDir) console.log(`server CPU profile written to ${settings.profileDir}`);
}

if (process.argv[2] === "serve") await serve();
else await main(readSettings());
