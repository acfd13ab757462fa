/**
 * The run filter language against real Postgres: each operator and field selects exactly the runs
 * it should (runFilterSql), and the run query store applies trace and tree filters and keyset pages.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { uuidv7 } from "../../server/ids.js";
import { queryRuns, type RunQuery } from "../../server/store/tracing/run-query-store.js";
import { unconfined } from "../../server/store/tracing/workspace-scope.js";
import { runFilterSql, validateFilter } from "../../server/tracing/filter/index.js";
import { useTestDatabase } from "../support/database.js";

const db = useTestDatabase();
/**
 * The table owner's connection, which row-level security does not confine: these tests prove that
 * the SQL alone keeps every query in its workspace (row-level-security.test.ts proves the layer below).
 */
const owner = () => unconfined(db().sql);
const org = uuidv7();
const ws = uuidv7();
const otherWs = uuidv7();
const project = uuidv7();
const otherProject = uuidv7();
const id: Record<string, string> = {};

interface Seed {
  name: string;
  trace: string;
  parent?: string;
  runType: string;
  start: string;
  end?: string;
  error?: string;
  tags?: string[];
  metadata?: Record<string, unknown>;
  inputs?: Record<string, unknown>;
  outputs?: unknown;
  tokens?: [number, number, number];
  cost?: string;
}

const T0 = "2024-01-01T00:00:00";
const seeds: Seed[] = [
  {
    name: "root1",
    trace: "root1",
    runType: "chain",
    start: `${T0}.000000Z`,
    end: `${T0.slice(0, -2)}10.000000Z`,
    tags: ["prod"],
    metadata: { conversation_id: "c1", n: 5, flag: true },
    inputs: { q: "hello world" },
    outputs: { a: "42% done" },
  },
  {
    name: "llm1",
    trace: "root1",
    parent: "root1",
    runType: "llm",
    start: `${T0.slice(0, -2)}01.000000Z`,
    end: `${T0.slice(0, -2)}07.000000Z`,
    tags: ["beta"],
    metadata: { ls_model_name: "gpt-x" },
    inputs: { messages: ["hi"] },
    outputs: { text: "hello there" },
    tokens: [100, 60, 40],
    cost: "0.002",
  },
  {
    name: "tool1",
    trace: "root1",
    parent: "root1",
    runType: "tool",
    start: `${T0.slice(0, -2)}02.000000Z`,
    end: `${T0.slice(0, -2)}02.500000Z`,
    error: "Boom happened",
    tags: ["experimental"],
    outputs: ["not", "an", "object"],
  },
  {
    name: "root2",
    trace: "root2",
    runType: "chain",
    start: "2024-02-01T00:00:00.000001Z",
    metadata: { thread_id: "t2", n: "5" },
    inputs: { q: "other" },
  },
  {
    name: "llm2",
    trace: "root2",
    parent: "root2",
    runType: "llm",
    start: "2024-02-01T00:00:01.000000Z",
    end: "2024-02-01T00:00:20.000000Z",
    tokens: [500, 300, 200],
    cost: "0.01",
    inputs: { q: "under_score" },
  },
];

beforeAll(async () => {
  const sql = db().sql;
  await sql`insert into organizations (id, display_name, plan) values (${org}, 'o', 'enterprise')`;
  await sql`insert into workspaces (id, organization_id, display_name, tenant_handle)
            values (${ws}, ${org}, 'w', 'w'), (${otherWs}, ${org}, 'x', 'x')`;
  await sql`insert into tracing_projects (id, workspace_id, name)
            values (${project}, ${ws}, 'p'), (${otherProject}, ${otherWs}, 'p')`;
  for (const s of seeds) id[s.name] = uuidv7();
  for (const s of seeds) {
    const parent = s.parent ? id[s.parent]! : null;
    await sql`
      insert into runs (id, workspace_id, session_id, trace_id, parent_run_id, parent_run_ids, name, run_type,
                        start_time, end_time, status, is_root, dotted_order, inputs, outputs, error, extra, tags,
                        total_tokens, prompt_tokens, completion_tokens, total_cost)
      values (${id[s.name]!}, ${ws}, ${project}, ${id[s.trace]!}, ${parent}, ${parent ? [parent] : []}::uuid[],
              ${s.name}, ${s.runType}, ${s.start}::text::timestamptz, ${s.end ?? null}::text::timestamptz, 'pending', ${!parent}, ${s.name},
              ${s.inputs ? sql.json(s.inputs as never) : null}, ${s.outputs ? sql.json(s.outputs as never) : null},
              ${s.error ?? null}, ${s.metadata ? sql.json({ metadata: s.metadata } as never) : null},
              ${s.tags ?? []}::text[], ${s.tokens?.[0] ?? null}, ${s.tokens?.[1] ?? null}, ${s.tokens?.[2] ?? null},
              ${s.cost ?? null})`;
  }
  // The same run id in another workspace, with feedback that must never be seen from `ws`.
  await sql`insert into runs (id, workspace_id, session_id, trace_id, name, run_type, start_time, status, is_root, dotted_order)
            values (${id.root1!}, ${otherWs}, ${otherProject}, ${id.root1!}, 'root1', 'chain', now(), 'pending', true, 'x')`;
  const feedback = [
    [ws, "root1", "correctness", 1],
    [ws, "root2", "correctness", 0],
    [ws, "root2", "star_rating", 5],
    [otherWs, "root1", "leak", 1],
  ] as const;
  for (const [w, run, key, score] of feedback) {
    await sql`insert into run_feedback (workspace_id, id, run_id, key, score)
              values (${w}, ${uuidv7()}, ${id[run]!}, ${key}, ${score})`;
  }
});

