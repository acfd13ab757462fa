/**
 * Runs bench (`npm run bench:crons`): 1,000 crons due in the same minute, fired by agentplane with
 * one and with two worker processes on one database, side by side in one run. Each setup gets a
 * database of its own in a throwaway embedded Postgres (fsync off) and runs in child processes on
 * the real clock. The crons are stateless (`on_run_completed: keep`, so their runs stay to be
 * counted), on a one-node graph, all scheduled for one minute M of the day, created through the REST
 * API before M. Measured from Postgres, per setup:
 *
 * - first fired: when the first cron run was created, after M (the tick's lateness: the tick runs
 *   every ≤ 5 s, sooner when a cron is due sooner, plus the queue poll);
 * - last fired: when the last cron run was created, after M;
 * - last started: when the last run started, after M (the "time from tick to last run
 *   started", with the tick taken as M), and the same after the first firing;
 * - exactly once: every cron has exactly one run, checked again a tick later (no late duplicate).
 *
 *   npm run bench:crons -- [--crons 1000] [--targets one,two]
 *
 * The settings are also read from BENCH_CRONS and BENCH_TARGETS. No peer fires crons (the JS
 * reference server's crons are stubs), so the ratio shown is two processes against one.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { createSql, type Sql } from "../server/store/db.js";
import { createBenchApiKey } from "./support/bench-app.js";
import { type BenchPostgres, createBenchDatabase, startBenchPostgres } from "./support/bench-postgres.js";
import { listValue, numberValue } from "./support/cli-values.js";
import { type AgentplaneChild, spawnAgentplane } from "./support/spawn-agentplane.js";
import { tableRow } from "./support/table-row.js";

/** The graphs file of bench:runs: one graph, `agent`, one node. */
const GRAPHS_FILE = fileURLToPath(new URL("./runs/langgraph.json", import.meta.url));
/** The burst. */
const DEFAULT_CRONS = 1_000;
/** Cron creations in flight at once: enough to overlap round trips on a 2-core machine. */
const CREATE_CONCURRENCY = 16;
/** Time kept free before the minute the crons are due in, for creating them (1,000 take a few seconds). */
const CREATE_MARGIN_MS = 25_000;
/** How long the burst may take to fire and start before the bench gives up on a setup. */
const BURST_TIMEOUT_MS = 180_000;
/** Wait after the burst before counting again: longer than a tick (5 s) plus a queue poll (2 s). */
const RECHECK_MS = 8_000;
/** How often the bench reads progress from Postgres while it waits. */
const POLL_MS = 100;

const TARGETS = ["one", "two"] as const;
type Target = (typeof TARGETS)[number];

interface Result {
  target: Target;
  firstFiredMs: number;
  lastFiredMs: number;
  lastStartedMs: number;
  startedAfterFirstFiredMs: number;
  runs: number;
  exactlyOnce: boolean;
}

function settingsFromArgs(): { crons: number; targets: Target[] } {
  const { values } = parseArgs({
    options: { crons: { type: "string" }, targets: { type: "string" } },
  });
  return {
    crons: numberValue("crons", values.crons ?? process.env.BENCH_CRONS ?? String(DEFAULT_CRONS), 1, true),
    targets: listValue("targets", values.targets ?? process.env.BENCH_TARGETS ?? TARGETS.join(","), TARGETS),
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The first whole minute at least {@link CREATE_MARGIN_MS} away. */
function nextMinute(): Date {
  const at = new Date(Date.now() + CREATE_MARGIN_MS);
  at.setUTCSeconds(0, 0);
  return new Date(at.getTime() + 60_000);
}

/** Creates `count` stateless crons due daily at `minute`, through the REST API. */
async function createCrons(baseUrls: string[], apiKey: string, count: number, minute: Date): Promise<void> {
  const schedule = `${minute.getUTCMinutes()} ${minute.getUTCHours()} * * *`;
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < count; i = next++) {
      const res = await fetch(`${baseUrls[i % baseUrls.length]}/runs/crons`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": apiKey },
        body: JSON.stringify({
          assistant_id: "agent",
          schedule,
          input: { messages: [] },
          on_run_completed: "keep",
          metadata: { bench: i },
        }),
      });
      if (!res.ok) throw new Error(`creating cron ${i}: ${res.status} ${await res.text()}`);
    }
  };
  await Promise.all(Array.from({ length: CREATE_CONCURRENCY }, worker));
}

interface Progress {
  runs: number;
  started: number;
  firstCreated: Date | null;
  lastCreated: Date | null;
  lastStarted: Date | null;
  duplicated: number;
}

