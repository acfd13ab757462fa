/**
 * Transport bench (`npm run bench:transport`): one unary RPC, agentplane.iam.v1.IdentityService/Whoami
 * authenticated with the admin key, through REST (`GET /api/v1/whoami`), Connect JSON and gRPC (h2c)
 * against the same server, side by side in one run. REST and Connect JSON share one HTTP/1.1 client
 * (node:http, keep-alive Agent, maxSockets = concurrency), so their ratio compares the server paths.
 * Aim: REST req/s ≥ 0.8 × Connect JSON req/s at every concurrency.
 *
 * The bench starts a throwaway embedded Postgres (fsync off) and runs the server in a child process
 * (bench/support/agentplane-child.ts), so the load generator does not share the server's event loop.
 *
 *   npm run bench:transport -- [--duration-s 5] [--warmup-s 1] [--rounds 2] [--concurrency 1,32]
 *     [--protocols rest,connect,grpc] [--profile-server <dir>]
 *
 * The same settings are read from BENCH_DURATION_S, BENCH_WARMUP_S, BENCH_ROUNDS, BENCH_CONCURRENCY and
 * BENCH_PROTOCOLS. `--profile-server` writes the server's V8 CPU profile (`.cpuprofile`) into `<dir>`.
 */
import { Agent, type RequestOptions, request } from "node:http";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { IdentityService } from "../gen/agentplane/iam/v1/identity_service_pb.js";
import { createBenchApiKey } from "./support/bench-app.js";
import { startBenchPostgres } from "./support/bench-postgres.js";
import { listValue } from "./support/cli-values.js";
import { type CellResult, runClosedLoop } from "./support/closed-loop.js";
import { type LoopSettings, loopOptions, readLoopSettings } from "./support/loop-settings.js";
import { type AgentplaneChild, spawnAgentplane } from "./support/spawn-agentplane.js";
import { tableRow } from "./support/table-row.js";

/** The aim: REST keeps at least this share of Connect JSON's throughput. */
const AIM_RATIO = 0.8;
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

interface Settings extends LoopSettings {
  protocols: Protocol[];
}

function readSettings(): Settings {
  const { values } = parseArgs({
    options: {
      ...loopOptions({ durationS: "5", warmupS: "1", rounds: "2", concurrency: "1,32" }),
      protocols: { type: "string", default: process.env.BENCH_PROTOCOLS ?? PROTOCOLS.join(",") },
    },
  });
  return { ...readLoopSettings(values), protocols: listValue("protocols", values.protocols, PROTOCOLS) };
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
        const result = await runClosedLoop(() => client.call(), concurrency, settings).finally(() =>
          client.close(),
        );
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
  console.log(`\n${tableRow(headers, widths)}`);
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
      console.log(tableRow(row, widths));
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
  const pg = await startBenchPostgres("transport");
  const apiKey = createBenchApiKey();
  let server: AgentplaneChild | undefined;
  try {
    server = await spawnAgentplane(
      { databaseUrl: pg.url, apiKey, dataDir: join(pg.dir, "data") },
      settings.profileDir,
    );
    const { port } = server;
    const baseUrl = `http://127.0.0.1:${port}`;
    const open = (protocol: Protocol, concurrency: number, organizationId: string): BenchClient =>
      protocol === "grpc"
        ? createGrpcClient(baseUrl, apiKey, organizationId)
        : createHttp1Client(protocol, port, apiKey, organizationId, concurrency);

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
    await server?.stop();
    await pg.stop();
  }
  if (settings.profileDir) console.log(`server CPU profile written to ${settings.profileDir}`);
}

await main(readSettings());
