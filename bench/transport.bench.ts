/**
 * Transport bench (`npm run bench:transport`): one unary RPC, agentplane.iam.v1.IdentityService/Whoami
 * authenticated with the admin key, through REST (`GET /api/v1/whoami`), Connect JSON (HTTP/1.1, and
 * h2c as `connect-h2`) and gRPC (h2c) against the same server, side by side in one run. Aims at every
 * concurrency: REST req/s ≥ 0.8 × Connect JSON req/s, and gRPC req/s ≥ 0.8 × Connect JSON req/s.
 *
 * The load comes from h2load (nghttp2's C load generator, Debian's `nghttp2-client`) when it is
 * installed, so that the client costs the shared cores little and the server is what is measured:
 * REST and Connect JSON over HTTP/1.1 with `concurrency` keep-alive connections, gRPC and Connect
 * JSON h2c over one connection with `concurrency` streams, as their clients multiplex. Without it
 * (or with `--client node`) Node clients run in this process: node:http with a keep-alive Agent for
 * HTTP/1.1, connect-node's gRPC and Connect transports on one HTTP/2 session.
 *
 * The `rest-app` cells call the same REST route on a second server of this checkout whose graphs file
 * mounts a custom app (bench/transport/langgraph.json: a Hono app with one pass-through middleware),
 * and print its req/s as a ratio of plain REST's: what `http.app` costs a built-in route.
 *
 * The bench starts a throwaway embedded Postgres (fsync off) and runs the server in a child process
 * (bench/support/agentplane-child.ts), so the load generator does not share the server's event loop.
 *
 *   npm run bench:transport -- [--duration-s 5] [--warmup-s 1] [--rounds 2] [--concurrency 1,32]
 *     [--protocols rest,connect,connect-h2,grpc] [--client h2load|node] [--profile-server <dir>]
 *     [--log-level error|info] [--baseline <dir>] [--baseline-log-level error|info] [--fresh-servers]
 *     [--log-slices <pairs>] [--slice-levels info,error]
 *
 * The same settings are read from BENCH_DURATION_S, BENCH_WARMUP_S, BENCH_ROUNDS, BENCH_CONCURRENCY and
 * BENCH_PROTOCOLS. `--profile-server` writes the server's V8 CPU profile (`.cpuprofile`) into `<dir>`.
 * `--log-level info` runs the servers as operators do, access log on, their lines appended to a file
 * in the bench's temporary directory. `--baseline <dir>` also runs another checkout (see
 * bench/support/checkouts.ts) on the same database, every cell side by side with this one, and
 * prints this checkout's req/s as a ratio of the baseline's, and the same from the server process's
 * CPU time per call (the verdict reads the median of its per-round ratios: on a shared machine req/s
 * swings with other load), the cost of a change such as the access log: aim ≥ 0.95. `--baseline-log-level` runs the baselines at
 * another level than this checkout; with this checkout as its own baseline it measures the access
 * log itself, on against off, in one run:
 *
 *   npm run bench:transport -- --log-level info --baseline . --baseline-log-level error
 *
 * Two server processes of the same checkout and settings differ by a few percent for their whole
 * life, and the server CPU is read at nanosecond resolution (schedstat), so short cells count: for
 * a cost of a few percent, run many short rounds with `--fresh-servers`, which starts every
 * checkout's server anew before each round, and compare with a control run at one level
 * (`--baseline-log-level` the same as `--log-level`):
 *
 *   npm run bench:transport -- --log-level info --baseline . --baseline-log-level error \
 *     --protocols rest,connect --rounds 12 --duration-s 2 --warmup-s 0.5 --fresh-servers
 *
 * Those rounds cannot resolve 5 % between two processes on a shared VM. `--log-slices N` measures
 * the access log inside one server process instead (transport/log-slices.ts): one h2load cell per
 * protocol and concurrency, the level switched through `PUT /internal/log-level` every
 * `--duration-s` slice between the two `--slice-levels` (default info,error), N pairs, CPU per call
 * from the server's threads, reported as the trimmed mean of the pairs' ratios beside an A/A control
 * from the same run's neighbouring slices at one level; `--slice-levels info,info` is a whole-run control:
 *
 *   npm run bench:transport -- --log-slices 100 --duration-s 0.2 --warmup-s 0.5 --protocols rest,connect
 */
