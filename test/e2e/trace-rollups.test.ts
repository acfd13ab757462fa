/**
 * Rollups onto the root: a trace's root run carries the totals of its trace (tokens, costs, the
 * earliest first_token_time) whichever order posts and patches arrive in, through batch and
 * multipart ingest, re-sent, and from two server processes at once; and run stats through the
 * OFFICIAL `langsmith` SDK's getRunStats.
 */
import { randomUUID } from "node:crypto";
import { traceable } from "langsmith/traceable";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { uuidv7 } from "../../server/ids.js";
import { langsmithClient } from "../support/langsmith-client.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

let t: TestApp;
let other: TestApp;

beforeAll(async () => {
  t = await startTestApp();
  other = await startTestApp({ databaseUrl: t.databaseUrl, bootstrapApiKey: t.adminKey });
});
afterAll(async () => {
  await other?.stop();
  await t?.stop();
});

type Item = Record<string, unknown>;

/** `2026-11-26T14:00:00.123Z` → `20261126T140000123000Z`, the dotted_order time form. */
function stamp(date: Date): string {
  return date
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.(\d{3})Z$/, "$1000Z");
}

/**
 * A trace: a chain root with usage of its own, a tool under it with an LLM under that, and a second
 * LLM under the root. Each run has a post (start) and a patch (end, outputs with usage, events).
 */
function makeTrace(project: string, base = Date.now()) {
  const at = (ms: number) => new Date(base + ms);
  const root = uuidv7();
  const runs: {
    id: string;
    parent?: string;
    type: string;
    start: number;
    usage?: Item;
    firstToken?: number;
  }[] = [
    { id: root, type: "chain", start: 0, usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } },
    { id: uuidv7(), parent: root, type: "tool", start: 10 },
    {
      id: uuidv7(),
      parent: "",
      type: "llm",
      start: 20,
      usage: { input_tokens: 20, output_tokens: 6, total_tokens: 26, input_cost: 0.2, output_cost: 0.05 },
      firstToken: 500,
    },
    {
      id: uuidv7(),
      parent: root,
      type: "llm",
      start: 30,
      usage: { input_tokens: 10, output_tokens: 4, total_tokens: 14, input_cost: 0.1, output_cost: 0.02 },
      firstToken: 300,
    },
  ];
  runs[2]!.parent = runs[1]!.id;
  const dotted = new Map<string, string>();
  const posts: Item[] = [];
  const patches: Item[] = [];
  for (const run of runs) {
    const own = `${stamp(at(run.start))}${run.id}`;
    const order = run.parent ? `${dotted.get(run.parent)}.${own}` : own;
    dotted.set(run.id, order);
    const position = {
      id: run.id,
      trace_id: root,
      dotted_order: order,
      parent_run_id: run.parent ?? null,
      start_time: at(run.start).toISOString(),
    };
    posts.push({ ...position, name: `${run.type}-${run.start}`, run_type: run.type, session_name: project });
    patches.push({
      ...position,
      end_time: at(run.start + 1000).toISOString(),
      outputs: { answer: "ok", ...(run.usage ? { usage_metadata: run.usage } : {}) },
      ...(run.firstToken === undefined
        ? {}
        : { events: [{ name: "new_token", time: at(run.start + run.firstToken).toISOString() }] }),
    });
  }
  return {
    root,
    posts,
    patches,
    firstTokenTime: at(30 + 300).toISOString(),
    childId: runs[3]!.id,
  };
}

/** The totals the root of {@link makeTrace} must show: its own usage plus both LLMs'. */
const TOTALS = {
  total_tokens: 42,
  prompt_tokens: 31,
  completion_tokens: 11,
};

async function batch(app: TestApp, body: { post?: Item[]; patch?: Item[] }) {
  const res = await app.fetch("/api/v1/runs/batch", { method: "POST", body: JSON.stringify(body) });
  expect(res.status, await res.clone().text()).toBe(202);
}

async function multipart(app: TestApp, parts: { name: string; value: Item }[]) {
  const boundary = `b-${randomUUID()}`;
  const lines: string[] = [];
  for (const { name, value } of parts) {
    const json = JSON.stringify(value);
    lines.push(
      `--${boundary}`,
      `Content-Disposition: form-data; name="${name}"`,
      `Content-Type: application/json; length=${Buffer.byteLength(json)}`,
      "",
      json,
    );
  }
  lines.push(`--${boundary}--`, "");
  const res = await app.fetch("/api/v1/runs/multipart", {
    method: "POST",
    headers: { "content-type": `multipart/form-data; boundary=${boundary}` },
    body: lines.join("\r\n"),
  });
  expect(res.status, await res.clone().text()).toBe(202);
}

/** A run by id over REST, as RunService.ReadRun answers. */
async function readRun(id: string): Promise<Item> {
  const res = await t.fetch(`/api/v1/runs/${id}`);
  expect(res.status).toBe(200);
  return (await res.json()) as Item;
}

async function expectRolledUp(trace: ReturnType<typeof makeTrace>) {
  const root = await readRun(trace.root);
  expect(root).toMatchObject(TOTALS);
  expect(Number(root.prompt_cost)).toBeCloseTo(0.3, 10);
  expect(Number(root.completion_cost)).toBeCloseTo(0.07, 10);
  expect(Number(root.total_cost)).toBeCloseTo(0.37, 10);
  expect(Date.parse(String(root.first_token_time))).toBe(Date.parse(trace.firstTokenTime));
  // A child keeps its own values.
  expect(await readRun(trace.childId)).toMatchObject({ total_tokens: 14, prompt_tokens: 10 });
}

