/**
 * Query bench (`npm run bench:query`): the LangSmith v2 runs query (`POST /api/v2/runs/query`, what
 * `client.runs.query()` sends) against the v1 route it replaces (`POST /api/v1/runs/query`, what
 * `listRuns()` sends), side by side on one server and one project of 1M runs: a metadata filter
 * (`customer` = one of ten values) and a one-week start-time window, 100 runs a page, the first page
 * and the tenth (reached by following the cursors). p50/p99 of each and the v1/v2 p50 ratio (aim
 * ≥ 1: v2 no slower than v1), and p50 under 50 ms. `--rounds N` (default 3) times N rounds after
 * the one load and prints each round, then the median and range over the rounds.
 *
 * The runs are loaded with one `insert ... select from generate_series` (the shape ingest stores:
 * traces of four runs, a chain root and three children, with metadata, inputs, outputs and tags)
 * rather than through ingest, which would take an hour at 1M runs; `bench:ingest` measures ingest.
 * Both routes answer every timed request with the same runs (checked before timing).
 */
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createSql } from "../server/store/db.js";
import { createBenchApiKey, startBenchApp } from "./support/bench-app.js";
import { startBenchPostgres } from "./support/bench-postgres.js";
import { numberValue } from "./support/cli-values.js";
import { percentile } from "./support/percentile.js";
import { median } from "./support/round-ratios.js";

/** Runs in the project. */
const RUNS = 1_000_000;
/** Runs per trace: a root and three children. */
const TRACE_SIZE = 4;
/** Days the runs' start times spread over, ending now. */
const SPAN_DAYS = 30;
/** Days of the queried window, ending now. */
const WINDOW_DAYS = 7;
/** Distinct `customer` metadata values; the filter keeps one of them (a tenth of the runs). */
const CUSTOMERS = 10;
/** Runs per page: the most either route returns. */
const PAGE_SIZE = 100;
/** The page measured besides the first. */
const DEEP_PAGE = 10;
/** The pages timed. */
const PAGES = [1, DEEP_PAGE] as const;
/** Timed requests per (route, page), after the warm-up. */
const SAMPLES = 300;
/** Requests run first and not counted, so plans and caches are warm. */
const WARM_UP = 10;
/** The aim for p50, in ms. */
const AIM_P50_MS = 50;
/** Memory for the bulk load and its index builds, so they do not spill to disk. */
const LOAD_WORK_MEM = "256MB";

/** The fields both routes return: what the SDK's listRuns selects by default, less the large payloads. */
const V1_SELECT = [
  "id",
  "name",
  "run_type",
  "start_time",
  "end_time",
  "status",
  "trace_id",
  "dotted_order",
  "tags",
  "extra",
];
const V2_SELECTS = [
  "ID",
  "NAME",
  "RUN_TYPE",
  "START_TIME",
  "END_TIME",
  "STATUS",
  "TRACE_ID",
  "DOTTED_ORDER",
  "TAGS",
  "EXTRA",
];
const FILTER = `and(eq(metadata_key, "customer"), eq(metadata_value, "customer-3"))`;

interface Page {
  ids: string[];
  cursor: string | undefined;
}

type Route = "v1" | "v2";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "3" } } });
/** Timed rounds after the one load: each round times both pages on both routes. */
const rounds = numberValue("rounds", values.rounds, 1, true);

