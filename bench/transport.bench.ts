/**
 * Transport bench (`npm run bench:transport`): one unary RPC, agentplane.iam.v1.IdentityService/Whoami
 * authenticated with the admin key, through REST (`GET /api/v1/whoami`), Connect JSON and gRPC (h2c)
 * against the same server, side by side in one run. REST and Connect JSON share one HTTP/1.1 client
 * (node:http, keep-alive Agent, maxSockets = concurrency), so their ratio compares the server paths.
 * Aim: REST req/s ≥ 0.8 × Connect JSON req/s at every concurrency.
 *
 * The `rest-app` cells call the same REST route on a second server of this checkout whose graphs file
 * mounts a custom app (bench/transport/langgraph.json: a Hono app with one pass-through middleware),
 * and print its req/s as a ratio of plain REST's: what `http.app` costs a built-in route.
 *
 * The bench starts a throwaway embedded Postgres (fsync off) and runs the server in a child process
 * (bench/support/agentplane-child.ts), so the load generator does not share the server's event loop.
 *
 *   npm run bench:transport -- [--duration-s 5] [--warmup-s 1] [--rounds 2] [--concurrency 1,32]
 *     [--protocols rest,connect,grpc] [--profile-server <dir>] [--log-level error|info]
 *     [--baseline <dir>]
 *
 * The same settings are read from BENCH_DURATION_S, BENCH_WARMUP_S, BENCH_ROUNDS, BENCH_CONCURRENCY and
 * BENCH_PROTOCOLS. `--profile-server` writes the server's V8 CPU profile (`.cpuprofile`) into `<dir>`.
 * `--log-level info` runs the servers as operators do, access log on, their lines appended to a file
 * in the bench's temporary directory. `--baseline <dir>` also runs another checkout (see
 * bench/support/checkouts.ts) on the same database, every cell side by side with this one, and
 * prints this checkout's req/s as a ratio of the baseline's, and the same from the server process's
 * CPU time per call (what the verdict reads: on a shared machine req/s swings with other load), the
 * cost of a change such as the access log: aim ≥ 0.95.
 */
import { Agent, type RequestOptions, request } from "node:http";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { IdentityService } from "../gen/agentplane/iam/v1/identity_service_pb.js";
import { createBenchApiKey } from "./support/bench-app.js";
import { startBenchPostgres } from "./support/bench-postgres.js";
import { BASELINE_OPTION, baselineCheckouts, type Checkout, THIS_CHECKOUT } from "./support/checkouts.js";
import { listValue } from "./support/cli-values.js";
import { processCpuMeter } from "./support/cpu-meter.js";
import { type LoopSettings, loopOptions, readLoopSettings } from "./support/loop-settings.js";
import { type MeteredResult, runMeteredLoop } from "./support/metered-loop.js";
import { type AgentplaneChild, spawnAgentplane } from "./support/spawn-agentplane.js";
import { tableRow } from "./support/table-row.js";

/** The aim: REST keeps at least this share of Connect JSON's throughput. */
const AIM_RATIO = 0.8;
/** The aim against a baseline checkout: a change such as the access log costs at most 5 % of req/s. */
const BASELINE_AIM_RATIO = 0.95;
const LOG_LEVELS = ["debug", "info", "warn", "error"] as const;
/** Enough of an unexpected answer's body to tell what went wrong, short enough for one line. */
const ERROR_BODY_CHARS = 200;
/** What a Connect client sends with a unary JSON call (the body is `{}`, 2 bytes). */
const CONNECT_JSON_HEADERS = {
  "content-type": "application/json",
  "content-length": 2,
  "connect-protocol-version": "1",
};