import { Agent, type RequestOptions, request } from "node:http";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { IdentityService, WhoamiResponseSchema } from "../gen/agentplane/iam/v1/identity_service_pb.js";
import { createBenchApiKey } from "./support/bench-app.js";
import { startBenchPostgres } from "./support/bench-postgres.js";
import { BASELINE_OPTION, baselineCheckouts, type Checkout, THIS_CHECKOUT } from "./support/checkouts.js";
import { listValue, numberValue } from "./support/cli-values.js";
import { cpuSecondsBetween, preciseProcessCpuMeter } from "./support/cpu-meter.js";
import { findH2load, runH2load } from "./support/h2load.js";
import { type LoopSettings, loopOptions, readLoopSettings } from "./support/loop-settings.js";
import { type MeteredResult, runMeteredLoop } from "./support/metered-loop.js";
import { median, roundRatios } from "./support/round-ratios.js";
import { type AgentplaneChild, spawnAgentplane } from "./support/spawn-agentplane.js";
import { tableRow } from "./support/table-row.js";
import { runLogSlices, type SliceLevels } from "./transport/log-slices.js";

/** The aims: REST and gRPC each keep at least this share of Connect JSON's throughput. */
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

const PROTOCOLS = ["rest", "connect", "connect-h2", "grpc", "rest-app"] as const;
type Protocol = (typeof PROTOCOLS)[number];
const LABELS: Record<Protocol, string> = {
  rest: "REST",
  connect: "Connect JSON",
  "connect-h2": "Connect h2c",
  grpc: "gRPC (h2c)",
  "rest-app": "REST + http.app",
};
const CLIENTS = ["h2load", "node"] as const;
/**
 * The ratios reported, as [protocol, over protocol, is an aim]: REST and gRPC against Connect JSON
 * (the aims), gRPC against Connect JSON on the same HTTP/2 connection kind, and REST with a custom
 * app (a pass-through middleware) against REST without one.
 */
const RATIOS: readonly (readonly [Protocol, Protocol, boolean])[] = [
  ["rest", "connect", true],
  ["grpc", "connect", true],
  ["grpc", "connect-h2", false],
  ["rest-app", "rest", false],
];
/** A gRPC envelope's prefix: a flags byte and the message length. */
const ENVELOPE_PREFIX_BYTES = 5;
/** What the gRPC bench client sends: an empty message (no bytes) in its envelope. */
const GRPC_EMPTY_REQUEST = new Uint8Array(ENVELOPE_PREFIX_BYTES);
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
  /** The level the baselines run at; `logLevel` unless told. */
  baselineLogLevel: (typeof LOG_LEVELS)[number];
  /** h2load's path when it generates the load; undefined for the Node clients. */
  h2load: string | undefined;
  /** Start every checkout's server anew before each round after the first. */
  freshServers: boolean;
  /** Pairs of slices at two log levels in one server process (transport/log-slices.ts); 0: rounds. */
  logSlices: number;
  sliceLevels: SliceLevels;
}

