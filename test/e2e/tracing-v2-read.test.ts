/**
 * The LangSmith v2 read API through the OFFICIAL `langsmith` SDK (`client.runs.query/retrieve/getURL`,
 * `client.traces.*`, `client.threads.*`) against traces the same SDK sent: every v2 method answers
 * what the deprecated v1 method (listRuns, readRun, getRunUrl, listThreads, readThread) answers for
 * the same traces (the same runs, fields, order and pages), and bad input gets a clear 4xx.
 */
import { randomUUID } from "node:crypto";
import { Client, type Run } from "langsmith";
import { traceable } from "langsmith/traceable";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startTestApp, type TestApp } from "../support/test-app.js";

let t: TestApp;
let projectName: string;
let projectId: string;
/** Run ids by name. */
const ids: Record<string, string> = {};
/** How many filler root runs are sent (for pagination). */
const FILLERS = 5;
/** A window that holds every run of the test. */
let since: string;

/** Every run field the v2 API fills, as the SDK names them. */
const ALL_SELECTS = [
  "ID",
  "NAME",
  "RUN_TYPE",
  "STATUS",
  "START_TIME",
  "END_TIME",
  "LATENCY_SECONDS",
  "FIRST_TOKEN_TIME",
  "ERROR",
  "EXTRA",
  "METADATA",
  "EVENTS",
  "INPUTS",
  "OUTPUTS",
  "MANIFEST",
  "PARENT_RUN_IDS",
  "PROJECT_ID",
  "TRACE_ID",
  "THREAD_ID",
  "DOTTED_ORDER",
  "IS_ROOT",
  "REFERENCE_EXAMPLE_ID",
  "TOTAL_TOKENS",
  "PROMPT_TOKENS",
  "COMPLETION_TOKENS",
  "TOTAL_COST",
  "PROMPT_COST",
  "COMPLETION_COST",
  "TAGS",
  "APP_PATH",
  "FEEDBACK_STATS",
  "ERROR_PREVIEW",
  "SHARE_URL",
] as const;

/** A langsmith Client on our server; `v1PageSize` makes every v1 /runs/query ask for that many runs. */
function sdkClient(options: { v1PageSize?: number; v1Pages?: string[][] } = {}): Client {
  const rewrite: typeof fetch = async (input, init) => {
    const path = new URL(String(input)).pathname;
    if (path === "/api/v1/runs/query" && typeof init?.body === "string" && options.v1PageSize !== undefined) {
      const body = JSON.parse(init.body) as Record<string, unknown>;
      const res = await fetch(input, {
        ...init,
        body: JSON.stringify({ ...body, limit: options.v1PageSize }),
      });
      const json = (await res.clone().json()) as { runs: { id: string }[] };
      options.v1Pages?.push(json.runs.map((r) => r.id));
      return res;
    }
    return fetch(input, init);
  };
  return new Client({ apiUrl: `${t.baseUrl}/api/v1`, apiKey: t.adminKey, fetchImplementation: rewrite });
}

/** A v2 run as the SDK types it. */
type V2Run = Awaited<ReturnType<Client["runs"]["retrieve"]>>;

async function v1List(params: Parameters<Client["listRuns"]>[0], client = sdkClient()): Promise<Run[]> {
  const runs: Run[] = [];
  for await (const run of client.listRuns(params)) runs.push(run);
  return runs;
}

async function v2Query(
  params: Parameters<Client["runs"]["query"]>[0],
  client = sdkClient(),
): Promise<V2Run[]> {
  const runs: V2Run[] = [];
  for await (const run of client.runs.query(params)) runs.push(run);
  return runs;
}

/** Every thread of a project since the test began, through `threads.query()`, one per page. */
async function v2Threads(client: Client, project: string) {
  const threads = [];
  for await (const thread of client.threads.query({
    project_id: project,
    min_start_time: since,
    page_size: 1,
  }))
    threads.push(thread);
  return threads;
}

/** The v1 run fields the v2 API also returns (under its own names). */
const SHARED_FIELDS = [
  "id",
  "name",
  "run_type",
  "status",
  "start_time",
  "end_time",
  "error",
  "inputs",
  "outputs",
  "extra",
  "events",
  "tags",
  "parent_run_id",
  "parent_run_ids",
  "trace_id",
  "dotted_order",
  "session_id",
  "reference_example_id",
  "feedback_stats",
  "total_tokens",
  "prompt_tokens",
  "completion_tokens",
  "total_cost",
  "prompt_cost",
  "completion_cost",
  "first_token_time",
  "app_path",
  "thread_id",
  "is_root",
  "serialized",
];

