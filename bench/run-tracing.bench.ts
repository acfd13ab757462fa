/**
 * Run tracing bench (`npm run bench:run-tracing`): what recording agent runs in the tracing store
 * costs a run. Two agentplane servers side by side in this process, on one Postgres (a database
 * each), the same graph (a node that calls a chat model: five trace records a run) and the same
 * client (`@langchain/langgraph-sdk`): one with AGENTPLANE_RUN_TRACING on, one with it off.
 * Rounds alternate the servers so both see the same machine load.
 *
 * - `/runs/wait` latency at concurrency 1 (p50, p99);
 * - completed runs per second at concurrency 20;
 * - with tracing on, the trace records stored (the count of `runs` rows) after the servers stop.
 *
 * Aim: tracing on costs at most 10% of p50 latency and of throughput (ratios on/off ≤ 1.10 and
 * ≥ 0.90): records are written in the background, batched, never awaited by the run.
 *
 *   npm run bench:run-tracing -- [--rounds 3] [--runs 100] [--concurrent-runs 200]
 */
import { mkdir, rm, symlink, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { Client } from "@langchain/langgraph-sdk";
import { type App, startApp } from "../server/app.js";
import { createLogger } from "../server/logger.js";
import { createSql } from "../server/store/db.js";
import { testConfig } from "../test/support/test-config.js";
import { BENCH_DB_POOL_MAX, createBenchApiKey } from "./support/bench-app.js";
import { createBenchDatabase, startBenchPostgres } from "./support/bench-postgres.js";
import { numberValue } from "./support/cli-values.js";
import { percentile } from "./support/percentile.js";
import { tableRow } from "./support/table-row.js";

const GRAPH = `
import { FakeListChatModel } from "@langchain/core/utils/testing";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
const model = new FakeListChatModel({ responses: ["ok"] });
export const graph = new StateGraph(MessagesAnnotation)
  .addNode("agent", async (state, config) => ({ messages: [await model.invoke(state.messages, config)] }))
  .addEdge(START, "agent")
  .addEdge("agent", END)
  .compile();
`;
/** Clients at once in the throughput phase: well within the servers' 10 run slots' queue. */
const CONCURRENCY = 20;
/** Aim: tracing on costs at most this share of p50 latency and of throughput. */
const AIM_COST = 0.1;
/** Runs before measuring, per server: loads the graph and warms the pools and JIT. */
const WARMUP_RUNS = 20;

const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "3" },
    runs: { type: "string", default: "100" },
    "concurrent-runs": { type: "string", default: "200" },
  },
});
const rounds = numberValue("rounds", values.rounds, 1, true);
const sequentialRuns = numberValue("runs", values.runs, 1, true);
const concurrentRuns = numberValue("concurrent-runs", values["concurrent-runs"], 1, true);

interface Side {
  name: "on" | "off";
  app: App;
  sdk: Client;
  databaseUrl: string;
  latencies: number[];
  rates: number[];
}

async function runOnce(sdk: Client): Promise<void> {
  await sdk.runs.wait(null, "agent", { input: { messages: [{ role: "human", content: "hi" }] } });
}

async function measureLatency(side: Side): Promise<void> {
  for (let i = 0; i < sequentialRuns; i++) {
    const start = performance.now();
    await runOnce(side.sdk);
    side.latencies.push(performance.now() - start);
  }
}

async function measureThroughput(side: Side): Promise<void> {
  let next = 0;
  const start = performance.now();
  const worker = async () => {
    while (next < concurrentRuns) {
      next += 1;
      await runOnce(side.sdk);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  side.rates.push(concurrentRuns / ((performance.now() - start) / 1000));
}

const pg = await startBenchPostgres("run-tracing");
const sides: Side[] = [];
try {
  const graphDir = join(pg.dir, "graphs");
  await mkdir(graphDir);
  await symlink(resolve("node_modules"), join(graphDir, "node_modules"), "dir");
  await writeFile(join(graphDir, "package.json"), JSON.stringify({ type: "module" }));
  await writeFile(join(graphDir, "graph.ts"), GRAPH);
  await writeFile(
    join(graphDir, "langgraph.json"),
    JSON.stringify({ graphs: { agent: "./graph.ts:graph" } }),
  );
  for (const name of ["on", "off"] as const) {
    const databaseUrl = await createBenchDatabase(pg, `tracing_${name}`);
    const apiKey = createBenchApiKey();
    const config = testConfig({
      databaseUrl,
      dataDir: join(pg.dir, `data-${name}`),
      bootstrapApiKey: apiKey,
      dbPoolMax: BENCH_DB_POOL_MAX,
      shutdownGraceMs: 5_000,
      graphConfigPath: join(graphDir, "langgraph.json"),
      runTracing: name === "on",
    });
    const app = await startApp(config, createLogger("error"));
    const sdk = new Client({
      apiUrl: `http://127.0.0.1:${app.address.port}`,
      apiKey,
      callerOptions: { maxRetries: 0 },
    });
    sides.push({ name, app, sdk, databaseUrl, latencies: [], rates: [] });
    for (let i = 0; i < WARMUP_RUNS; i++) await runOnce(sdk);
  }
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? sides : [...sides].reverse();
    for (const side of order) await measureLatency(side);
    for (const side of order) await measureThroughput(side);
  }
  for (const side of sides) await side.app.stop();

  const stats = (side: Side) => {
    const sorted = [...side.latencies].sort((a, b) => a - b);
    const rates = [...side.rates].sort((a, b) => a - b);
    return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), rate: percentile(rates, 50) };
  };
  const [on, off] = sides.map(stats) as [ReturnType<typeof stats>, ReturnType<typeof stats>];
  const widths = [28, 10, 10, 12];
  console.log(tableRow(["", "tracing on", "tracing off", "on / off"], widths));
  const row = (label: string, a: number, b: number, digits: number) =>
    console.log(tableRow([label, a.toFixed(digits), b.toFixed(digits), (a / b).toFixed(2)], widths));
  row("/runs/wait p50 (ms), c=1", on.p50, off.p50, 1);
  row("/runs/wait p99 (ms), c=1", on.p99, off.p99, 1);
  row(`runs/s, c=${CONCURRENCY} (median)`, on.rate, off.rate, 0);
  const sql = createSql(sides[0]?.databaseUrl ?? "", {
    max: 1,
    statementTimeoutMs: 0,
    applicationName: "bench",
  });
  const [stored] = await sql<{ n: number }[]>`select count(*)::int as n from runs`;
  await sql.end();
  const total = WARMUP_RUNS + rounds * (sequentialRuns + concurrentRuns);
  console.log(`trace records stored with tracing on: ${stored?.n} for ${total} runs`);
  const latencyOk = on.p50 / off.p50 <= 1 + AIM_COST;
  const rateOk = on.rate / off.rate >= 1 - AIM_COST;
  console.log(
    `aim: tracing costs ≤ ${AIM_COST * 100}% of p50 and of runs/s: ${latencyOk && rateOk ? "met" : "NOT met"}`,
  );
} finally {
  for (const side of sides) await side.app.stop().catch(() => {});
  await pg.stop();
  await rm(join(pg.dir, "graphs"), { recursive: true, force: true });
}
