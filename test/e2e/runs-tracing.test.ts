/**
 * Agent runs traced into agentplane's own tracing store: a run executed through the official
 * `@langchain/langgraph-sdk` is read back through the official `langsmith` Client as a trace (the
 * root graph run, its node runs, the chat model and tool runs inside them), in the run's project
 * (`langsmith_tracer.project_name`, else the graph id), counted in usage; a failing run's root is an
 * error; with AGENTPLANE_RUN_TRACING off nothing is stored.
 */
import { Client as GraphClient } from "@langchain/langgraph-sdk";
import type { Client as LangsmithClient, Run } from "langsmith";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GraphFixture, writeGraphFixture } from "../support/graph-fixture.js";
import { langsmithClient } from "../support/langsmith-client.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const GRAPHS = `
import { FakeListChatModel } from "@langchain/core/utils/testing";
import { tool } from "@langchain/core/tools";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { z } from "zod";

const model = new FakeListChatModel({ responses: ["Hi!"] });
const lookup = tool(async ({ q }) => "found " + q, {
  name: "lookup",
  description: "Looks a word up.",
  schema: z.object({ q: z.string() }),
});

export const graph = new StateGraph(MessagesAnnotation)
  .addNode("agent", async (state, config) => ({ messages: [await model.invoke(state.messages, config)] }))
  .addNode("search", async (_state, config) => {
    await lookup.invoke({ q: "otters" }, config);
    return {};
  })
  .addEdge(START, "agent")
  .addEdge("agent", "search")
  .addEdge("search", END)
  .compile();

export const failing = new StateGraph(MessagesAnnotation)
  .addNode("boom", () => {
    throw new Error("Boo!");
  })
  .addEdge(START, "boom")
  .addEdge("boom", END)
  .compile();
