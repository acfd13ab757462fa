/**
 * `AGENTPLANE_CONFIG=path/to/langgraph.json`: the server process loads a user's graph folder and
 * serves its graphs' system assistants (graph modules may call `getLogger()` at load); a broken graph
 * or a bad `LANGGRAPH_CONFIG` stops start-up with a clear message.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, expect, it } from "vitest";
import { systemAssistantId } from "../../server/runtime/system-assistant-id.js";
import { createTestDatabase } from "../support/database.js";
import { type GraphFixture, NESTED_GRAPH_MODULE, writeGraphFixture } from "../support/graph-fixture.js";

const API_KEY = "ap_pt_graph_config_process_key_0123";

let db: Awaited<ReturnType<typeof createTestDatabase>>;
let dataDir: string;
const fixtures: GraphFixture[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = await mkdtemp(join(tmpdir(), "agentplane-graph-process-"));
});
afterAll(async () => {
  for (const f of fixtures) await f.remove();
  await db?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

/**
 * Runs `node --import tsx server/main.ts` with AGENTPLANE_CONFIG (and `env`); `onListening` gets the
 * base URL.
 */
function runServer(
  configFile: string,
  onListening: (baseUrl: string) => Promise<void>,
  env: Record<string, string> = {},
) {
  const child = spawn(process.execPath, ["--import", "tsx", "server/main.ts"], {
    env: {
      ...process.env,
      ...env,
      AGENTPLANE_CONFIG: configFile,
      DATABASE_URL: db.url,
      AGENTPLANE_PORT: "0",
      AGENTPLANE_API_KEY: API_KEY,
      AGENTPLANE_DATA_DIR: dataDir,
      AGENTPLANE_LOG_LEVEL: "warn",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  let stdout = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /listening on (http:\/\/\S+)\n/.exec(stdout);
      if (match?.[1])
        onListening(match[1]).then(
          () => child.kill("SIGTERM"),
          (error: unknown) => {
            child.kill("SIGKILL");
            reject(error);
          },
        );
    });
    child.on("exit", (code) => resolve({ code, stderr }));
  });
}

/** A graph module that logs through the platform logger while it loads. */
const LOGGING_MODULE = `
import { getLogger } from "@langchain/langgraph-sdk/logging";
export { graph } from "./graphs.ts";
getLogger().warn("loaded with the platform logger", { module: "logging" });
`;

it("serves the graphs of the config file AGENTPLANE_CONFIG names", async () => {
  const fixture = await writeGraphFixture(
    { "graphs.ts": NESTED_GRAPH_MODULE, "logging.ts": LOGGING_MODULE },
    { graphs: { weather: "./logging.ts:graph" } },
  );
  fixtures.push(fixture);
  let names: string[] = [];
  let id = "";
  const result = await runServer(fixture.configFile, async (baseUrl) => {
    const lg = new Client({ apiUrl: baseUrl, apiKey: API_KEY, callerOptions: { maxRetries: 0 } });
    names = (await lg.assistants.search()).map((a) => a.name);
    id = (await lg.assistants.get("weather")).assistant_id;
  });
  expect(result.code, result.stderr).toBe(0);
  expect(names).toEqual(["weather"]);
  expect(id).toBe(systemAssistantId("weather"));
  const logged = result.stderr
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  expect(logged).toContainEqual(
    expect.objectContaining({
      level: "warn",
      message: "loaded with the platform logger",
      graph_id: "weather",
      module: "logging",
    }),
  );
});

it("refuses to start with a LANGGRAPH_CONFIG that is not JSON, naming the variable", async () => {
  const fixture = await writeGraphFixture(
    { "graphs.ts": NESTED_GRAPH_MODULE },
    { graphs: { weather: "./graphs.ts:graph" } },
  );
  fixtures.push(fixture);
  const result = await runServer(
    fixture.configFile,
    async () => {
      throw new Error("the server should not have started");
    },
    { LANGGRAPH_CONFIG: "{weather: {}}" },
  );
  expect(result.code).toBe(2);
  expect(result.stderr).toMatch(
    /agentplane: invalid configuration:\n {2}- LANGGRAPH_CONFIG is not valid JSON: /,
  );
});

it("refuses to start with a broken graph, naming the graph, the file and the cause", async () => {
  const fixture = await writeGraphFixture(
    { "graphs.ts": "export const graph = 42;" },
    { graphs: { broken: "./graphs.ts:graph" } },
  );
  fixtures.push(fixture);
  const result = await runServer(fixture.configFile, async () => {
    throw new Error("the server should not have started");
  });
  expect(result.code).toBe(1);
  expect(result.stderr).toContain(
    `agentplane failed to start: graph "broken" (${join(fixture.dir, "graphs.ts")}, export "graph") cannot be loaded: the export is a number`,
  );
});

it("refuses to start with checkpointer.serde.allowed_json_modules, saying why", async () => {
  const fixture = await writeGraphFixture(
    { "graphs.ts": NESTED_GRAPH_MODULE },
    {
      graphs: { weather: "./graphs.ts:graph" },
      checkpointer: { serde: { allowed_json_modules: [["my_agent", "models", "Ticket"]] } },
    },
  );
  fixtures.push(fixture);
  const result = await runServer(fixture.configFile, async () => {
    throw new Error("the server should not have started");
  });
  expect(result.code).not.toBe(0);
  expect(result.stderr).toContain(
    "checkpointer.serde.allowed_json_modules: is an allowlist of Python classes for the Python serializer; agentplane stores checkpoints with LangGraph.js's serializer",
  );
});