async function progress(sql: Sql): Promise<Progress> {
  const [row] = await sql<Progress[]>`
    with per_cron as (
      select metadata->>'cron_id' as cron_id, count(*) as n from agent_runs
      where metadata ? 'cron_id' group by 1
    )
    select
      (select count(*)::int from agent_runs where metadata ? 'cron_id') as runs,
      (select count(*)::int from agent_runs where metadata ? 'cron_id' and started_at is not null) as started,
      (select min(created_at) from agent_runs where metadata ? 'cron_id') as "firstCreated",
      (select max(created_at) from agent_runs where metadata ? 'cron_id') as "lastCreated",
      (select max(started_at) from agent_runs where metadata ? 'cron_id') as "lastStarted",
      (select count(*)::int from per_cron where n > 1) as duplicated`;
  if (!row) throw new Error("no progress row");
  return row;
}

async function measure(
  target: Target,
  pg: BenchPostgres,
  crons: number,
  log: (line: string) => void,
): Promise<Result> {
  const url = await createBenchDatabase(pg, `crons_${target}`);
  const apiKey = createBenchApiKey();
  const children: AgentplaneChild[] = [];
  const sql = createSql(url, { max: 1, statementTimeoutMs: 0, applicationName: "bench-crons" });
  try {
    const processes = target === "one" ? 1 : 2;
    for (let i = 0; i < processes; i += 1)
      children.push(
        await spawnAgentplane(
          {
            databaseUrl: url,
            apiKey,
            dataDir: join(pg.dir, `data-${target}-${i}`),
            graphConfigPath: GRAPHS_FILE,
          },
          undefined,
        ),
      );
    const baseUrls = children.map((c) => `http://127.0.0.1:${c.port}`);
    const minute = nextMinute();
    const began = Date.now();
    await createCrons(baseUrls, apiKey, crons, minute);
    if (Date.now() >= minute.getTime())
      throw new Error("creating the crons ran past their minute; use fewer");
    log(`${target}: ${crons} crons created in ${Date.now() - began} ms; due at ${minute.toISOString()}`);
    const deadline = minute.getTime() + BURST_TIMEOUT_MS;
    let seen = await progress(sql);
    while (seen.started < crons || seen.runs < crons) {
      if (Date.now() > deadline) throw new Error(`${target}: burst unfinished: ${JSON.stringify(seen)}`);
      await sleep(POLL_MS);
      seen = await progress(sql);
    }
    await sleep(RECHECK_MS);
    const settled = await progress(sql);
    const at = (d: Date | null) => (d ? d.getTime() - minute.getTime() : Number.NaN);
    return {
      target,
      firstFiredMs: at(seen.firstCreated),
      lastFiredMs: at(seen.lastCreated),
      lastStartedMs: at(seen.lastStarted),
      startedAfterFirstFiredMs: (seen.lastStarted?.getTime() ?? 0) - (seen.firstCreated?.getTime() ?? 0),
      runs: settled.runs,
      exactlyOnce: settled.runs === crons && settled.duplicated === 0,
    };
  } finally {
    await sql.end();
    for (const child of children) await child.stop();
  }
}

async function main(): Promise<void> {
  const settings = settingsFromArgs();
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const pg = await startBenchPostgres("crons");
  const results: Result[] = [];
  try {
    for (const target of settings.targets) results.push(await measure(target, pg, settings.crons, log));
  } finally {
    await pg.stop();
  }
  const widths = [28, 12, 12];
  const byTarget = new Map(results.map((r) => [r.target, r]));
  const cell = (t: Target, f: (r: Result) => number | string) => {
    const r = byTarget.get(t);
    return r === undefined ? "-" : String(f(r));
  };
  const ratio = (f: (r: Result) => number) => {
    const one = byTarget.get("one");
    const two = byTarget.get("two");
    return one && two ? (f(two) / f(one)).toFixed(2) : "-";
  };
  console.log(`bench:crons: ${settings.crons} crons due in one minute (ms after the minute)`);
  console.log(tableRow(["", "1 process", "2 processes", "2 / 1"], [...widths, 8]));
  const rows: [string, (r: Result) => number][] = [
    ["first run created", (r) => r.firstFiredMs],
    ["last run created", (r) => r.lastFiredMs],
    ["last run started", (r) => r.lastStartedMs],
    ["first created → last started", (r) => r.startedAfterFirstFiredMs],
  ];
  for (const [name, f] of rows)
    console.log(tableRow([name, cell("one", f), cell("two", f), ratio(f)], [...widths, 8]));
  console.log(
    tableRow(
      [
        "runs (exactly once?)",
        cell("one", (r) => `${r.runs} ${r.exactlyOnce ? "yes" : "NO"}`),
        cell("two", (r) => `${r.runs} ${r.exactlyOnce ? "yes" : "NO"}`),
        "",
      ],
      [...widths, 8],
    ),
  );
  if (results.some((r) => !r.exactlyOnce)) process.exitCode = 1;
}

await main();