function readSettings(): Settings {
  const { values } = parseArgs({
    options: {
      ...loopOptions({ durationS: "5", warmupS: "1", rounds: "2", concurrency: "1,32" }),
      protocols: { type: "string", default: process.env.BENCH_PROTOCOLS ?? PROTOCOLS.join(",") },
      "log-level": { type: "string", default: "error" },
      "baseline-log-level": { type: "string" },
      client: { type: "string", default: process.env.BENCH_CLIENT ?? (findH2load() ? "h2load" : "node") },
      "fresh-servers": { type: "boolean", default: false },
      "log-slices": { type: "string", default: "0" },
      "slice-levels": { type: "string", default: "info,error" },
      ...BASELINE_OPTION,
    },
  });
  const [logLevel] = listValue("log-level", values["log-level"], LOG_LEVELS);
  const [baselineLogLevel] = listValue(
    "baseline-log-level",
    values["baseline-log-level"] ?? values["log-level"],
    LOG_LEVELS,
  );
  const [client] = listValue("client", values.client, CLIENTS);
  const h2load = client === "h2load" ? findH2load() : undefined;
  if (client === "h2load" && !h2load)
    throw new Error("--client h2load: h2load is not installed (nghttp2-client)");
  const sliceLevels = listValue("slice-levels", values["slice-levels"], LOG_LEVELS);
  const [firstLevel, secondLevel] = sliceLevels;
  if (sliceLevels.length !== 2 || !firstLevel || !secondLevel)
    throw new Error("--slice-levels takes two levels, such as info,error");
  const logSlices = numberValue("log-slices", values["log-slices"], 0, true);
  if (logSlices > 0 && values.baseline !== undefined)
    throw new Error("--log-slices measures one server process: leave out --baseline");
  return {
    ...readLoopSettings(values),
    protocols: listValue("protocols", values.protocols, PROTOCOLS),
    checkouts: [THIS_CHECKOUT, ...baselineCheckouts(values.baseline)],
    logLevel: logLevel ?? "error",
    baselineLogLevel: baselineLogLevel ?? logLevel ?? "error",
    h2load,
    freshServers: values["fresh-servers"],
    logSlices,
    sliceLevels: [firstLevel, secondLevel],
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

/** gRPC, or Connect JSON, over one h2c session, as their clients multiplex calls. */
function createH2Client(
  protocol: "grpc" | "connect-h2",
  baseUrl: string,
  apiKey: string,
  organizationId: string,
): BenchClient {
  const sessionManager = new Http2SessionManager(baseUrl);
  const transport =
    protocol === "grpc"
      ? createGrpcTransport({ baseUrl, sessionManager })
      : createConnectTransport({ baseUrl, sessionManager, httpVersion: "2", useBinaryFormat: false });
  const client = createClient(IdentityService, transport);
  const headers = { "x-api-key": apiKey };
  return {
    call: async () => expectOrganization(await client.whoami({}, { headers }), organizationId),
    close: () => sessionManager.abort(),
  };
}

/**
 * The h2load cell of a protocol: REST and Connect JSON over HTTP/1.1 with `concurrency` keep-alive
 * connections (as the Node client's Agent), gRPC and Connect h2c on one connection with
 * `concurrency` streams (as connect-node multiplexes on one session).
 */
function h2loadCell(cellProtocol: Protocol, baseUrl: string, apiKey: string, concurrency: number) {
  // The custom-app server answers the same REST route.
  const protocol = cellProtocol === "rest-app" ? "rest" : cellProtocol;
  const h2 = protocol === "grpc" || protocol === "connect-h2";
  const headers: Record<string, string> =
    protocol === "rest"
      ? { "x-api-key": apiKey }
      : protocol === "grpc"
        ? { "x-api-key": apiKey, "content-type": "application/grpc", te: "trailers" }
        : { "x-api-key": apiKey, "content-type": "application/json", "connect-protocol-version": "1" };
  return {
    url:
      protocol === "rest"
        ? `${baseUrl}/api/v1/whoami`
        : `${baseUrl}/agentplane.iam.v1.IdentityService/Whoami`,
    headers,
    body:
      protocol === "rest"
        ? undefined
        : protocol === "grpc"
          ? GRPC_EMPTY_REQUEST
          : new TextEncoder().encode("{}"),
    h1: !h2,
    clients: h2 ? 1 : concurrency,
    streams: h2 ? concurrency : 1,
  };
}

/**
 * The body bytes of a good answer on each protocol, which h2load cannot check itself: REST's and
 * Connect JSON's JSON, and gRPC's message in its envelope, as the verified clients received them.
 */
async function learnAnswerBytes(baseUrl: string, apiKey: string): Promise<Record<Protocol, number>> {
  const rest = await fetch(`${baseUrl}/api/v1/whoami`, { headers: { "x-api-key": apiKey } });
  const connect = await fetch(`${baseUrl}/agentplane.iam.v1.IdentityService/Whoami`, {
    method: "POST",
    headers: { "x-api-key": apiKey, "content-type": "application/json", "connect-protocol-version": "1" },
    body: "{}",
  });
  const sessionManager = new Http2SessionManager(baseUrl);
  const grpc = createClient(IdentityService, createGrpcTransport({ baseUrl, sessionManager }));
  const answer = await grpc
    .whoami({}, { headers: { "x-api-key": apiKey } })
    .finally(() => sessionManager.abort());
  const connectBytes = (await connect.arrayBuffer()).byteLength;
  const restBytes = (await rest.arrayBuffer()).byteLength;
  return {
    rest: restBytes,
    connect: connectBytes,
    "connect-h2": connectBytes,
    "rest-app": restBytes,
    grpc: toBinary(WhoamiResponseSchema, answer).byteLength + ENVELOPE_PREFIX_BYTES,
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
  measure: (checkout: Checkout, protocol: Protocol, concurrency: number) => Promise<MeteredResult>,
  beforeRound: (round: number) => Promise<void>,
): Promise<Results> {
  const results: Results = new Map();
  for (let round = 0; round < settings.rounds; round++) {
    await beforeRound(round);
    const flip = <T>(items: readonly T[]): T[] => (round % 2 === 0 ? [...items] : [...items].reverse());
    for (const concurrency of settings.concurrencies) {
      for (const protocol of flip(settings.protocols)) {
        for (const checkout of flip(settings.checkouts)) {
          // The custom-app server runs this checkout only.
          if (protocol === "rest-app" && checkout !== settings.checkouts[0]) continue;
          const result = await measure(checkout, protocol, concurrency);
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
      const rounds = (protocol: Protocol) =>
        (results.get(`${checkout.label}/${protocol}/${concurrency}`) ?? []).map((c) => c.rps);
      const cpu = (protocol: Protocol) => leastCpu(checkout, protocol, concurrency);
      for (const [protocol, over, aim] of RATIOS) {
        const ours = rounds(protocol);
        const theirs = rounds(over);
        if (ours.length === 0 || theirs.length === 0) continue;
        const ratio = Math.max(...ours) / Math.max(...theirs);
        const verdict = aim ? (ratio >= AIM_RATIO ? " PASS" : " FAIL") : "";
        if (aim && ratio < AIM_RATIO) ok = false;
        console.log(
          `${checkout.label} c=${concurrency}: ${LABELS[protocol]} / ${LABELS[over]} req/s = ${roundRatios(ours, theirs)}; ` +
            `by server CPU per call = ${(cpu(over) / cpu(protocol)).toFixed(2)} ${aim ? `(aim ≥ ${AIM_RATIO})${verdict}` : "(reference)"}`,
        );
      }
    }
  }
  const [self, ...baselines] = settings.checkouts;
  for (const baseline of baselines) {
    for (const concurrency of settings.concurrencies) {
      for (const protocol of settings.protocols) {
        if (!self) continue;
        // On a shared machine req/s swings with other load; the server's CPU per call swings far
        // less, and a CPU-bound server's req/s is its inverse: the verdict reads the median of the
        // per-round CPU ratios (each round ran the two side by side).
        const oursRounds = results.get(`${self.label}/${protocol}/${concurrency}`) ?? [];
        const theirRounds = results.get(`${baseline.label}/${protocol}/${concurrency}`) ?? [];
        if (oursRounds.length === 0 || theirRounds.length === 0) continue;
        const cpuPerRound = theirRounds.map(
          (theirs, i) => theirs.cpuMs / (oursRounds[i]?.cpuMs ?? Number.NaN),
        );
        const cpuRatio = median(cpuPerRound);
        const verdict = cpuRatio >= BASELINE_AIM_RATIO ? "PASS" : "FAIL";
        if (!(cpuRatio >= BASELINE_AIM_RATIO)) ok = false;
        const rps = roundRatios(
          oursRounds.map((r) => r.rps),
          theirRounds.map((r) => r.rps),
        );
        // Calls per CPU second, ours over theirs: the baseline's CPU per call over ours.
        const cpu = roundRatios(
          oursRounds.map((r) => 1 / r.cpuMs),
          theirRounds.map((r) => 1 / r.cpuMs),
        );
        console.log(
          `c=${concurrency} ${LABELS[protocol]}: ${self.label} / ${baseline.label} req/s = ${rps}; ` +
            `by server CPU per call (${baseline.label} / ${self.label}) = ${cpu}: median ${cpuRatio.toFixed(2)} (aim ≥ ${BASELINE_AIM_RATIO}) ${verdict}`,
        );
      }
    }
  }
  return ok;
}

/** Sets a server's log level through `PUT /internal/log-level` (the bench key is an admin's). */
async function setLogLevel(port: number, apiKey: string, level: string): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${port}/internal/log-level`, {
    method: "PUT",
    headers: { "x-api-key": apiKey, "content-type": "application/json" },
    body: JSON.stringify({ level }),
  });
  if (res.status !== 200) throw new Error(`PUT /internal/log-level: ${res.status} ${await res.text()}`);
}

function describeLogLevel(level: Settings["logLevel"]): string {
  return level === "info" || level === "debug" ? `${level} (access log on, to a file)` : level;
}

async function main(settings: Settings): Promise<void> {
  const pg = await startBenchPostgres("transport");
  const apiKey = createBenchApiKey();
  const servers = new Map<string, AgentplaneChild>();
  try {
    // One at a time: two servers migrating and bootstrapping one database at once is no bench's concern.
    const startCheckouts = async () => {
      for (const checkout of settings.checkouts) {
        const logLevel = checkout === THIS_CHECKOUT ? settings.logLevel : settings.baselineLogLevel;
        await servers.get(checkout.label)?.stop();
        const server = await spawnAgentplane(
          { databaseUrl: pg.url, apiKey, dataDir: join(pg.dir, `data-${checkout.label}`), logLevel },
          settings.profileDir,
          checkout.root,
          // Slices switch the level while it runs: its lines go to a file whatever it starts at.
          logLevel === "error" && settings.logSlices === 0
            ? undefined
            : join(pg.dir, `${checkout.label}.log`),
        );
        servers.set(checkout.label, server);
      }
    };
    await startCheckouts();
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
    /** The server a cell calls: the custom-app server for `rest-app`, else the checkout's. */
    const serverOf = (checkout: Checkout, protocol: Protocol) =>
      protocol === "rest-app" ? appServer : servers.get(checkout.label);
    const portOf = (checkout: Checkout, protocol: Protocol = "rest") =>
      serverOf(checkout, protocol)?.port ?? 0;
    const open = (
      checkout: Checkout,
      protocol: Protocol,
      concurrency: number,
      organizationId: string,
    ): BenchClient =>
      protocol === "grpc" || protocol === "connect-h2"
        ? createH2Client(protocol, `http://127.0.0.1:${portOf(checkout, protocol)}`, apiKey, organizationId)
        : createHttp1Client(protocol, portOf(checkout, protocol), apiKey, organizationId, concurrency);

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
    const answerBytes = await learnAnswerBytes(`http://127.0.0.1:${portOf(first)}`, apiKey);

    const pidOf = (checkout: Checkout, protocol: Protocol) => serverOf(checkout, protocol)?.pid ?? 0;
    const measure = async (checkout: Checkout, protocol: Protocol, concurrency: number) => {
      const meter = preciseProcessCpuMeter(pidOf(checkout, protocol));
      if (settings.h2load) {
        const before = await meter?.read();
        const cell = h2loadCell(
          protocol,
          `http://127.0.0.1:${portOf(checkout, protocol)}`,
          apiKey,
          concurrency,
        );
        const result = await runH2load(settings.h2load, {
          ...cell,
          ...settings,
          answerBytes: answerBytes[protocol],
        });
        const after = await meter?.read();
        const cpuMs =
          before && after && result.answered > 0
            ? (cpuSecondsBetween(before, after) * 1000) / result.answered
            : Number.NaN;
        return { ...result, cpuMs };
      }
      const client = open(checkout, protocol, concurrency, organizationId);
      return await runMeteredLoop(meter, () => client.call(), concurrency, settings).finally(() =>
        client.close(),
      );
    };

    /** One unrecorded cell of each protocol on every server, so that it is measured warm. */
    const warmUp = async () => {
      for (const checkout of settings.checkouts)
        for (const protocol of settings.protocols)
          if (protocol !== "rest-app") await measure(checkout, protocol, Math.max(...settings.concurrencies));
    };
    if (settings.logSlices > 0) {
      const { h2load } = settings;
      if (!h2load) throw new Error("--log-slices needs h2load (nghttp2-client) to generate the load");
      console.log(
        `transport bench, log slices: IdentityService/Whoami (admin key), Node ${process.version}, ` +
          `${availableParallelism()} cores; one server process (log lines to a file) under one h2load ` +
          `cell per protocol and concurrency, its level switched every ${settings.durationMs / 1000} s slice ` +
          `between ${settings.sliceLevels.join(" and ")}, ${settings.logSlices} pairs, after ${settings.warmupMs / 1000} s warm-up`,
      );
      await warmUp();
      const meter = preciseProcessCpuMeter(pidOf(THIS_CHECKOUT, "rest"));
      const start = (await meter?.read()) ?? new Map<number, number>();
      // CPU seconds since `start`: the slices take differences of these.
      const reading = async () => cpuSecondsBetween(start, (await meter?.read()) ?? new Map());
      const ok = await runLogSlices({
        ...settings,
        protocols: settings.protocols.filter((protocol) => protocol !== "rest-app"),
        pairs: settings.logSlices,
        sliceMs: settings.durationMs,
        levels: settings.sliceLevels,
        label: (protocol) => LABELS[protocol],
        setLevel: (level) => setLogLevel(portOf(THIS_CHECKOUT), apiKey, level),
        cpuSeconds: reading,
        load: (protocol, concurrency, warmupMs, durationMs) =>
          runH2load(h2load, {
            ...h2loadCell(protocol, `http://127.0.0.1:${portOf(THIS_CHECKOUT)}`, apiKey, concurrency),
            warmupMs,
            durationMs,
            answerBytes: answerBytes[protocol],
          }),
      });
      if (!ok) process.exitCode = 1;
      return;
    }
    console.log(
      `transport bench: IdentityService/Whoami (admin key), Node ${process.version}, ${availableParallelism()} cores; ` +
        `${settings.durationMs / 1000} s per cell after ${settings.warmupMs / 1000} s warm-up, ` +
        `best of ${settings.rounds} round(s), protocol and checkout order alternating per round` +
        `${settings.freshServers ? ", fresh server processes each round" : ""}; ` +
        `load from ${settings.h2load ? `h2load (${settings.h2load})` : "Node clients in the bench process"}; ` +
        `server log level ${describeLogLevel(settings.logLevel)}` +
        (settings.checkouts.length > 1 ? `, baselines' ${describeLogLevel(settings.baselineLogLevel)}` : ""),
    );
    // Each server process has its own luck (what V8 compiled and inlined, where its heap lies): two
    // of the same checkout and settings differ by a few percent for their whole life. Fresh
    // processes every round turn that into noise the median of the rounds sees through. A fresh
    // process first serves one unrecorded cell of each protocol, so that it is measured warm.
    const results = await runRounds(settings, measure, async (round) => {
      if (!settings.freshServers) return;
      if (round > 0) await startCheckouts();
      await warmUp();
    });
    if (!printReport(settings, results)) process.exitCode = 1;
  } finally {
    for (const server of servers.values()) await server.stop();
    await pg.stop();
  }
  if (settings.profileDir) console.log(`server CPU profile written to ${settings.profileDir}`);
}

await main(readSettings());