/**
 * A v2 run in the v1 shape: `project_id` is `session_id`, `manifest` is `serialized`, status and
 * run type are lowercase, costs are decimal text in v1, and v1 names the parent.
 */
function asV1(run: V2Run): Record<string, unknown> {
  const { project_id, status, run_type, total_cost, prompt_cost, completion_cost, manifest, ...rest } = run;
  const parent = run.parent_run_ids?.at(-1);
  return {
    ...rest,
    session_id: project_id,
    status: status?.toLowerCase(),
    run_type: run_type?.toLowerCase(),
    ...(manifest === undefined ? {} : { serialized: manifest }),
    ...(parent ? { parent_run_id: parent } : {}),
    ...(total_cost === undefined ? {} : { total_cost: String(total_cost) }),
    ...(prompt_cost === undefined ? {} : { prompt_cost: String(prompt_cost) }),
    ...(completion_cost === undefined ? {} : { completion_cost: String(completion_cost) }),
  };
}

/** The fields of a v1 run that v2 also has, absent values dropped. */
function comparableV1(run: Run): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(run).filter(([k, v]) => SHARED_FIELDS.includes(k) && v !== undefined && v !== null),
  );
}

/**
 * `v2` runs as v1 runs, with the fields the `v1` runs have (the v1 SDK selects fewer by default):
 * what must equal `v1.map(comparableV1)`.
 */
function sameFieldsAs(v2: readonly V2Run[], v1: readonly Run[]): Record<string, unknown>[] {
  return v2.map((run, i) => {
    const keys = Object.keys(comparableV1(v1[i] ?? ({} as Run)));
    const converted = asV1(run);
    return Object.fromEntries(keys.map((k) => [k, converted[k]]));
  });
}

