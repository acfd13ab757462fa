/**
 * Relative ("/…") webhooks across processes: an API process (in-process, role `api`, serving the
 * graphs file's custom app) and a worker process (a child, role `worker`, configured through the
 * environment with AGENTPLANE_LOOPBACK_URL) on one database. The run executes on the worker, which
 * delivers its relative webhook to the API's custom route with the run's credentials, once.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import postgres from "postgres";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DEFAULT_WEBHOOK_SETTINGS } from "../../server/config.js";
import { type AgentplaneProcess, startAgentplaneProcess } from "../support/agentplane-process.js";
import { sdkClient, waitFor } from "../support/runs-app.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** Generous: a process to start on a loaded 2-core machine. */
const TIMEOUT = 150_000;
const GRAPHS = fileURLToPath(new URL("../fixtures/webhooks-graphs-file/langgraph.json", import.meta.url));
/** The variables the graphs file's header templates read, in both processes. */
const HOOK_ENV = { AP_TEST_HOOK_TOKEN: "tok", AP_TEST_HOOK_A: "a", AP_TEST_HOOK_B: "b" };

let api: TestApp;
let worker: AgentplaneProcess | undefined;
let dataDir: string;

beforeAll(async () => {
  Object.assign(process.env, HOOK_ENV);
  api = await startTestApp({ graphConfigPath: GRAPHS, role: "api", webhooks: DEFAULT_WEBHOOK_SETTINGS });
  dataDir = await mkdtemp(join(tmpdir(), "agentplane-relative-webhook-"));
  worker = await startAgentplaneProcess({
    ...HOOK_ENV,
    AGENTPLANE_ROLE: "worker",
    AGENTPLANE_CONFIG: GRAPHS,
    DATABASE_URL: api.databaseUrl,
    AGENTPLANE_DATA_DIR: dataDir,
    AGENTPLANE_LOOPBACK_URL: api.baseUrl,
  });
}, TIMEOUT);
afterAll(async () => {
  if (worker && worker.child.exitCode === null && worker.child.signalCode === null) {
    worker.child.kill("SIGTERM");
    await worker.exited;
  }
  await api?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
  for (const name of Object.keys(HOOK_ENV)) delete process.env[name];
});

it(
  "a worker delivers a relative webhook to the API process's custom route, once, with the run's credentials",
  async () => {
    const sdk = sdkClient(api.baseUrl, api.adminKey);
    const thread = await sdk.threads.create();
    const run = await sdk.runs.create(thread.thread_id, "steps", {
      input: { topic: "across" },
      webhook: "/sink/hook?tag=across",
    });
    await sdk.runs.join(thread.thread_id, run.run_id);
    const read = async () =>
      (
        (await (await fetch(`${api.baseUrl}/sink/calls`)).json()) as {
          query: string;
          body: { run_id: string; status: string };
          runTokenKey: boolean;
          threadRead: number;
        }[]
      ).filter((c) => c.body.run_id === run.run_id);
    const [call] = await waitFor(read, (calls) => calls.length > 0, 60_000);
    expect(call).toMatchObject({
      query: "?tag=across",
      body: { status: "success" },
      runTokenKey: true,
      threadRead: 200,
    });
    // The delivery job completed on its first call: no second call follows.
    const sql = postgres(api.databaseUrl, { max: 1, onnotice: () => {} });
    try {
      const jobs = async () =>
        sql<{ state: string; retry_count: number }[]>`
          select state, retry_count from pgboss.job
          where name = 'agent.webhook' and data ->> 'runId' = ${run.run_id}`;
      const [job] = await waitFor(jobs, (rows) => rows[0]?.state === "completed", 60_000);
      expect(job?.retry_count).toBe(0);
    } finally {
      await sql.end();
    }
    expect(await read()).toHaveLength(1);
  },
  TIMEOUT,
);
