/**
 * Run queries through the OFFICIAL `langsmith` SDK (listRuns, readRun) against traces the same SDK
 * sent, plus the REST and Connect surfaces of RunService: filters, trace and tree filters, select,
 * cursor pagination, and 422s that say where a filter is wrong.
 */
import { randomUUID } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { Client, type Run } from "langsmith";
import { traceable } from "langsmith/traceable";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunService } from "../../gen/agentplane/tracing/v1/run_service_pb.js";
import { Code, ConnectError } from "../../sdk/index.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

let t: TestApp;
let projectName: string;
let projectId: string;
/** Run ids by name: the two main traces and the filler roots. */
const ids: Record<string, string> = {};
/** How many filler root runs are sent (for pagination). */
const FILLERS = 5;

/** A langsmith Client on our server; `pageSize` makes every /runs/query ask for that many runs. */
function sdkClient(options: { pageSize?: number; queries?: string[] } = {}): Client {
  const rewrite: typeof fetch = async (input, init) => {
    const path = new URL(String(input)).pathname;
    if (path.endsWith("/runs/query") && typeof init?.body === "string") {
      options.queries?.push(init.body);
      if (options.pageSize !== undefined) {
        const body = JSON.parse(init.body) as Record<string, unknown>;
        return fetch(input, { ...init, body: JSON.stringify({ ...body, limit: options.pageSize }) });
      }
    }
    return fetch(input, init);
  };
  return new Client({ apiUrl: `${t.baseUrl}/api/v1`, apiKey: t.adminKey, fetchImplementation: rewrite });
}

async function list(params: Parameters<Client["listRuns"]>[0], client = sdkClient()): Promise<Run[]> {
  const runs: Run[] = [];
  for await (const run of client.listRuns(params)) runs.push(run);
  return runs;
}

const names = (runs: Run[]) => runs.map((r) => r.name);

/** POST /api/v1/runs/query with a raw body. */
async function query(body: Record<string, unknown>, init: { apiKey?: string } = {}) {
  const res = await t.fetch("/api/v1/runs/query", { method: "POST", body: JSON.stringify(body), ...init });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

beforeAll(async () => {
  t = await startTestApp();
  const client = sdkClient();
  projectName = `query-${randomUUID()}`;
  const options = { client, project_name: projectName, tracingEnabled: true } as const;
  const remember = (name: string) => (run?: { id: string }) => {
    ids[name] = run?.id ?? "";
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
    metadata: { conversation_id: "conv-1" },
    on_start: remember("rootA"),
  });
  const pipelineB = traceable(async () => ({ answer: await broken().catch(() => "none") }), {
    ...options,
    name: "pipeline",
    run_type: "chain",
    tags: ["beta"],
    on_start: remember("rootB"),
  });
  await pipelineA("hello");
  await pipelineB();
  for (let i = 0; i < FILLERS; i++) {
    await traceable(async () => ({ i }), {
      ...options,
      name: `filler-${i}`,
      on_start: remember(`filler-${i}`),
    })();
  }
  await client.awaitPendingTraceBatches();
  projectId = (await client.readProject({ projectName })).id;
});
afterAll(() => t?.stop());

