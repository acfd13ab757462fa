/**
 * Generative-UI bench (`npm run bench:generative-ui`): what the graphs file's `ui` section costs, on
 * the fixture of the UI tests (test/e2e/fixtures/generative-ui), side by side in one run:
 *
 * - start: spawn to ready of a server with the fixture's graphs and its `ui` beside one with the same
 *   graphs and no `ui` (the difference is the bundling at start), alternating, median over rounds;
 * - bundle: `buildUiBundles` alone in this process, the first call and the median of the next ones;
 * - hot path: median latency of `GET /ui/weather/entrypoint.js` (public, from memory) and of
 *   `POST /ui/weather` (authenticated, HTML) beside `GET /ok` on the same server.
 *
 * Aim: bundling adds at most 1 s to start-up (it happens once per process, before the port opens) and
 * the UI routes answer within 2 × `GET /ok`'s median (they read memory only, plus authentication).
 *
 *   npm run bench:generative-ui -- [--rounds 5] [--calls 200]
 */
import { writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { createLogger } from "../server/logger.js";
import { parseGraphConfig } from "../server/runtime/graph-config.js";
import { buildUiBundles } from "../server/runtime/ui-bundler.js";
import { createBenchApiKey } from "./support/bench-app.js";
import { startBenchPostgres } from "./support/bench-postgres.js";
import { numberValue } from "./support/cli-values.js";
import { percentile } from "./support/percentile.js";
import { spawnAgentplane } from "./support/spawn-agentplane.js";
import { tableRow } from "./support/table-row.js";

/** The fixture: two graphs, and `ui` entries bundling one component module twice. */
const FIXTURE_DIR = resolve("test/e2e/fixtures/generative-ui");
/** Aim: milliseconds bundling may add to start-up. */
const AIM_START_EXTRA_MS = 1_000;
/** Aim: a UI route's median latency over `GET /ok`'s. */
const AIM_ROUTE_RATIO = 2;

const { values } = parseArgs({
  options: { rounds: { type: "string", default: "5" }, calls: { type: "string", default: "200" } },
});
const rounds = numberValue("rounds", values.rounds, 1, true);
const calls = numberValue("calls", values.calls, 10, true);

const median = (samples: number[]) =>
  percentile(
    [...samples].sort((a, b) => a - b),
    50,
  );
const ms = (value: number) => `${value.toFixed(1)} ms`;

const pg = await startBenchPostgres("generative-ui");
try {
  const apiKey = createBenchApiKey();
  const graphs = {
    weather: join(FIXTURE_DIR, "weather-graph.ts:graph"),
    plain: join(FIXTURE_DIR, "weather-graph.ts:plain"),
  };
  const withUi = join(pg.dir, "with-ui.json");
  const withoutUi = join(pg.dir, "without-ui.json");
  const ui = { weather: join(FIXTURE_DIR, "ui.tsx"), "weather-cards": join(FIXTURE_DIR, "ui.tsx") };
  await writeFile(withUi, JSON.stringify({ graphs, ui }));
  await writeFile(withoutUi, JSON.stringify({ graphs }));

  const starts: Record<"with" | "without", number[]> = { with: [], without: [] };
  for (let round = 0; round < rounds; round++) {
    for (const [kind, graphConfigPath] of [
      ["without", withoutUi],
      ["with", withUi],
    ] as const) {
      const began = performance.now();
      const child = await spawnAgentplane(
        { databaseUrl: pg.url, apiKey, dataDir: join(pg.dir, "data"), graphConfigPath },
        undefined,
      );
      starts[kind].push(performance.now() - began);
      await child.stop();
    }
  }

  const log = createLogger("error");
  const config = parseGraphConfig({ graphs, ui }, withUi);
  const bundleTimes: number[] = [];
  for (let i = 0; i <= rounds; i++) {
    const began = performance.now();
    await buildUiBundles(config.ui, log);
    bundleTimes.push(performance.now() - began);
  }

  const child = await spawnAgentplane(
    { databaseUrl: pg.url, apiKey, dataDir: join(pg.dir, "data"), graphConfigPath: withUi },
    undefined,
  );
  const base = `http://127.0.0.1:${child.port}`;
  const latency = async (call: () => Promise<Response>): Promise<number> => {
    const samples: number[] = [];
    for (let i = 0; i < calls; i++) {
      const began = performance.now();
      const response = await call();
      await response.arrayBuffer();
      if (!response.ok) throw new Error(`unexpected ${response.status}`);
      samples.push(performance.now() - began);
    }
    return median(samples);
  };
  let ok: number;
  let file: number;
  let html: number;
  try {
    ok = await latency(() => fetch(`${base}/ok`));
    file = await latency(() => fetch(`${base}/ui/weather/entrypoint.js`));
    html = await latency(() =>
      fetch(`${base}/ui/weather`, {
        method: "POST",
        headers: { "x-api-key": apiKey, "content-type": "application/json" },
        body: JSON.stringify({ name: "weather" }),
      }),
    );
  } finally {
    await child.stop();
  }

  const widths = [34, 12, 12, 8];
  const startWith = median(starts.with);
  const startWithout = median(starts.without);
  console.log(`generative UI, ${rounds} rounds, ${calls} calls per route\n`);
  console.log(tableRow(["measure", "with ui", "without ui", "ratio"], widths));
  console.log(
    tableRow(
      [
        "start (spawn → ready), median",
        ms(startWith),
        ms(startWithout),
        (startWith / startWithout).toFixed(2),
      ],
      widths,
    ),
  );
  console.log(
    `\nbundling alone (2 ui entries): first ${ms(bundleTimes[0]!)}, then median ${ms(median(bundleTimes.slice(1)))}`,
  );
  console.log(`\n${tableRow(["route (median latency)", "latency", "GET /ok", "ratio"], widths)}`);
  for (const [name, value] of [
    ["GET /ui/weather/entrypoint.js", file],
    ["POST /ui/weather", html],
  ] as const)
    console.log(tableRow([name, ms(value), ms(ok), (value / ok).toFixed(2)], widths));
  const extra = startWith - startWithout;
  const worst = Math.max(file, html) / ok;
  console.log(
    `\naim: start-up + ≤ ${AIM_START_EXTRA_MS} ms: ${extra <= AIM_START_EXTRA_MS ? "met" : "missed"} (${ms(extra)}); ` +
      `UI routes ≤ ${AIM_ROUTE_RATIO} × GET /ok: ${worst <= AIM_ROUTE_RATIO ? "met" : "missed"} (${worst.toFixed(2)})`,
  );
} finally {
  await pg.stop();
}