async function main(): Promise<void> {
  const pg = await startBenchPostgres("query");
  const apiKey = createBenchApiKey();
  const app = await startBenchApp({ databaseUrl: pg.url, apiKey, dataDir: join(pg.dir, "data") });
  const base = `http://127.0.0.1:${app.address.port}`;
  const sql = createSql(pg.url, { max: 2, statementTimeoutMs: 0, applicationName: "bench-query" });
  try {
    const post = async (path: string, body: unknown): Promise<Record<string, unknown>> => {
      const res = await fetch(`${base}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": apiKey },
        body: JSON.stringify(body),
      });
      const json = (await res.json()) as Record<string, unknown>;
      if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
      return json;
    };
    const project = await post("/api/v1/sessions", { name: "bench-query" });
    const projectId = String(project.id);
    const workspaceId = String(project.tenant_id);
    const [version] = await sql`select current_setting('server_version') as version`;
    console.log(
      `query bench: PostgreSQL ${version?.version} (embedded, fsync off), Node ${process.version}, ${availableParallelism()} cores`,
    );
    const loadStarted = performance.now();
    await load(sql, workspaceId, projectId);
    console.log(
      `loaded ${RUNS.toLocaleString("en")} runs (${(RUNS / TRACE_SIZE).toLocaleString("en")} traces over ${SPAN_DAYS} days) in ${((performance.now() - loadStarted) / 1000).toFixed(1)} s`,
    );

    const now = Date.now();
    const min = new Date(now - WINDOW_DAYS * 86_400_000).toISOString();
    const max = new Date(now).toISOString();
    const fetchPage = async (route: Route, cursor: string | undefined): Promise<Page> => {
      if (route === "v1") {
        const body = {
          session: [projectId],
          filter: FILTER,
          start_time: min,
          end_time: max,
          limit: PAGE_SIZE,
          select: V1_SELECT,
          ...(cursor ? { cursor } : {}),
        };
        const json = (await post("/api/v1/runs/query", body)) as {
          runs: { id: string }[];
          cursors: { next?: string };
        };
        return { ids: json.runs.map((r) => r.id), cursor: json.cursors.next };
      }
      const body = {
        project_ids: [projectId],
        filter: FILTER,
        min_start_time: min,
        max_start_time: max,
        page_size: PAGE_SIZE,
        selects: V2_SELECTS,
        ...(cursor ? { cursor } : {}),
      };
      const json = (await post("/api/v2/runs/query", body)) as {
        items: { id: string }[];
        next_cursor?: string;
      };
      return { ids: json.items.map((r) => r.id), cursor: json.next_cursor };
    };

    // The cursor of each page, per route, found by following them; and the same runs on both routes.
    const cursors = new Map<Route, (string | undefined)[]>();
    const pagesOf = new Map<Route, string[][]>();
    for (const route of ["v1", "v2"] as const) {
      const list: (string | undefined)[] = [undefined];
      const pages: string[][] = [];
      for (let page = 1; page <= DEEP_PAGE; page++) {
        const got = await fetchPage(route, list[page - 1]);
        pages.push(got.ids);
        list.push(got.cursor);
      }
      cursors.set(route, list);
      pagesOf.set(route, pages);
    }
    if (JSON.stringify(pagesOf.get("v1")) !== JSON.stringify(pagesOf.get("v2"))) {
      throw new Error("v1 and v2 do not answer the same pages");
    }
    const full = pagesOf.get("v2")?.every((p) => p.length === PAGE_SIZE);
    if (!full) throw new Error(`expected ${DEEP_PAGE} full pages of ${PAGE_SIZE} runs`);
    console.log(
      `query: filter ${FILTER}, start time in the last ${WINDOW_DAYS} days, ${PAGE_SIZE} runs a page; v1 and v2 answer the same ${DEEP_PAGE} pages`,
    );

    const perRound: RoundResult[] = [];
    for (let round = 1; round <= rounds; round++) {
      const results = await timeRound(fetchPage, cursors);
      perRound.push(results);
      console.log(`\nround ${round} of ${rounds}`);
      printRound(results);
    }
    if (rounds > 1) printSummary(perRound);
    const worst = Math.max(
      ...perRound.flatMap((r) => PAGES.map((page) => r.get(`v2:${page}`)?.p50 ?? Number.NaN)),
    );
    const worstMedian = Math.max(
      ...PAGES.map((page) => median(perRound.map((r) => r.get(`v2:${page}`)?.p50 ?? Number.NaN))),
    );
    console.log(
      `\nworst v2 p50 ${worst.toFixed(2)} ms (median over rounds ${worstMedian.toFixed(2)} ms); aim p50 < ${AIM_P50_MS} ms: ${worstMedian < AIM_P50_MS ? "met" : "NOT met"}`,
    );
  } finally {
    await sql.end();
    await app.stop();
    await pg.stop();
  }
}

/** p50 and p99 (ms) of one round, by `<route>:<page>`. */
type RoundResult = Map<string, { p50: number; p99: number }>;

/**
 * One round: for each page, {@link WARM_UP} + {@link SAMPLES} requests per route, the two routes
 * alternating (and which goes first alternating too), so both see the same machine load.
 */
async function timeRound(
  fetchPage: (route: Route, cursor: string | undefined) => Promise<Page>,
  cursors: ReadonlyMap<Route, readonly (string | undefined)[]>,
): Promise<RoundResult> {
  const results: RoundResult = new Map();
  for (const page of PAGES) {
    const samples = new Map<Route, number[]>([
      ["v1", []],
      ["v2", []],
    ]);
    for (let i = 0; i < WARM_UP + SAMPLES; i++) {
      for (const route of i % 2 === 0 ? (["v1", "v2"] as const) : (["v2", "v1"] as const)) {
        const cursor = cursors.get(route)?.[page - 1];
        const started = performance.now();
        await fetchPage(route, cursor);
        if (i >= WARM_UP) samples.get(route)?.push(performance.now() - started);
      }
    }
    for (const [route, list] of samples) {
      list.sort((a, b) => a - b);
      results.set(`${route}:${page}`, { p50: percentile(list, 50), p99: percentile(list, 99) });
    }
  }
  return results;
}

/** A round's p50/p99 per page and route, and its v1/v2 p50 ratios. */
function printRound(results: RoundResult): void {
  console.log(`${"page".padEnd(8)}${"route".padEnd(24)}${"p50 ms".padStart(10)}${"p99 ms".padStart(10)}`);
  for (const page of PAGES) {
    for (const route of ["v1", "v2"] as const) {
      const r = results.get(`${route}:${page}`);
      const label = route === "v1" ? "v1 /api/v1/runs/query" : "v2 /api/v2/runs/query";
      console.log(
        `${String(page).padEnd(8)}${label.padEnd(24)}${r?.p50.toFixed(2).padStart(10)}${r?.p99.toFixed(2).padStart(10)}`,
      );
    }
  }
  console.log("v1/v2 p50 ratio (aim ≥ 1: v2 no slower than v1):");
  for (const page of PAGES)
    console.log(`  page ${String(page).padEnd(4)}${p50Ratio(results, page).toFixed(2)}`);
}

/** Over every round: the median and range of each page's v2 p50 and v1/v2 ratio. */
function printSummary(perRound: readonly RoundResult[]): void {
  const range = (values: number[], digits: number) =>
    `${median(values).toFixed(digits)} (${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)})`;
  console.log(`\nover ${perRound.length} rounds, median (range):`);
  for (const page of PAGES) {
    const v2 = perRound.map((r) => r.get(`v2:${page}`)?.p50 ?? Number.NaN);
    const v1 = perRound.map((r) => r.get(`v1:${page}`)?.p50 ?? Number.NaN);
    const ratios = perRound.map((r) => p50Ratio(r, page));
    console.log(
      `  page ${String(page).padEnd(4)}v1 p50 ${range(v1, 2)} ms, v2 p50 ${range(v2, 2)} ms, v1/v2 ${range(ratios, 2)}`,
    );
  }
}

/** v1 p50 over v2 p50 of `page`: above 1 when v2 answers faster. */
function p50Ratio(results: RoundResult, page: number): number {
  return (results.get(`v1:${page}`)?.p50 ?? Number.NaN) / (results.get(`v2:${page}`)?.p50 ?? Number.NaN);
}

/**
 * Inserts the runs: trace `t` has a chain root and three children (tool, llm, retriever), starting
 * spread evenly over the last {@link SPAN_DAYS} days, with `customer` metadata cycling over
 * {@link CUSTOMERS} values, then analyzes the table as autovacuum would.
 */
async function load(
  sql: ReturnType<typeof createSql>,
  workspaceId: string,
  projectId: string,
): Promise<void> {
  const traces = RUNS / TRACE_SIZE;
  const spanMs = SPAN_DAYS * 86_400_000;
  const end = Date.now();
  await sql.begin(async (tx) => {
    await tx`select set_config('work_mem', ${LOAD_WORK_MEM}, true)`;
    await tx`
      with traces as (
        select t, gen_random_uuid() as trace_id,
          to_timestamp((${end}::float8 - ${spanMs}::float8 + t::float8 * ${spanMs}::float8 / ${traces}::float8) / 1000) as start_time
        from generate_series(0, ${traces - 1}::int) as t
      ), runs_of as (
        select traces.t, traces.trace_id, k,
          case when k = 0 then traces.trace_id else gen_random_uuid() end as id,
          traces.start_time + make_interval(secs => k * 0.01) as start_time
        from traces cross join generate_series(0, ${TRACE_SIZE - 1}::int) as k
      )
      insert into runs (id, workspace_id, session_id, trace_id, parent_run_id, parent_run_ids, name, run_type,
                        start_time, end_time, status, is_root, dotted_order, inputs, outputs, extra, tags,
                        total_tokens, prompt_tokens, completion_tokens)
      select r.id, ${workspaceId}::uuid, ${projectId}::uuid, r.trace_id,
        case when r.k = 0 then null else r.trace_id end,
        case when r.k = 0 then '{}'::uuid[] else array[r.trace_id] end,
        (array['pipeline', 'lookup', 'ChatModel', 'retriever'])[r.k + 1],
        (array['chain', 'tool', 'llm', 'retriever'])[r.k + 1],
        r.start_time, r.start_time + interval '1 second', 'pending', r.k = 0,
        to_char(r.start_time at time zone 'UTC', 'YYYYMMDD"T"HH24MISSUS"Z"') || r.trace_id::text
          || case when r.k = 0 then '' else '.' || to_char(r.start_time at time zone 'UTC', 'YYYYMMDD"T"HH24MISSUS"Z"') || r.id::text end,
        jsonb_build_object('question', 'question ' || r.t),
        jsonb_build_object('answer', 'answer ' || r.t),
        jsonb_build_object('metadata', jsonb_build_object('customer', 'customer-' || (r.t % ${CUSTOMERS}::int),
          'conversation_id', 'conversation-' || (r.t % 1000))),
        array['bench'],
        case when r.k = 2 then 120 end, case when r.k = 2 then 100 end, case when r.k = 2 then 20 end
      from runs_of as r`;
  });
  await sql`checkpoint`;
  await sql`vacuum analyze runs`;
}

await main();