describe("listRuns through the langsmith SDK", () => {
  it("lists the root runs of a project by name, newest first", async () => {
    const roots = await list({ projectName, isRoot: true });
    const fillers = Array.from({ length: FILLERS }, (_, i) => `filler-${i}`);
    expect(names(roots).sort()).toEqual([...fillers, "pipeline", "pipeline"]);
    // Runs started in the same millisecond tie on start_time and are ordered by id.
    const key = (r: Run) => `${r.start_time} ${r.id}`;
    expect(roots.map(key)).toEqual(roots.map(key).sort().reverse());
    expect(roots.map((r) => r.id)).toContain(ids.rootA);
  });

  it("returns the run shape the SDK selects by default", async () => {
    const [run] = await list({ projectId, filter: `and(eq(run_type, "llm"), gt(total_tokens, 10))` });
    expect(run).toMatchObject({
      id: ids["fake-llm"],
      name: "fake-llm",
      run_type: "llm",
      status: "success",
      inputs: { input: "hello" },
      outputs: { text: "echo hello" },
      total_tokens: 12,
      prompt_tokens: 7,
      completion_tokens: 5,
      parent_run_id: ids.lookup,
      parent_run_ids: [ids.rootA, ids.lookup],
      trace_id: ids.rootA,
      session_id: projectId,
      tags: [],
    });
    expect(run?.start_time).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
    expect(run?.dotted_order?.split(".")).toHaveLength(3);
    expect(run?.app_path).toBe(
      `/o/${(await t.client().iam.workspaces.getCurrentWorkspace({})).id}/projects/p/${projectId}/r/${run?.id}?trace_id=${ids.rootA}&start_time=${run?.start_time}`,
    );
    expect(run?.extra?.metadata?.usage_metadata).toMatchObject({
      total_tokens: 12,
    });
  });

  it("filters by runType, error, trace and metadata pairs", async () => {
    expect(names(await list({ projectId, runType: "tool" })).sort()).toEqual(["broken", "lookup"]);
    const failed = await list({ projectId, error: true });
    expect(names(failed)).toEqual(["broken"]);
    expect(failed[0]?.error).toContain("index unavailable");
    expect(failed[0]?.status).toBe("error");
    expect(names(await list({ projectId, traceId: ids.rootA, isRoot: false })).sort()).toEqual([
      "fake-llm",
      "lookup",
    ]);
    const conv = await list({
      projectId,
      filter: `and(eq(metadata_key, "conversation_id"), eq(metadata_value, "conv-1"))`,
    });
    // traceable passes the root's metadata down to its children.
    expect(conv.map((r) => r.id).sort()).toEqual([ids.rootA, ids.lookup, ids["fake-llm"]].sort());
    expect(await list({ projectId, startTime: new Date(Date.now() + 60_000) })).toEqual([]);
  });

  it("applies traceFilter to the root of each run's trace and treeFilter to any run of it", async () => {
    const inProdTraces = await list({ projectId, isRoot: false, traceFilter: `has(tags, "prod")` });
    expect(names(inProdTraces).sort()).toEqual(["fake-llm", "lookup"]);
    const rootsWithFailure = await list({ projectId, isRoot: true, treeFilter: `eq(name, "broken")` });
    expect(rootsWithFailure.map((r) => r.id)).toEqual([ids.rootB]);
    const combined = await list({
      projectId,
      filter: `eq(run_type, "tool")`,
      treeFilter: `gt(total_tokens, 0)`,
    });
    expect(names(combined)).toEqual(["lookup"]);
  });

  it("returns only the selected fields", async () => {
    const [run] = await list({ projectId, id: [ids.rootA!], select: ["id", "name", "child_run_ids"] });
    // The SDK adds start_time and end_time (undefined) while normalising timestamps.
    expect(Object.entries(run ?? {}).filter(([, v]) => v !== undefined)).toEqual([
      ["id", ids.rootA],
      ["name", "pipeline"],
    ]);
  });

  it("follows the cursors across pages", async () => {
    const queries: string[] = [];
    const paged = await list({ projectId, isRoot: true }, sdkClient({ pageSize: 2, queries }));
    expect(queries.length).toBe(4);
    const all = await list({ projectId, isRoot: true });
    expect(paged.map((r) => r.id)).toEqual(all.map((r) => r.id));
    expect(new Set(paged.map((r) => r.id)).size).toBe(FILLERS + 2);
  });

  it("stops at the SDK's limit", async () => {
    expect(await list({ projectId, isRoot: true, limit: 3 })).toHaveLength(3);
  });

  it("surfaces a bad filter as a 422 naming the position", async () => {
    await expect(list({ projectId, filter: `eq(name, "x"` })).rejects.toThrow(
      /422.*invalid filter at position 12: expected \\?"\)\\?", found the end of the filter/,
    );
  });
});

describe("readRun through the langsmith SDK", () => {
  it("reads a run with every field", async () => {
    const run = await sdkClient().readRun(ids.broken!);
    expect(run).toMatchObject({
      id: ids.broken,
      name: "broken",
      run_type: "tool",
      status: "error",
      trace_id: ids.rootB,
      parent_run_id: ids.rootB,
      session_id: projectId,
      is_root: false,
    });
    expect(run.error).toContain("index unavailable");
    expect(typeof run.end_time).toBe("string");
  });

  it("answers 404 for an unknown run and 422 for a malformed id", async () => {
    await expect(sdkClient().readRun(randomUUID())).rejects.toThrow(/not found/i);
    const res = await t.fetch("/api/v1/runs/not-a-uuid");
    expect(res.status).toBe(422);
    expect(await res.json()).toEqual({ detail: 'run_id must be a UUID, got "not-a-uuid"' });
  });
});