/** Names of the runs of `ws` a filter selects, sorted. */
async function select(filter: string): Promise<string[]> {
  const sql = db().sql;
  const rows = await sql<{ name: string }[]>`
    select run.name from runs as run
    where run.workspace_id = ${ws} and ${runFilterSql(sql, validateFilter(filter), "run")}
    order by run.name`;
  return rows.map((r) => r.name);
}

describe("runFilterSql selects exactly the matching runs", () => {
  const all = ["llm1", "llm2", "root1", "root2", "tool1"];
  it.each([
    [`eq(run_type, "llm")`, ["llm1", "llm2"]],
    [`neq(run_type, "llm")`, ["root1", "root2", "tool1"]],
    [`in(run_type, ["tool", "chain"])`, ["root1", "root2", "tool1"]],
    [`eq(name, "llm1")`, ["llm1"]],
    [`eq(status, "error")`, ["tool1"]],
    [`eq(status, "pending")`, ["root2"]],
    [`eq(status, "success")`, ["llm1", "llm2", "root1"]],
    [`neq(error, null)`, ["tool1"]],
    [`eq(error, null)`, ["llm1", "llm2", "root1", "root2"]],
    [`eq(error, "Boom happened")`, ["tool1"]],
    [`neq(error, "Boom happened")`, ["llm1", "llm2", "root1", "root2"]],
    [`eq(is_root, true)`, ["root1", "root2"]],
    [`eq(is_root, false)`, ["llm1", "llm2", "tool1"]],
    [`eq(parent_run_id, null)`, ["root1", "root2"]],
    [`gt(start_time, "2024-01-15")`, ["llm2", "root2"]],
    [`gte(start_time, "2024-02-01T00:00:00.000001Z")`, ["llm2", "root2"]],
    [`gt(start_time, "2024-02-01T00:00:00.000001Z")`, ["llm2"]],
    [`lt(start_time, "2024-01-01T01:00:02+01:00")`, ["llm1", "root1"]],
    [`lte(end_time, "2024-01-01T00:00:07Z")`, ["llm1", "tool1"]],
    [`eq(end_time, null)`, ["root2"]],
    [`gt(latency, 5)`, ["llm1", "llm2", "root1"]],
    [`gt(latency, "10s")`, ["llm2"]],
    [`gte(latency, 10s)`, ["llm2", "root1"]],
    [`lt(latency, "600ms")`, ["tool1"]],
    [`lte(latency, 0.5)`, ["tool1"]],
    [`eq(latency, 6)`, ["llm1"]],
    [`neq(latency, 6)`, ["llm2", "root1", "root2", "tool1"]],
    [`not(gt(latency, 5))`, ["root2", "tool1"]],
    [`gt(total_tokens, 100)`, ["llm2"]],
    [`gte(prompt_tokens, 60)`, ["llm1", "llm2"]],
    [`lt(completion_tokens, 100)`, ["llm1"]],
    [`eq(total_tokens, null)`, ["root1", "root2", "tool1"]],
    [`gt(total_cost, 0.005)`, ["llm2"]],
    [`has(tags, "beta")`, ["llm1"]],
    [`or(has(tags, "experimental"), has(tags, "beta"))`, ["llm1", "tool1"]],
    [`has(metadata, '{"conversation_id": "c1"}')`, ["root1"]],
    [`has(metadata, '{"n": 5}')`, ["root1"]],
    [`search("hello")`, ["llm1", "root1"]],
    [`search("HELLO WORLD")`, ["root1"]],
    [`search("boom")`, ["tool1"]],
    [`search("42%")`, ["root1"]],
    [`search("_score")`, ["llm2"]],
    [`search("%")`, ["root1"]],
    [`search(name, "llm")`, ["llm1", "llm2"]],
    [`search(outputs, "hello")`, ["llm1"]],
    [`search(inputs, "hello")`, ["root1"]],
    [`eq(thread_id, "c1")`, ["root1"]],
    [`eq(thread_id, "t2")`, ["root2"]],
    [`eq(trace_id, "${"TRACE1"}")`, ["llm1", "root1", "tool1"]],
    [`eq(metadata_key, "conversation_id")`, ["root1"]],
    [`neq(metadata_key, "conversation_id")`, ["llm1", "llm2", "root2", "tool1"]],
    [`in(metadata_key, ["thread_id", "ls_model_name"])`, ["llm1", "root2"]],
    [`eq(metadata_value, "gpt-x")`, ["llm1"]],
    [`eq(metadata_value, 5)`, ["root1"]],
    [`eq(metadata_value, "5")`, ["root1", "root2"]],
    [`eq(metadata_value, true)`, ["root1"]],
    [`gt(metadata_value, 4)`, ["root1"]],
    [`and(eq(metadata_key, "n"), eq(metadata_value, "5"))`, ["root1", "root2"]],
    [`and(eq(metadata_key, "conversation_id"), eq(metadata_value, "5"))`, []],
    [`and(neq(metadata_key, "n"), eq(metadata_value, "5"))`, []],
    [`and(neq(metadata_key, "thread_id"), eq(metadata_value, "t2"))`, []],
    [`and(neq(metadata_key, "conversation_id"), eq(metadata_value, "c1"))`, []],
    [`and(eq(name, "root1"), eq(metadata_key, "conversation_id"), eq(metadata_value, "c1"))`, ["root1"]],
    [`and(eq(input_key, "q"), eq(input_value, "other"))`, ["root2"]],
    // One named key: its value is looked up, not every entry unnested; the same truth either way.
    [`and(eq(metadata_key, "n"), neq(metadata_value, 5))`, ["root2"]],
    [`not(and(eq(metadata_key, "n"), neq(metadata_value, 5)))`, ["llm1", "llm2", "root1", "tool1"]],
    [`and(eq(metadata_key, "n"), gt(metadata_value, 4))`, ["root1"]],
    [`and(in(metadata_key, ["flag"]), eq(metadata_value, true))`, ["root1"]],
    [`and(eq(metadata_key, "n"), neq(metadata_key, "n"))`, []],
    [`and(eq(metadata_key, "n"), in(metadata_key, ["n", "x"]), eq(metadata_value, "5"))`, ["root1", "root2"]],
    [`and(eq(output_key, "0"), eq(output_value, "not"))`, []],
    [`and(eq(input_key, "messages"), eq(input_value, "hi"))`, []],
    [`eq(output_key, "text")`, ["llm1"]],
    [`eq(feedback_key, "correctness")`, ["root1", "root2"]],
    [`neq(feedback_key, "correctness")`, ["llm1", "llm2", "tool1"]],
    [`eq(feedback_key, "leak")`, []],
    [`and(eq(feedback_key, "correctness"), eq(feedback_score, 0))`, ["root2"]],
    [`and(eq(feedback_key, "correctness"), eq(feedback_score, 5))`, []],
    [`and(eq(feedback_key, "star_rating"), gt(feedback_score, 4))`, ["root2"]],
    [`gte(feedback_score, 1)`, ["root1", "root2"]],
    [`and(eq(is_root, true), and(eq(feedback_key, "correctness"), eq(feedback_score, 1)))`, ["root1"]],
    [
      `and(gt(start_time, "2023-07-15T12:34:56Z"), or(neq(error, null), and(eq(feedback_key, "correctness"), eq(feedback_score, 0.0))))`,
      ["root2", "tool1"],
    ],
    [`and(eq(run_type, "llm"), gt(latency, 10))`, ["llm2"]],
    [`and(or(has(tags, "experimental"), has(tags, "beta")), gt(latency, 2))`, ["llm1"]],
    [`not(eq(run_type, "llm"))`, ["root1", "root2", "tool1"]],
    [`or(eq(name, "root1"), eq(name, "llm2"))`, ["llm2", "root1"]],
    [`and(neq(metadata_key, "zzz"))`, all],
  ])("%s", async (filter, expected) => {
    expect(await select(filter.replace("TRACE1", id.root1!))).toEqual(expected);
  });

  it("filters by id and session_id", async () => {
    expect(await select(`eq(id, "${id.llm2}")`)).toEqual(["llm2"]);
    expect(await select(`in(id, ["${id.llm2}", "${id.tool1}"])`)).toEqual(["llm2", "tool1"]);
    expect(await select(`eq(session_id, "${project}")`)).toEqual(all);
  });

  it("every condition is true or false, so not() is the exact complement", async () => {
    for (const filter of [
      `gt(latency, 5)`,
      `eq(metadata_value, "5")`,
      `gt(total_cost, 0.001)`,
      `search("hello")`,
    ]) {
      const matching = await select(filter);
      const rest = await select(`not(${filter})`);
      expect([...matching, ...rest].sort()).toEqual(all);
    }
  });
});