const PROTOCOLS = ["rest", "connect", "grpc", "rest-app"] as const;
type Protocol = (typeof PROTOCOLS)[number];
const LABELS: Record<Protocol, string> = {
  rest: "REST",
  connect: "Connect JSON",
  grpc: "gRPC (h2c)",
  "rest-app": "REST + http.app",
};
/** The graphs file of the `rest-app` server: a custom app with a pass-through middleware. */
const CUSTOM_APP_GRAPHS = fileURLToPath(new URL("./transport/langgraph.json", import.meta.url));

/** One protocol's client for one cell: `call` resolves only for a verified answer and throws otherwise. */
interface BenchClient {
  call(): Promise<void>;
  close(): void;
}

interface Settings extends LoopSettings {
  protocols: Protocol[];
  /** This checkout, then the baselines. */
  checkouts: Checkout[];
  logLevel: (typeof LOG_LEVELS)[number];
}

function readSettings(): Settings {
  const { values } = parseArgs({
    options: {
      ...loopOptions({ durationS: "5", warmupS: "1", rounds: "2", concurrency: "1,32" }),
      protocols: { type: "string", default: process.env.BENCH_PROTOCOLS ?? PROTOCOLS.join(",") },
      "log-level": { type: "string", default: "error" },
      ...BASELINE_OPTION,
    },
  });
  const [logLevel] = listValue("log-level", values["log-level"], LOG_LEVELS);
  return {
    ...readLoopSettings(values),
    protocols: listValue("protocols", values.protocols, PROTOCOLS),
    checkouts: [THIS_CHECKOUT, ...baselineCheckouts(values.baseline)],
    logLevel: logLevel ?? "error",
  };
}

function expectOrganization(json: unknown, organizationId: string): void {
  const id = (json as { organization?: { id?: unknown } } | null)?.organization?.id;
  if (id !== organizationId) throw new Error(`unexpected organization id ${String(id)}`);
}

