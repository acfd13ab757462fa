/**
 * A promise that rejects with nobody to handle it, here left behind by a graph node, is logged as a
 * JSON error line and the server goes on serving: it must not take every other request and run
 * down with it (Node's default would end the process).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type AgentplaneProcess, startAgentplaneProcess } from "../support/agentplane-process.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { type GraphFixture, writeGraphFixture } from "../support/graph-fixture.js";

const API_KEY = "ap_pt_unhandled_rejection_test_0123";

const GRAPHS = `
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";

const State = Annotation.Root({ done: Annotation<boolean> });

export const graph = new StateGraph(State)
  .addNode("careless", async () => {
    Promise.reject(new Error("a rejection the graph forgot"));
    return { done: true };
  })
  .addEdge(START, "careless")
  .addEdge("careless", END)
  .compile();
`;

let database: TestDatabase;
let fixture: GraphFixture;
let dataDir: string;
let server: AgentplaneProcess;

beforeAll(async () => {
  database = await createTestDatabase();
  fixture = await writeGraphFixture({ "graphs.ts": GRAPHS }, { graphs: { careless: "./graphs.ts:graph" } });
  dataDir = await mkdtemp(join(tmpdir(), "agentplane-unhandled-"));
  server = await startAgentplaneProcess({
    DATABASE_URL: database.url,
    AGENTPLANE_API_KEY: API_KEY,
    AGENTPLANE_CONFIG: fixture.configFile,
    AGENTPLANE_DATA_DIR: dataDir,
  });
});

afterAll(async () => {
  server?.child.kill("SIGTERM");
  await server?.exited;
  await fixture?.remove();
  await rm(dataDir, { recursive: true, force: true });
  await database?.drop();
});

it("logs a rejection nobody handled and keeps serving", { timeout: 60_000 }, async () => {
  const client = new Client({ apiUrl: server.baseUrl, apiKey: API_KEY });
  for (const attempt of [1, 2]) {
    const thread = await client.threads.create();
    expect(await client.runs.wait(thread.thread_id, "careless", { input: {} })).toEqual({ done: true });
    await expect
      .poll(
        () =>
          server
            .stderr()
            .split("\n")
            .filter((line) => line.includes("a rejection the graph forgot")).length,
        { timeout: 10_000 },
      )
      .toBe(attempt);
  }
  const line = JSON.parse(
    server
      .stderr()
      .split("\n")
      .find((text) => text.includes("a rejection the graph forgot")) ?? "{}",
  ) as Record<string, unknown>;
  expect(line).toMatchObject({
    level: "error",
    message: "a promise rejected with nobody to handle it; serving on",
  });
  expect(server.child.exitCode).toBeNull();
});