/** REST call with a JSON body or none. */
async function call(method: string, path: string, body?: unknown) {
  const res = await t.fetch(path, { method, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

beforeAll(async () => {
  t = await startTestApp();
  since = new Date(Date.now() - 60_000).toISOString();
  const client = sdkClient();
  projectName = `v2-${randomUUID()}`;
  const options = { client, project_name: projectName, tracingEnabled: true } as const;
  const remember = (name: string) => (run?: { id: string }) => {
    ids[name] ??= run?.id ?? "";
  };
  const llm = traceable(
    async (prompt: string) => ({
      text: `echo ${prompt}`,
      usage_metadata: { input_tokens: 7, output_tokens: 5, total_tokens: 12 },
    }),
    { ...options, name: "fake-llm", run_type: "llm", on_start: remember("fake-llm") },
  );
  const lookup = traceable(async (q: string) => (await llm(q)).text, {
    ...options,
    name: "lookup",
    run_type: "tool",
    on_start: remember("lookup"),
  });
  const broken = traceable(
    async () => {
      throw new Error("index unavailable");
    },
    { ...options, name: "broken", run_type: "tool", on_start: remember("broken") },
  );
  const pipelineA = traceable(async (q: string) => ({ answer: await lookup(q) }), {
    ...options,
    name: "pipeline",
    run_type: "chain",
    tags: ["prod"],
    metadata: { conversation_id: "conv-1", customer: "acme" },
    on_start: remember("rootA"),
  });
  const pipelineB = traceable(async () => ({ answer: await broken().catch(() => "none") }), {
    ...options,
    name: "pipeline",
    run_type: "chain",
    tags: ["beta"],
    metadata: { conversation_id: "conv-1" },
    on_start: remember("rootB"),
  });
  const pipelineC = traceable(async (q: string) => ({ answer: await lookup(q) }), {
    ...options,
    name: "pipeline",
    run_type: "chain",
    metadata: { thread_id: "conv-2" },
    on_start: remember("rootC"),
  });
  await pipelineA("hello");
  await pipelineB();
  await pipelineC("again");
  for (let i = 0; i < FILLERS; i++) {
    await traceable(async () => ({ i }), {
      ...options,
      name: `filler-${i}`,
      metadata: { customer: i % 2 === 0 ? "acme" : "other" },
      on_start: remember(`filler-${i}`),
    })();
  }
  await client.awaitPendingTraceBatches();
  projectId = (await client.readProject({ projectName })).id;
});
afterAll(() => t?.stop());

describe("client.runs.query() answers what listRuns() does", () => {
  const cases: [string, Parameters<Client["listRuns"]>[0], Record<string, unknown>][] = [
    ["every run", {}, {}],
    ["root runs", { isRoot: true }, { is_root: true }],
    ["child runs of tools", { isRoot: false, runType: "tool" }, { is_root: false, run_type: "TOOL" }],
    ["failed runs", { error: true }, { has_error: true }],
    ["runs without error", { error: false }, { has_error: false }],
    [
      "a metadata filter",
      { filter: `and(eq(metadata_key, "customer"), eq(metadata_value, "acme"))` },
      { filter: `and(eq(metadata_key, "customer"), eq(metadata_value, "acme"))` },
    ],
    ["a trace filter", { traceFilter: `has(tags, "prod")` }, { trace_filter: `has(tags, "prod")` }],
    [
      "a tree filter",
      { isRoot: true, treeFilter: `eq(name, "broken")` },
      { is_root: true, tree_filter: `eq(name, "broken")` },
    ],
  ];

  for (const [name, v1, v2] of cases) {
    it(`for ${name}: the same runs, fields and order`, async () => {
      const expected = await v1List({ projectId, ...v1 });
      const actual = await v2Query({
        project_ids: [projectId],
        min_start_time: since,
        selects: [...ALL_SELECTS],
        ...v2,
      });
      expect(expected.length).toBeGreaterThan(0);
      expect(actual.map((r) => r.id)).toEqual(expected.map((r) => r.id));
      expect(sameFieldsAs(actual, expected)).toEqual(expected.map(comparableV1));
    });
  }

  it("for ids and a trace: the same runs", async () => {
    const byIds = { id: [ids.rootA!, ids.broken!, randomUUID()] };
    expect(
      (await v2Query({ project_ids: [projectId], min_start_time: since, ids: byIds.id })).map((r) => r.id),
    ).toEqual((await v1List({ projectId, ...byIds })).map((r) => r.id));
    expect(
      (await v2Query({ project_ids: [projectId], min_start_time: since, trace_id: ids.rootA })).map(
        (r) => r.id,
      ),
    ).toEqual((await v1List({ projectId, traceId: ids.rootA })).map((r) => r.id));
  });

  it("returns the v2 shape: uppercase status and type, numbers, metadata, latency", async () => {
    const [llm] = await v2Query({
      project_ids: [projectId],
      min_start_time: since,
      run_type: "LLM",
      trace_id: ids.rootA,
      selects: [...ALL_SELECTS],
    });
    expect(llm).toMatchObject({
      id: ids["fake-llm"],
      run_type: "LLM",
      status: "SUCCESS",
      project_id: projectId,
      is_root: false,
      total_tokens: 12,
      prompt_tokens: 7,
      completion_tokens: 5,
      thread_id: "conv-1",
      parent_run_ids: [ids.rootA, ids.lookup],
    });
    expect(llm?.metadata).toMatchObject({ customer: "acme", conversation_id: "conv-1" });
    expect(llm?.latency_seconds).toBeCloseTo(
      (Date.parse(llm?.end_time ?? "") - Date.parse(llm?.start_time ?? "")) / 1000,
      2,
    );
    // Not stored by agentplane: selected, and absent.
    expect(llm).not.toHaveProperty("share_url");
    expect(llm).not.toHaveProperty("error_preview");
  });

  it("returns only the id without selects", async () => {
    const runs = await v2Query({ project_ids: [projectId], min_start_time: since, is_root: true });
    expect(runs.length).toBe(FILLERS + 3);
    for (const run of runs) expect(Object.keys(run)).toEqual(["id"]);
  });

  it("pages as listRuns pages, following next_cursor", async () => {
    const v1Pages: string[][] = [];
    const v1 = await v1List({ projectId, isRoot: true }, sdkClient({ v1PageSize: 3, v1Pages }));
    const v2Pages: string[][] = [];
    let page = await sdkClient().runs.query({
      project_ids: [projectId],
      min_start_time: since,
      is_root: true,
      page_size: 3,
    });
    v2Pages.push(page.getPaginatedItems().map((r) => r.id ?? ""));
    while (page.hasNextPage()) {
      page = await page.getNextPage();
      v2Pages.push(page.getPaginatedItems().map((r) => r.id ?? ""));
    }
    expect(v2Pages).toEqual(v1Pages);
    expect(v2Pages.flat()).toEqual(v1.map((r) => r.id));
    expect(v2Pages.length).toBe(3);
  });

  it("keeps to the time window", async () => {
    const future = new Date(Date.now() + 60_000).toISOString();
    const later = new Date(Date.now() + 120_000).toISOString();
    expect(
      await v2Query({ project_ids: [projectId], min_start_time: future, max_start_time: later }),
    ).toEqual([]);
    // Without max_start_time the window ends now, before the future minimum.
    await expect(v2Query({ project_ids: [projectId], min_start_time: future })).rejects.toThrow(/422/);
    const before = await v2Query({ project_ids: [projectId], min_start_time: since, max_start_time: since });
    expect(before).toEqual([]);
  });

  it("prints no deprecation warning", async () => {
    const warn = vi.spyOn(console, "warn");
    try {
      const client = sdkClient();
      await v2Query({ project_ids: [projectId], min_start_time: since }, client);
      await client.runs.retrieve(ids.rootA!, { project_id: projectId });
      const deprecations = warn.mock.calls.filter((args) => /deprecat/i.test(args.map(String).join(" ")));
      expect(deprecations).toEqual([]);
    } finally {
      warn.mockRestore();
    }
  });
});

describe("client.runs.retrieve() and getURL() answer what readRun() and getRunUrl() do", () => {
  it("retrieves a run with the selected fields", async () => {
    const client = sdkClient();
    for (const id of [ids.rootA!, ids.broken!, ids["fake-llm"]!]) {
      const v2 = await client.runs.retrieve(id, { project_id: projectId, selects: [...ALL_SELECTS] });
      const v1 = await client.readRun(id);
      expect(sameFieldsAs([v2], [v1])).toEqual([comparableV1(v1)]);
      expect(Object.keys(comparableV1(v1)).sort()).toEqual(SHARED_FIELDS.filter((k) => k in asV1(v2)).sort());
    }
    const bare = await client.runs.retrieve(ids.rootA!, { project_id: projectId });
    expect(bare).toEqual({ id: ids.rootA });
  });

  it("answers 404 for another project or an unknown run, 422 for a malformed id", async () => {
    const client = sdkClient();
    await expect(client.runs.retrieve(ids.rootA!, { project_id: randomUUID() })).rejects.toThrow(/404/);
    await expect(client.runs.retrieve(randomUUID(), { project_id: projectId })).rejects.toThrow(/404/);
    const res = await call("GET", `/api/v2/runs/${ids.rootA}`);
    expect(res).toEqual({ status: 422, body: { detail: "project_id is required: the UUID of the project" } });
    const bad = await call("GET", `/api/v2/runs/${ids.rootA}?project_id=${projectId}&selects=NOPE`);
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toMatch(/^selects\[0\]: unknown run field "NOPE"; valid fields: ID, NAME/);
  });

  it("gives the URL getRunUrl() gives, on this server", async () => {
    const client = sdkClient();
    const v1 = await client.readRun(ids.lookup!);
    const { url } = await client.runs.getURL(ids.lookup!, { project_id: projectId, trace_id: ids.rootA! });
    expect(url).toBe(`${t.baseUrl}${v1.app_path}`);
    expect((await client.getRunUrl({ runId: ids.lookup! })).endsWith(v1.app_path ?? "-")).toBe(true);
    await expect(
      client.runs.getURL(ids.lookup!, { project_id: projectId, trace_id: ids.rootB! }),
    ).rejects.toThrow(/404/);
  });
});

describe("client.traces", () => {
  it("query() answers the root runs listRuns() does, with trace totals", async () => {
    const client = sdkClient();
    const traces = [];
    for await (const trace of client.traces.query({
      project_id: projectId,
      min_start_time: since,
      page_size: 2,
      selects: ["ID", "NAME", "STATUS", "START_TIME", "TOTAL_TOKENS", "FIRST_TOKEN_TIME"],
    })) {
      traces.push(trace);
    }
    const roots = await v1List({ projectId, isRoot: true });
    expect(traces.map((tr) => tr.root_run?.id)).toEqual(roots.map((r) => r.id));
    expect(traces.map((tr) => tr.root_run?.name)).toEqual(roots.map((r) => r.name));
    expect(traces.map((tr) => tr.root_run?.start_time)).toEqual(roots.map((r) => r.start_time));
    const byId = new Map(traces.map((tr) => [tr.root_run?.id, tr]));
    // The LLM run of trace A carries 12 tokens; the root and the tool carry none of their own.
    expect(byId.get(ids.rootA)?.trace_aggregates).toEqual({ total_tokens: 12 });
    expect(byId.get(ids.rootB)?.trace_aggregates).toEqual({});
    expect(byId.get(ids.rootB)?.root_run?.status).toBe("SUCCESS");
  });

  it("query() filters by trace_filter, tree_filter and trace_ids", async () => {
    const client = sdkClient();
    const rootIds = async (body: Record<string, unknown>) => {
      const out: (string | undefined)[] = [];
      for await (const trace of client.traces.query({
        project_id: projectId,
        min_start_time: since,
        ...body,
      })) {
        out.push(trace.root_run?.id);
      }
      return out;
    };
    expect(await rootIds({ trace_filter: `has(tags, "prod")` })).toEqual([ids.rootA]);
    expect(await rootIds({ tree_filter: `eq(name, "broken")` })).toEqual([ids.rootB]);
    expect((await rootIds({ trace_ids: [ids.rootA, ids.rootC, ids.lookup] })).sort()).toEqual(
      [ids.rootA, ids.rootC].sort(),
    );
  });

  it("listRuns() answers the runs of the trace listRuns() does, oldest first", async () => {
    const client = sdkClient();
    const v1 = await v1List({ projectId, traceId: ids.rootA!, order: "asc" });
    const { items } = await client.traces.listRuns(ids.rootA!, {
      project_id: projectId,
      selects: [...ALL_SELECTS],
    });
    expect(items?.map((r) => r.id)).toEqual(v1.map((r) => r.id));
    expect(sameFieldsAs(items ?? [], v1)).toEqual(v1.map(comparableV1));
    const tools = await client.traces.listRuns(ids.rootA!, {
      project_id: projectId,
      filter: `eq(run_type, "tool")`,
    });
    expect(tools.items).toEqual([{ id: ids.lookup }]);
    const half = await call(
      "GET",
      `/api/v2/traces/${ids.rootA}/runs?project_id=${projectId}&min_start_time=${since}`,
    );
    expect(half).toEqual({
      status: 422,
      body: { detail: "min_start_time and max_start_time go together: send both or neither" },
    });
  });
});

describe("client.threads", () => {
  it("query() answers the threads listThreads() does, most recently active first", async () => {
    const client = sdkClient();
    const v1 = await client.listThreads({ projectId, startTime: new Date(since) });
    const v2 = await v2Threads(client, projectId);
    expect(v2.map((th) => th.thread_id)).toEqual(v1.map((th) => th.thread_id));
    expect(v2.map((th) => th.count)).toEqual(v1.map((th) => th.count));
    expect(v2.map((th) => th.min_start_time)).toEqual(v1.map((th) => th.min_start_time));
    expect(v2.map((th) => th.max_start_time)).toEqual(v1.map((th) => th.max_start_time));
    const conv1 = v2.find((th) => th.thread_id === "conv-1");
    expect(conv1).toMatchObject({
      count: 2,
      first_trace_id: ids.rootA,
      last_trace_id: ids.rootB,
      num_errored_turns: 0,
      total_tokens: 12,
    });
    const conv2 = v2.find((th) => th.thread_id === "conv-2");
    expect(conv2).toMatchObject({ count: 1, first_trace_id: ids.rootC, total_tokens: 12 });
  });

  it("query() orders threads whose latest traces started at the same time as listThreads() does, page by page", async () => {
    const client = sdkClient();
    const project = `v2-ties-${randomUUID()}`;
    // Inside the window every query of this file reads (it opened a minute before the first trace).
    const at = new Date(Date.parse(since) + 20_000);
    // Two threads whose latest traces start in the same millisecond, the later thread id having the
    // smaller trace id, so that a tie broken by thread id would reverse listThreads' order.
    const [low, high] = [randomUUID(), randomUUID()].sort();
    const roots = [
      { id: randomUUID(), thread: "tie-b", start: at.getTime() - 5_000 },
      { id: high as string, thread: "tie-a", start: at.getTime() },
      { id: low as string, thread: "tie-b", start: at.getTime() },
      { id: randomUUID(), thread: "tie-c", start: at.getTime() - 1_000 },
    ];
    for (const root of roots) {
      await client.createRun({
        id: root.id,
        name: "turn",
        run_type: "chain",
        start_time: root.start,
        end_time: root.start + 10,
        inputs: { q: root.thread },
        project_name: project,
        extra: { metadata: { thread_id: root.thread } },
      });
    }
    const tieProjectId = (await client.readProject({ projectName: project })).id;
    const v1 = await client.listThreads({ projectId: tieProjectId, startTime: new Date(since) });
    expect(v1.map((th) => th.thread_id)).toEqual(["tie-a", "tie-b", "tie-c"]);
    const v2 = await v2Threads(client, tieProjectId);
    expect(v2.map((th) => th.thread_id)).toEqual(v1.map((th) => th.thread_id));
    expect(v2.map((th) => th.last_trace_id)).toEqual([high, low, roots[3]?.id]);
  });

  it("query() answers 422 for thread_filter and without a project", async () => {
    expect(
      await call("POST", "/api/v2/threads/query", { project_id: projectId, thread_filter: "gt(count, 1)" }),
    ).toEqual({
      status: 422,
      body: {
        detail:
          "thread_filter is not supported by agentplane: filter the traces with filter, trace_filter or tree_filter",
      },
    });
    expect((await call("POST", "/api/v2/threads/query", {})).status).toBe(422);
  });

  it("listTraces() answers the traces readThread() does", async () => {
    const client = sdkClient();
    const v1: Run[] = [];
    for await (const run of client.readThread({ threadId: "conv-1", projectId })) v1.push(run);
    const v2 = [];
    for await (const trace of client.threads.listTraces("conv-1", {
      project_id: projectId,
      page_size: 1,
      selects: ["NAME", "START_TIME", "END_TIME", "TOTAL_TOKENS", "INPUTS", "OUTPUTS", "THREAD_ID", "OP"],
    })) {
      v2.push(trace);
    }
    expect(v2.map((tr) => tr.trace_id)).toEqual(v1.map((r) => r.trace_id));
    expect(v2.map((tr) => tr.start_time)).toEqual(v1.map((r) => r.start_time));
    expect(v2.map((tr) => tr.outputs)).toEqual(v1.map((r) => r.outputs));
    expect(v2[0]).toMatchObject({
      name: "pipeline",
      thread_id: "conv-1",
      total_tokens: 12,
      inputs: { input: "hello" },
    });
    expect(v2[0]).not.toHaveProperty("op");
  });

  it("stats() totals a thread", async () => {
    const client = sdkClient();
    const roots = await v1List({ projectId, isRoot: true, filter: `eq(thread_id, "conv-1")`, order: "asc" });
    const stats = await client.threads.stats("conv-1", {
      session_id: projectId,
      selects: [
        "TURNS",
        "FIRST_START_TIME",
        "LAST_START_TIME",
        "TOTAL_TOKENS",
        "TOTAL_COST",
        "FEEDBACK_STATS",
      ],
    });
    expect(stats).toEqual({
      turns: 2,
      first_start_time: roots[0]?.start_time,
      last_start_time: roots[1]?.start_time,
      total_tokens: 12,
    });
    await expect(client.threads.stats("nope", { session_id: projectId, selects: ["TURNS"] })).rejects.toThrow(
      /404/,
    );
    const none = await call("GET", `/api/v2/threads/conv-1/stats?session_id=${projectId}`);
    expect(none.status).toBe(422);
    expect(none.body.detail).toMatch(/^selects is required: at least one of TURNS/);
  });
});

describe("bad input over REST", () => {
  it("answers 422 saying what to fix", async () => {
    const q = (body: Record<string, unknown>) => call("POST", "/api/v2/runs/query", body);
    expect(await q({})).toEqual({
      status: 422,
      body: { detail: "project_ids is required: the UUIDs of the tracing projects to search" },
    });
    expect((await q({ project_ids: ["x"] })).body).toEqual({
      detail: 'project_ids[0] must be a UUID, got "x"',
    });
    expect((await q({ project_ids: [projectId], run_type: "robot" })).body.detail).toMatch(
      /^run_type must be one of TOOL, CHAIN, LLM/,
    );
    expect((await q({ project_ids: [projectId], filter: `eq(name, "x"` })).body.detail).toMatch(
      /^invalid filter at position 12/,
    );
    expect((await q({ project_ids: [projectId], cursor: "nope" })).body.detail).toMatch(
      /^cursor is not valid/,
    );
    expect((await q({ project_ids: [projectId], page_size: 0 })).body.detail).toBe(
      "page_size must be at least 1, got 0",
    );
    expect((await q({ project_ids: [projectId], reference_dataset_id: randomUUID() })).status).toBe(422);
    expect(
      (
        await q({
          project_ids: [projectId],
          min_start_time: "2026-01-02T00:00:00Z",
          max_start_time: "2026-01-01T00:00:00Z",
        })
      ).body.detail,
    ).toMatch(/^min_start_time \(2026-01-02T00:00:00.000Z\) must not be after max_start_time/);
    expect((await q({ project_ids: [randomUUID()] })).status).toBe(404);
  });
});
