/**
 * First `values` of this checkout against a baseline, interleaved (`npm run bench:first-values`):
 * the runs bench's first-values call (`POST /threads/{id}/runs/stream` on a new thread of the
 * one-node graph, bench/runs/graph.ts) on two agentplane servers, one of this checkout and one of
 * `--baseline` (bench/support/checkouts.ts), each on a database of its own in one embedded
 * Postgres, one call on each in turn (the order alternating), so that the machine's slow spells
 * fall on both alike. The runs bench measures each server's series one after another, which on a
 * machine whose speed drifts by a third within minutes can put a whole series in a slow spell;
 * here every block of calls has both servers' calls side by side.
 *
 * Reports both servers' p50 and, per block of `--block` calls, the ratio of the baseline's p50 to
 * this checkout's (above 1: this checkout is faster), and the median of those ratios.
 *
 *   npm run bench:first-values -- --baseline <dir> [--calls 400] [--block 50] [--warmup 300]
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createJsonClient, type JsonClient } from "./agent-crud/json-client.js";
import { createStreamClient, type StreamClient } from "./runs/stream-call.js";
import { createBenchApiKey } from "./support/bench-app.js";
import { createBenchDatabase, startBenchPostgres } from "./support/bench-postgres.js";
import { BASELINE_OPTION, baselineCheckouts, type Checkout, THIS_CHECKOUT } from "./support/checkouts.js";
import { numberValue } from "./support/cli-values.js";
import { percentile } from "./support/percentile.js";
import { type AgentplaneChild, spawnAgentplane } from "./support/spawn-agentplane.js";

const { values } = parseArgs({
  options: {
    ...BASELINE_OPTION,
    calls: { type: "string", default: "400" },
    // Blocks of 50 calls: a p50 of its own steady to a few percent, a ratio per block.
    block: { type: "string", default: "50" },
    // Unmeasured calls on each server first: enough for the JIT to settle on the run path.
    warmup: { type: "string", default: "300" },
  },
});
const calls = numberValue("calls", values.calls, 1, true);
const block = numberValue("block", values.block, 1, true);
const warmup = numberValue("warmup", values.warmup, 0, true);
const [baseline, ...more] = baselineCheckouts(values.baseline);
if (!baseline || more.length > 0) throw new Error("--baseline: name exactly one checkout to compare with");

const GRAPHS = "bench/runs/langgraph.json";
const pg = await startBenchPostgres("first-values-ab");
const apiKey = createBenchApiKey();
const checkouts = [THIS_CHECKOUT, baseline];
/** One server of the comparison, with its clients and its calls' first-values times. */
interface Server {
  checkout: Checkout;
  child: AgentplaneChild;
  json: JsonClient;
  streams: StreamClient;
  firsts: number[];
}
const servers: Server[] = [];
try {
  for (const [i, checkout] of checkouts.entries()) {
    const databaseUrl = i === 0 ? pg.url : await createBenchDatabase(pg, "baseline");
    const child = await spawnAgentplane(
      {
        databaseUrl,
        apiKey,
        dataDir: join(pg.dir, `data-${i}`),
        graphConfigPath: join(checkout.root, GRAPHS),
      },
      undefined,
      checkout.root,
    );
    const headers = { "x-api-key": apiKey };
    servers.push({
      checkout,
      child,
      json: createJsonClient(child.port, headers, 1),
      streams: createStreamClient(child.port, headers, 1),
      firsts: [] as number[],
    });
  }

  /** One first-values call on `server`, on a thread created before the clock starts. */
  const firstValues = async (server: Server): Promise<number> => {
    const thread = await server.json.send("POST", "/threads", {});
    const threadId = (thread.json as { thread_id?: string } | undefined)?.thread_id;
    if (thread.status !== 200 || !threadId) throw new Error(`thread: HTTP ${thread.status} ${thread.text}`);
    const timing = await server.streams.stream(`/threads/${threadId}/runs/stream`, {
      assistant_id: "agent",
      input: {},
      stream_mode: ["values"],
    });
    return timing.firstValuesMs;
  };

  for (let i = 0; i < warmup; i++) for (const server of servers) await firstValues(server);
  for (let i = 0; i < calls; i++) {
    const order = i % 2 === 0 ? servers : [...servers].reverse();
    for (const server of order) server.firsts.push(await firstValues(server));
  }

  const p50 = (xs: number[]) => percentile(Float64Array.from(xs).sort(), 50);
  const [ours, theirs] = servers.map((s) => s.firsts);
  const ratios: number[] = [];
  for (let at = 0; at + block <= calls; at += block)
    ratios.push(p50(theirs?.slice(at, at + block) ?? []) / p50(ours?.slice(at, at + block) ?? []));
  console.log(
    `first values, interleaved: ${calls} calls on each server after ${warmup} each unmeasured, ` +
      `Node ${process.version}; one-node graph, a new thread per call`,
  );
  for (const server of servers)
    console.log(`  ${server.checkout.label.padEnd(24)} p50 ${p50(server.firsts).toFixed(2)} ms`);
  console.log(
    `  ${baseline.label} ÷ ${THIS_CHECKOUT.label} per block of ${block}: ` +
      `${ratios.map((r) => r.toFixed(2)).join(" ")}; median ${p50(ratios).toFixed(3)} (above 1: this checkout is faster)`,
  );
} finally {
  for (const server of servers) {
    server.streams.close();
    server.json.close();
    await server.child.stop();
  }
  await pg.stop();
}