/** REST or Connect JSON over one keep-alive node:http Agent with `concurrency` sockets. */
function createHttp1Client(
  protocol: "rest" | "connect" | "rest-app",
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

/** Cell results by `checkout/protocol/concurrency`, one per round. */
type Results = Map<string, MeteredResult[]>;

/**
 * Every cell once per round, each checkout's server in turn; odd rounds run the protocols and the
 * checkouts in reverse so that none always goes first.
 */
async function runRounds(
  settings: Settings,
  open: (checkout: Checkout, protocol: Protocol, concurrency: number) => BenchClient,
  pidOf: (checkout: Checkout, protocol: Protocol) => number,
): Promise<Results> {
  const results: Results = new Map();
  for (let round = 0; round < settings.rounds; round++) {
    const flip = <T>(items: readonly T[]): T[] => (round % 2 === 0 ? [...items] : [...items].reverse());
    for (const concurrency of settings.concurrencies) {
      for (const protocol of flip(settings.protocols)) {
        for (const checkout of flip(settings.checkouts)) {
          // The custom-app server runs this checkout only.
          if (protocol === "rest-app" && checkout !== settings.checkouts[0]) continue;
          const client = open(checkout, protocol, concurrency);
          const meter = processCpuMeter(pidOf(checkout, protocol));
          const result = await runMeteredLoop(meter, () => client.call(), concurrency, settings).finally(() =>
            client.close(),
          );
          const key = `${checkout.label}/${protocol}/${concurrency}`;
          results.set(key, [...(results.get(key) ?? []), result]);
          console.log(
            `  round ${round + 1}: ${checkout.label} ${LABELS[protocol]} c=${concurrency} ${result.rps.toFixed(0)} req/s, server ${(result.cpuMs * 1000).toFixed(0)} µs CPU/call`,
          );
        }
      }
    }
  }
  return results;
}

/**
 * Prints the table (each cell's best round; errors summed over all rounds) and the ratios. Returns
 * false when a REST / Connect JSON ratio or a ratio to a baseline misses its aim, or any call failed.
 */
function printReport(settings: Settings, results: Results): boolean {
  const best = (checkout: Checkout, protocol: Protocol, concurrency: number): MeteredResult | undefined =>
    results.get(`${checkout.label}/${protocol}/${concurrency}`)?.reduce((a, b) => (b.rps > a.rps ? b : a));
  const leastCpu = (checkout: Checkout, protocol: Protocol, concurrency: number): number =>
    Math.min(...(results.get(`${checkout.label}/${protocol}/${concurrency}`) ?? []).map((c) => c.cpuMs));
  const widths = [14, 12, 11, 9, 8, 8, 12, 16, 20];
  const headers = [
    "checkout",
    "protocol",
    "concurrency",
    "req/s",
    "p50 ms",
    "p99 ms",
    "CPU µs/call",
    "errors (all rds)",
    "req/s per round",
  ];
  console.log(`\n${tableRow(headers, widths)}`);
  let ok = true;
  for (const concurrency of settings.concurrencies) {
    for (const protocol of settings.protocols) {
      for (const checkout of settings.checkouts) {
        const cells = results.get(`${checkout.label}/${protocol}/${concurrency}`) ?? [];
        const top = best(checkout, protocol, concurrency);
        if (!top) continue;
        const errors = cells.reduce((sum, c) => sum + c.errors, 0);
        if (errors > 0) ok = false;
        const row = [checkout.label, LABELS[protocol], String(concurrency), top.rps.toFixed(0)];
        row.push(top.p50.toFixed(2), top.p99.toFixed(2));
        row.push((leastCpu(checkout, protocol, concurrency) * 1000).toFixed(0), String(errors));
        row.push(cells.map((c) => c.rps.toFixed(0)).join(" / "));
        console.log(tableRow(row, widths));
        const firstError = cells.find((c) => c.firstError)?.firstError;
        if (firstError) console.log(`  first error: ${firstError}`);
      }
    }
  }
  console.log("");
  for (const checkout of settings.checkouts) {
    for (const concurrency of settings.concurrencies) {
      const [rest, connect, grpc, restApp] = PROTOCOLS.map((p) => best(checkout, p, concurrency));
      if (rest && connect) {
        const ratio = rest.rps / connect.rps;
        const verdict = ratio >= AIM_RATIO ? "PASS" : "FAIL";
        if (ratio < AIM_RATIO) ok = false;
        console.log(
          `${checkout.label} c=${concurrency}: REST / Connect JSON req/s = ${ratio.toFixed(2)} (aim ≥ ${AIM_RATIO}) ${verdict}`,
        );
      }
      if (grpc && connect)
        console.log(
          `${checkout.label} c=${concurrency}: gRPC / Connect JSON req/s = ${(grpc.rps / connect.rps).toFixed(2)} (reference)`,
        );
      if (restApp && rest)
        console.log(
          `${checkout.label} c=${concurrency}: REST with http.app (pass-through middleware) / REST without req/s = ` +
            `${(restApp.rps / rest.rps).toFixed(2)}, by server CPU per call = ` +
            `${(leastCpu(checkout, "rest", concurrency) / leastCpu(checkout, "rest-app", concurrency)).toFixed(2)} (reference)`,
        );
    }
  }
  const [self, ...baselines] = settings.checkouts;
  for (const baseline of baselines) {
    for (const concurrency of settings.concurrencies) {
      for (const protocol of settings.protocols) {
        const ours = self && best(self, protocol, concurrency);
        const theirs = best(baseline, protocol, concurrency);
        if (!ours || !theirs) continue;
        // On a shared machine req/s swings with other load; the server's CPU per call swings far
        // less, and a CPU-bound server's req/s is its inverse: the verdict reads the CPU ratio.
        const ratio = ours.rps / theirs.rps;
        const cpuRatio = self
          ? leastCpu(baseline, protocol, concurrency) / leastCpu(self, protocol, concurrency)
          : 0;
        const verdict = cpuRatio >= BASELINE_AIM_RATIO ? "PASS" : "FAIL";
        if (cpuRatio < BASELINE_AIM_RATIO) ok = false;
        console.log(
          `c=${concurrency} ${LABELS[protocol]}: ${self?.label} / ${baseline.label} req/s = ${ratio.toFixed(2)}; ` +
            `by server CPU per call (${baseline.label} / ${self?.label}) = ${cpuRatio.toFixed(2)} (aim ≥ ${BASELINE_AIM_RATIO}) ${verdict}`,
        );
      }
    }
  }
  return ok;
}

async function main(settings: Settings): Promise<void> {
  const pg = await startBenchPostgres("transport");
  const apiKey = createBenchApiKey();
  const servers = new Map<string, AgentplaneChild>();
  try {
    // One at a time: two servers migrating and bootstrapping one database at once is no bench's concern.
    for (const checkout of settings.checkouts) {
      const server = await spawnAgentplane(
        {
          databaseUrl: pg.url,
          apiKey,
          dataDir: join(pg.dir, `data-${checkout.label}`),
          logLevel: settings.logLevel,
        },
        settings.profileDir,
        checkout.root,
        settings.logLevel === "error" ? undefined : join(pg.dir, `${checkout.label}.log`),
      );
      servers.set(checkout.label, server);
    }
    const appServer = settings.protocols.includes("rest-app")
      ? await spawnAgentplane(
          {
            databaseUrl: pg.url,
            apiKey,
            dataDir: join(pg.dir, "data-custom-app"),
            logLevel: settings.logLevel,
            graphConfigPath: CUSTOM_APP_GRAPHS,
          },
          undefined,
        )
      : undefined;
    if (appServer) servers.set("custom-app", appServer);
    const portOf = (checkout: Checkout) => servers.get(checkout.label)?.port ?? 0;
    const open = (
      checkout: Checkout,
      protocol: Protocol,
      concurrency: number,
      organizationId: string,
    ): BenchClient =>
      protocol === "grpc"
        ? createGrpcClient(`http://127.0.0.1:${portOf(checkout)}`, apiKey, organizationId)
        : createHttp1Client(
            protocol,
            protocol === "rest-app" ? (appServer?.port ?? 0) : portOf(checkout),
            apiKey,
            organizationId,
            concurrency,
          );

    // Learn the organization id once, then check that every server and protocol answers with it.
    const first = settings.checkouts[0] ?? THIS_CHECKOUT;
    const me = await fetch(`http://127.0.0.1:${portOf(first)}/api/v1/whoami`, {
      headers: { "x-api-key": apiKey },
    });
    const organizationId = ((await me.json()) as { organization?: { id?: string } }).organization?.id ?? "";
    for (const checkout of settings.checkouts) {
      for (const protocol of settings.protocols) {
        if (protocol === "rest-app" && checkout !== first) continue;
        const client = open(checkout, protocol, 1, organizationId);
        await client.call().finally(() => client.close());
      }
    }

    console.log(
      `transport bench: IdentityService/Whoami (admin key), Node ${process.version}, ${availableParallelism()} cores; ` +
        `${settings.durationMs / 1000} s per cell after ${settings.warmupMs / 1000} s warm-up, ` +
        `best of ${settings.rounds} round(s), protocol and checkout order alternating per round; ` +
        `server log level ${settings.logLevel}${settings.logLevel === "info" || settings.logLevel === "debug" ? " (access log on, to a file)" : ""}`,
    );
    const results = await runRounds(
      settings,
      (checkout, protocol, concurrency) => open(checkout, protocol, concurrency, organizationId),
      (checkout, protocol) =>
        (protocol === "rest-app" ? appServer?.pid : servers.get(checkout.label)?.pid) ?? 0,
    );
    if (!printReport(settings, results)) process.exitCode = 1;
  } finally {
    for (const server of servers.values()) await server.stop();
    await pg.stop();
  }
  if (settings.profileDir) console.log(`server CPU profile written to ${settings.profileDir}`);
}

await main(readSettings());
