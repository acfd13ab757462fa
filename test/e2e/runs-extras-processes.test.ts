/**
 * Run tracing and the loopback client across processes: an `api` process takes the run, a `worker`
 * process (its own OS process, AGENTPLANE_LOOPBACK_URL naming the API) executes it. The node's
 * `new Client()` reaches the API with the token the worker minted, and the run's trace, written by
 * the worker, is read back from the API.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@langchain/langgraph-sdk";
import type { Run } from "langsmith";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type AgentplaneProcess, startAgentplaneProcess } from "../support/agentplane-process.js";
import { type GraphFixture, writeGraphFixture } from "../support/graph-fixture.js";
import { langsmithClient } from "../support/langsmith-client.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const GRAPHS = `
import { FakeListChatModel } from "@langchain/core/utils/testing";
import { Client } from "@langchain/langgraph-sdk";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";

const State = Annotation.Root({ thread_status: Annotation<string>, pid: Annotation<number>, reply: Annotation<string> });
const model = new FakeListChatModel({ responses: ["pong"] });

export const graph = new StateGraph(State)
  .addNode("probe", async (_state, config) => {
    const thread = await new Client({ callerOptions: { maxRetries: 0 } }).threads.get(config.configurable.thread_id);
    const reply = await model.invoke("ping", config);
    return { thread_status: thread.status, pid: process.pid, reply: String(reply.content) };
  })
  .addEdge(START, "probe")
  .addEdge("probe", END)
  .compile();
`;

let fixture: GraphFixture;
let api: TestApp;
let worker: AgentplaneProcess;
let dataDir: string;

beforeAll(async () => {
  fixture = await writeGraphFixture({ "graphs.ts": GRAPHS }, { graphs: { probe: "./graphs.ts:graph" } });
  api = await startTestApp({ graphConfigPath: fixture.configFile, role: "api" });
  dataDir = await mkdtemp(join(tmpdir(), "agentplane-worker-"));
  worker = await startAgentplaneProcess({
    DATABASE_URL: api.databaseUrl,
    AGENTPLANE_ROLE: "worker",
    AGENTPLANE_CONFIG: fixture.configFile,
    AGENTPLANE_DATA_DIR: dataDir,
    AGENTPLANE_LOOPBACK_URL: api.baseUrl,
  });
});
afterAll(async () => {
  worker?.child.kill("SIGTERM");
  await worker?.exited;
  await api?.stop();
  await fixture?.remove();
  await rm(dataDir, { recursive: true, force: true });
});

it("a run executed by a worker process calls the API as itself and is traced", async () => {
  const sdk = new Client({ apiUrl: api.baseUrl, apiKey: api.adminKey, callerOptions: { maxRetries: 0 } });
  const thread = await sdk.threads.create();
  const run = await sdk.runs.create(thread.thread_id, "probe", { input: {} });
  await sdk.runs.join(thread.thread_id, run.run_id);
  const state = await sdk.threads.getState(thread.thread_id);
  expect(state.values).toMatchObject({ thread_status: "busy", pid: worker.child.pid, reply: "pong" });

  const traces = langsmithClient(api).client;
  const deadline = Date.now() + 20_000;
  let runs: Run[] = [];
  for (;;) {
    runs = [];
    for await (const r of traces.listRuns({ traceId: run.run_id })) runs.push(r);
    if (
      runs.some((r) => r.id === run.run_id && r.end_time) &&
      runs.some((r) => r.run_type === "llm" && r.end_time)
    )
      break;
    if (Date.now() > deadline)
      throw new Error(`trace incomplete: ${JSON.stringify(runs.map((r) => r.name))}`);
    // The worker writes trace records every 200 ms.
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  expect(runs.find((r) => r.id === run.run_id)).toMatchObject({
    status: "success",
    session_id: expect.any(String),
  });
  expect(runs.find((r) => r.run_type === "llm")?.parent_run_id).toBe(
    runs.find((r) => r.name === "probe")?.id,
  );
});