describe("POST /api/v1/runs/query over REST", () => {
  it("pages with opaque cursors that are stable and end with no next cursor", async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const { status, body } = await query({
        session: [projectId],
        limit: 3,
        select: ["id"],
        ...(cursor ? { cursor } : {}),
      });
      expect(status).toBe(200);
      for (const run of body.runs as { id: string }[]) seen.push(run.id);
      cursor = (body.cursors as { next?: string }).next;
      pages++;
    } while (cursor);
    expect(pages).toBe(4);
    expect(seen).toHaveLength(FILLERS + 5);
    expect(new Set(seen).size).toBe(seen.length);
    const asc = await query({ session: [projectId], order: "asc", select: ["id"] });
    expect((asc.body.runs as { id: string }[]).map((r) => r.id)).toEqual([...seen].reverse());
  });

  it.each([
    [
      { filter: "and(eq(name, 'x'), gt(latency, 5x))" },
      "invalid filter at position 32: unknown duration unit",
    ],
    [{ trace_filter: "eq(nme, 'x')" }, 'invalid trace_filter at position 3: unknown field "nme"'],
    [{ tree_filter: "eq(status, 'ok')" }, "invalid tree_filter at position 11: expected one of"],
    [{ select: ["id", "bogus"] }, 'select: unknown run field "bogus"'],
    [{ cursor: "not-a-cursor" }, "cursor is not valid"],
    [{ session: ["nope"] }, 'session[0] must be a UUID, got "nope"'],
    [{ limit: 0 }, "limit must be at least 1"],
    [{ order: "sideways" }, 'order must be "asc" or "desc"'],
    [{ execution_order: 1 }, "execution_order is deprecated"],
  ])("answers 422 for %j", async (body, detail) => {
    const res = await query(body);
    expect(res.status).toBe(422);
    expect(String(res.body.detail)).toContain(detail);
  });

  it("ignores a field no LangSmith client knows, as LangSmith does (a newer client's)", async () => {
    const res = await query({ unknown_field: 1 });
    expect(res.status).toBe(200);
  });

  it("answers 404 for a project the workspace does not have", async () => {
    const res = await query({ session: [randomUUID()] });
    expect(res.status).toBe(404);
    expect(String(res.body.detail)).toMatch(/^project .* not found$/);
  });

  it("accepts the null fields the SDK sends and a single reference example id", async () => {
    const res = await query({
      session: null,
      start_time: null,
      reference_example: randomUUID(),
      select: ["id"],
    });
    expect(res).toEqual({ status: 200, body: { runs: [], cursors: {} } });
  });

  it("searches with query like search(...)", async () => {
    const res = await query({ session: [projectId], query: "INDEX UNAVAIL", select: ["name"] });
    expect(res.body.runs).toEqual([{ name: "broken" }]);
  });
});

describe("POST /api/v1/runs/query/validate", () => {
  it("answers {} for valid filters and 422 with the position otherwise", async () => {
    const ok = await t.fetch("/api/v1/runs/query/validate", {
      method: "POST",
      body: JSON.stringify({
        filter: `and(eq(run_type, "llm"), gt(latency, "5s"))`,
        tree_filter: `has(tags, "x")`,
      }),
    });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({});
    const bad = await t.fetch("/api/v1/runs/query/validate", {
      method: "POST",
      body: JSON.stringify({ trace_filter: `and(eq(run_type, "llm") gt(latency, 5))` }),
    });
    expect(bad.status).toBe(422);
    expect(await bad.json()).toEqual({
      detail: 'invalid trace_filter at position 24: expected "," or ")", found "gt"',
    });
  });
});

describe("RunService over Connect", () => {
  it("queries and reads with typed messages", async () => {
    const runs = createClient(RunService, t.client().transport);
    const page = await runs.queryRuns({ session: [projectId], filter: `eq(name, "fake-llm")` });
    expect(page.runs.map((r) => [r.id, r.totalTokens, r.inputs])).toEqual([
      [ids["fake-llm"], 12, { input: "hello" }],
    ]);
    expect(page.cursors?.next).toBeUndefined();
    const run = await runs.readRun({ runId: ids.lookup! });
    expect(run.parentRunIds?.values.map((v) => v.kind.value)).toEqual([ids.rootA]);
    const error = await runs.queryRuns({ filter: "gt(name" }).catch((e: unknown) => ConnectError.from(e));
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.InvalidArgument);
    expect((error as ConnectError).rawMessage).toBe(
      'invalid filter at position 7: expected ",", found the end of the filter',
    );
  });
});

describe("workspace scoping", () => {
  it("a key of another workspace finds none of these runs, even by id", async () => {
    const admin = t.client();
    const other = (await admin.iam.workspaces.createWorkspace({ displayName: "other" })).id;
    const key = (
      await admin.iam.apiKeys.createApiKey({ kind: "service", workspaceIds: [other], role: "viewer" })
    ).key;
    const res = await query({ id: Object.values(ids), select: ["id"] }, { apiKey: key });
    expect(res).toEqual({ status: 200, body: { runs: [], cursors: {} } });
    const viewer = await query({ id: [ids.rootA], select: ["id"] });
    expect(viewer.body.runs).toEqual([{ id: ids.rootA }]);
  });
});