`;

let fixture: GraphFixture;
let t: TestApp;
let sdk: GraphClient;
let traces: LangsmithClient;

beforeAll(async () => {
  fixture = await writeGraphFixture(
    { "graphs.ts": GRAPHS },
    { graphs: { traced: "./graphs.ts:graph", failing: "./graphs.ts:failing" } },
  );
  t = await startTestApp({ graphConfigPath: fixture.configFile });
  sdk = new GraphClient({ apiUrl: t.baseUrl, apiKey: t.adminKey, callerOptions: { maxRetries: 0 } });
  traces = langsmithClient(t).client;
});
afterAll(async () => {
  await t?.stop();
  await fixture?.remove();
});

/** Runs `graphId` on a new thread to its end; answers the run's id. */
async function runToEnd(graphId: string, extra: Record<string, unknown> = {}): Promise<string> {
  const thread = await sdk.threads.create();
  const run = await sdk.runs.create(thread.thread_id, graphId, {
    input: { messages: [{ role: "human", content: "hello", id: "m1" }] },
    ...extra,
  });
  await sdk.runs.join(thread.thread_id, run.run_id);
  return run.run_id;
}

/**
 * The trace of `runId` once its root has ended and it holds `minRuns` runs (records are written in
 * the background after the run ends): every run of the trace, by id.
 */
async function traceOf(runId: string, minRuns: number): Promise<Map<string, Run>> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const runs: Run[] = [];
    for await (const run of traces.listRuns({ traceId: runId })) runs.push(run);
    const root = runs.find((r) => r.id === runId);
    if (root?.end_time && runs.length >= minRuns && runs.every((r) => r.end_time))
      return new Map(runs.map((r) => [r.id, r]));
    if (Date.now() > deadline)
      throw new Error(`trace ${runId} incomplete: ${JSON.stringify(runs.map((r) => [r.name, r.end_time]))}`);
    // Records are flushed every 200 ms; a read every 100 ms sees them soon after.
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function only(runs: Map<string, Run>, name: string): Run {
  const found = [...runs.values()].filter((r) => r.name === name);
  expect(
    found.map((r) => r.name),
    `one run named ${name}`,
  ).toEqual([name]);
  return found[0] as Run;
}

describe("a run's trace", () => {
  it("is the root graph run with its node runs and their chat model and tool runs", async () => {
    const runId = await runToEnd("traced");
    const runs = await traceOf(runId, 5);
    const root = runs.get(runId) as Run;
    expect(root).toMatchObject({ run_type: "chain", trace_id: runId });
    expect(root.parent_run_id ?? null).toBeNull();
    expect(root.status).toBe("success");
    expect(root.inputs).toMatchObject({ messages: [{ content: "hello", id: "m1" }] });
    expect(JSON.stringify(root.outputs)).toContain("Hi!");
    const agent = only(runs, "agent");
    const search = only(runs, "search");
    expect(agent.parent_run_id).toBe(runId);
    expect(search.parent_run_id).toBe(runId);
    const llm = only(runs, "FakeListChatModel");
    expect(llm).toMatchObject({ run_type: "llm", parent_run_id: agent.id, trace_id: runId });
    expect(JSON.stringify(llm.outputs)).toContain("Hi!");
    const lookup = only(runs, "lookup");
    expect(lookup).toMatchObject({ run_type: "tool", parent_run_id: search.id });
    expect(lookup.inputs).toMatchObject({ q: "otters" });
    expect(JSON.stringify(lookup.outputs)).toContain("found otters");
    // Dotted orders nest as LangSmith's do: each run's order extends its parent's.
    for (const run of runs.values()) {
      if (!run.parent_run_id) continue;
      const parent = runs.get(run.parent_run_id) as Run;
      expect(run.dotted_order?.startsWith(`${parent.dotted_order}.`)).toBe(true);
    }
    // Read as one tree through the SDK (LangGraph's input step is there too, tagged hidden, as
    // LangSmith stores it).
    const tree = await traces.readRun(runId, { loadChildRuns: true });
    expect(tree.child_runs?.map((c) => c.name)).toEqual(["__start__", "agent", "search"]);
  });

  it("is stored in a project named after the graph, or in the one langsmith_tracer names", async () => {
    const byGraph = await runToEnd("traced");
    const named = await runToEnd("traced", { _langsmithTracer: { projectName: "agent-evals" } });
    await traceOf(byGraph, 5);
    await traceOf(named, 5);
    const rootsIn = async (projectName: string) => {
      const ids: string[] = [];
      for await (const run of traces.listRuns({ projectName, isRoot: true })) ids.push(run.id);
      return ids;
    };
    expect(await rootsIn("traced")).toContain(byGraph);
    expect(await rootsIn("traced")).not.toContain(named);
    expect(await rootsIn("agent-evals")).toEqual([named]);
  });

  it("of a failing run has an error root and an error node", async () => {
    const runId = await runToEnd("failing");
    const runs = await traceOf(runId, 2);
    const root = runs.get(runId) as Run;
    expect(root.status).toBe("error");
    expect(root.error).toContain("Boo!");
    const boom = only(runs, "boom");
    expect(boom.status).toBe("error");
    expect(boom.error).toContain("Boo!");
  });

  it("is counted in granular usage", async () => {
    const runId = await runToEnd("traced");
    await traceOf(runId, 5);
    const me = await t.client().iam.identity.whoami({});
    const hour = (offsetMs: number) => `${new Date(Date.now() + offsetMs).toISOString().slice(0, 13)}:00:00Z`;
    const params = new URLSearchParams({
      start_time: hour(-3_600_000),
      end_time: hour(3_600_000),
      workspace_ids: me.workspace?.id ?? "",
    });
    const res = await t.fetch(`/api/v1/orgs/current/billing/granular-usage?${params}`);
    expect(res.status, await res.clone().text()).toBe(200);
    const body = (await res.json()) as { usage: { traces: number }[] };
    const counted = body.usage.reduce((sum, row) => sum + row.traces, 0);
    // Every trace this file's runs made so far, in every project, is counted once.
    let roots = 0;
    for await (const project of traces.listProjects())
      for await (const _run of traces.listRuns({ projectId: project.id, isRoot: true })) roots += 1;
    expect(roots).toBeGreaterThanOrEqual(5);
    expect(counted).toBe(roots);
  });
});

describe("with AGENTPLANE_RUN_TRACING off", () => {
  it("stores no trace of a run", async () => {
    const off = await startTestApp({ graphConfigPath: fixture.configFile, runTracing: false });
    const sql = postgres(off.databaseUrl, { max: 1 });
    try {
      const client = new GraphClient({
        apiUrl: off.baseUrl,
        apiKey: off.adminKey,
        callerOptions: { maxRetries: 0 },
      });
      const thread = await client.threads.create();
      const run = await client.runs.create(thread.thread_id, "traced", {
        input: { messages: [{ role: "human", content: "hello" }] },
      });
      await client.runs.join(thread.thread_id, run.run_id);
      // Stopping the app waits for every trace write it started.
      await off.app.stop();
      const [row] = await sql<{ runs: number; projects: number }[]>`
        select (select count(*)::int from runs) as runs, (select count(*)::int from tracing_projects) as projects`;
      expect(row).toEqual({ runs: 0, projects: 0 });
    } finally {
      await sql.end();
      await off.stop();
    }
  });
});