describe("rollups onto the root", () => {
  const project = `rollups-${randomUUID()}`;

  it("sums the trace onto the root when the children arrive before the root", async () => {
    const trace = makeTrace(project);
    const children = (items: Item[]) => items.slice(1);
    await batch(t, { post: children(trace.posts), patch: children(trace.patches) });
    await batch(t, { post: trace.posts.slice(0, 1) });
    await batch(t, { patch: trace.patches.slice(0, 1) });
    await expectRolledUp(trace);
  });

  it("sums the trace when every patch arrives before its post", async () => {
    const trace = makeTrace(project);
    await batch(t, { patch: trace.patches });
    await batch(t, { post: trace.posts });
    await expectRolledUp(trace);
  });

  it("sums the trace sent in one batch, and changes nothing when it is sent again", async () => {
    const trace = makeTrace(project);
    await batch(t, { post: trace.posts, patch: trace.patches });
    await expectRolledUp(trace);
    await batch(t, { post: trace.posts, patch: trace.patches });
    await batch(t, { patch: trace.patches.slice(2) });
    await expectRolledUp(trace);
  });

  it("sums the trace sent as multipart parts one request each, in reverse", async () => {
    const trace = makeTrace(project);
    const parts = [
      ...trace.posts.map((value) => ({ name: `post.${value.id}`, value })),
      ...trace.patches.map((value) => ({ name: `patch.${value.id}`, value })),
    ].reverse();
    for (const part of parts) await multipart(t, [part]);
    await expectRolledUp(trace);
  });

  it("sums the trace when two processes store its runs at the same time", async () => {
    const trace = makeTrace(project);
    // Every run in a batch of its own, the batches spread over both processes and sent at once.
    const sends = [
      ...trace.posts.map((post) => ({ post: [post] })),
      ...trace.patches.map((patch) => ({ patch: [patch] })),
    ].map((body, i) => batch(i % 2 === 0 ? t : other, body));
    await Promise.all(sends);
    await expectRolledUp(trace);
  });

  it("rolls up a nested traceable trace of the SDK", async () => {
    const { client } = langsmithClient(t);
    const name = `rollups-sdk-${randomUUID()}`;
    const options = { client, project_name: name, tracingEnabled: true } as const;
    const llm = traceable(
      async (prompt: string) => ({
        text: prompt,
        usage_metadata: { input_tokens: 7, output_tokens: 5, total_tokens: 12 },
      }),
      { ...options, name: "llm", run_type: "llm" },
    );
    let rootId = "";
    const chain = traceable(async (q: string) => [await llm(q), await llm(q)], {
      ...options,
      name: "chain",
      on_start: (run) => {
        rootId = run?.id ?? "";
      },
    });
    await chain("hi");
    await client.awaitPendingTraceBatches();
    expect(await readRun(rootId)).toMatchObject({
      total_tokens: 24,
      prompt_tokens: 14,
      completion_tokens: 10,
    });

    // Project stats count each trace's tokens once (its root carries them).
    const project = await client.readProject({ projectName: name, includeStats: true });
    expect(project).toMatchObject({
      run_count: 1,
      total_tokens: 24,
      prompt_tokens: 14,
      completion_tokens: 10,
    });

    const stats = (await client.getRunStats({ projectNames: [name], isRoot: true })) as Item;
    expect(stats).toMatchObject({ run_count: 1, total_tokens: 24, prompt_tokens: 14, error_rate: 0 });
    const all = (await client.getRunStats({ projectNames: [name] })) as Item;
    expect(all).toMatchObject({ run_count: 3, error_rate: 0, median_tokens: 12 });
    expect(all.latency_p50).toEqual(expect.any(Number));
    expect(Date.parse(String(all.last_run_start_time))).not.toBeNaN();
  });
});

describe("run stats", () => {
  it("aggregates the runs a filter selects, and refuses bad input with a 4xx", async () => {
    const project = `stats-${randomUUID()}`;
    const traces = [makeTrace(project), makeTrace(project)];
    for (const trace of traces) await batch(t, { post: trace.posts, patch: trace.patches });
    const projectId = String((await readRun(traces[0]!.root)).session_id);
    const stats = async (body: Item) => {
      const res = await t.fetch("/api/v1/runs/stats", { method: "POST", body: JSON.stringify(body) });
      return { status: res.status, body: (await res.json()) as Item };
    };
    expect((await stats({ session: [projectId], is_root: true })).body).toMatchObject({
      run_count: 2,
      total_tokens: 84,
      prompt_tokens: 62,
      completion_tokens: 22,
      error_rate: 0,
      streaming_rate: 1,
      latency_p50: 1,
    });
    expect((await stats({ session: [projectId], filter: `eq(run_type, "llm")` })).body).toMatchObject({
      run_count: 4,
      total_tokens: 80,
      median_tokens: 20,
      streaming_rate: 1,
    });
    expect((await stats({ session: [projectId], filter: `eq(name, "nothing")` })).body).toMatchObject({
      run_count: 0,
      total_tokens: 0,
      error_rate: 0,
    });

    let res = await stats({ session: [randomUUID()] });
    expect(res.status).toBe(404);
    res = await stats({ session: [projectId], filter: "eq(name" });
    expect(res.status).toBe(422);
    expect(String(res.body.detail)).toMatch(/filter/);
    res = await stats({ session: [projectId], data_source_type: "historical" });
    expect(res.status).toBe(422);
    expect(String(res.body.detail)).toMatch(/data_source_type/);
    res = await stats({ id: ["nope"] });
    expect(res.status).toBe(422);
  });
});