describe("queryRuns", () => {
  const base = (): RunQuery => ({
    workspaceId: ws,
    sessionIds: [project],
    ids: [],
    referenceExampleIds: [],
    conditions: [],
    order: "desc",
    limit: 100,
    json: new Set(),
  });
  const names = (rows: { name: string }[]) => rows.map((r) => r.name);

  it("applies trace_filter to the root run of each run's trace", async () => {
    const rows = await queryRuns(owner(), {
      ...base(),
      traceCondition: validateFilter(`has(tags, "prod")`),
    });
    expect(names(rows)).toEqual(["tool1", "llm1", "root1"]);
  });

  it("applies tree_filter to any run of the trace", async () => {
    const rows = await queryRuns(owner(), {
      ...base(),
      isRoot: true,
      treeCondition: validateFilter(`gt(total_tokens, 200)`),
    });
    expect(names(rows)).toEqual(["root2"]);
  });

  it("pages with a key on (start_time, id) in both orders", async () => {
    const first = await queryRuns(owner(), { ...base(), limit: 2 });
    expect(names(first)).toEqual(["llm2", "root2", "tool1"]);
    const after = { startTime: first[1]!.start_time, id: first[1]!.id };
    expect(after.startTime).toBe("2024-02-01T00:00:00.000001Z");
    expect(names(await queryRuns(owner(), { ...base(), limit: 2, after }))).toEqual([
      "tool1",
      "llm1",
      "root1",
    ]);
    expect(names(await queryRuns(owner(), { ...base(), order: "asc", limit: 10, after }))).toEqual(["llm2"]);
  });

  it("keeps a top-level or() and search() inside the workspace", async () => {
    const all = { ...base(), sessionIds: [] };
    const or = await queryRuns(owner(), {
      ...all,
      conditions: [validateFilter(`or(eq(name, "nothing"), eq(run_type, "chain"))`)],
    });
    expect(or.every((r) => r.workspace_id === ws)).toBe(true);
    expect(names(or).sort()).toEqual(["root1", "root2"]);
    const search = await queryRuns(owner(), { ...all, conditions: [validateFilter(`search("root1")`)] });
    expect(search.map((r) => r.workspace_id)).toEqual([ws]);
  });

  it("keeps or() in trace_filter and tree_filter inside the workspace", async () => {
    // otherWs has one run; "llm1" exists only in ws, so no run of otherWs may pass either filter.
    const other = { ...base(), workspaceId: otherWs, sessionIds: [] };
    const condition = validateFilter(`or(eq(name, "nothing"), eq(name, "llm1"))`);
    expect(await queryRuns(owner(), { ...other, traceCondition: condition })).toEqual([]);
    expect(await queryRuns(owner(), { ...other, treeCondition: condition })).toEqual([]);
  });

  it("reads JSON columns only when asked", async () => {
    const [row] = await queryRuns(owner(), { ...base(), ids: [id.root1!], json: new Set(["inputs"]) });
    expect(row?.inputs).toEqual({ q: "hello world" });
    expect(row?.outputs).toBeNull();
    expect(row?.thread_id).toBe("c1");
  });
});
