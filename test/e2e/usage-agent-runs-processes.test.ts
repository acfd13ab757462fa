/**
 * The traces of agent runs count in granular usage under whoever created the run, across
 * processes: an API process (role api, in this process) takes the requests and a worker process
 * (role worker, a child process) on the same database executes and traces the runs. A run created
 * with a personal key counts under that key and its user, one created with a service key under
 * that key and no user, and a cron's runs under the key that created the cron: the cron is created
 * through the API process, whose clock the test holds, and once the worker process has stopped a
 * second worker (in this process, on the same clock) fires and executes its run. The worker process
 * stops first because a cron tick is one job that any worker may take, and one on the real clock
 * would find nothing due. Runs and crons go through the official
 * `@langchain/langgraph-sdk`; usage is read back through the REST API.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Clock } from "../../server/clock.js";
import { type AgentplaneProcess, startAgentplaneProcess } from "../support/agentplane-process.js";
import { RUNS_GRAPHS, sdkClient, waitFor } from "../support/runs-app.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** The cron clock of the API process and the ticking worker; the cron's first time is 10:05. */
const clock: Clock & { at: Date } = { at: new Date("2032-06-01T10:00:00.000Z"), now: () => clock.at };
const HOUR_MS = 3_600_000;

let api: TestApp;
let worker: AgentplaneProcess;
let ticker: TestApp | undefined;
let dataDir: string;
let workspaceId: string;
let admin: { userId: string; shortKey: string };

interface UsageRecord {
  dimensions: Record<string, string | null>;
  traces: number;
}

/** Traces of the last and next two hours per value of `key` under `group_by` ("" for null). */
async function tracesBy(group_by: string, key: string): Promise<Record<string, number>> {
  const now = Date.now();
  const search = new URLSearchParams({
    start_time: new Date(now - 2 * HOUR_MS).toISOString(),
    end_time: new Date(now + 2 * HOUR_MS).toISOString(),
    workspace_ids: workspaceId,
    group_by,
  });
  const res = await api.fetch(`/api/v1/orgs/current/billing/granular-usage?${search}`);
  expect(res.status).toBe(200);
  const counts: Record<string, number> = {};
  for (const r of ((await res.json()) as { usage: UsageRecord[] }).usage) {
    const value = r.dimensions[key] ?? "";
    counts[value] = (counts[value] ?? 0) + r.traces;
  }
  return counts;
}

async function serviceKey(): Promise<{ key: string; shortKey: string }> {
  const created = await api.client().iam.apiKeys.createApiKey({
    kind: "service",
    workspaceIds: [workspaceId],
    role: "editor",
    organizationRole: "viewer",
  });
  return { key: created.key, shortKey: created.shortKey };
}

beforeAll(async () => {
  api = await startTestApp({ graphConfigPath: RUNS_GRAPHS, role: "api" }, { hooks: { clock } });
  dataDir = await mkdtemp(join(tmpdir(), "agentplane-usage-runs-"));
  worker = await startAgentplaneProcess({
    AGENTPLANE_ROLE: "worker",
    AGENTPLANE_CONFIG: RUNS_GRAPHS,
    DATABASE_URL: api.databaseUrl,
    AGENTPLANE_DATA_DIR: dataDir,
  });
  const me = await api.client().iam.identity.whoami({});
  workspaceId = me.workspace?.id ?? "";
  admin = { userId: me.user?.id ?? "", shortKey: me.apiKeyShortKey };
});
afterAll(async () => {
  await ticker?.stop();
  if (worker && worker.child.exitCode === null && worker.child.signalCode === null) {
    worker.child.kill("SIGTERM");
    await worker.exited;
  }
  await api?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

it("counts each agent run's trace under the key and user that created the run, cron runs under the cron's creator", async () => {
  const runner = await serviceKey();
  const scheduler = await serviceKey();
  const asAdmin = sdkClient(api.baseUrl, api.adminKey);
  const asRunner = sdkClient(api.baseUrl, runner.key);

  // Executed by the worker process, the only one that works runs so far.
  const thread = await asAdmin.threads.create();
  await asAdmin.runs.wait(thread.thread_id, "echo", { input: {} });
  await asRunner.runs.wait(null, "echo", { input: {} });
  const cron = await sdkClient(api.baseUrl, scheduler.key).crons.create("echo", {
    schedule: "5 * * * *",
    onRunCompleted: "keep",
  });
  expect(cron.cron_id).toBeTruthy();
  expect(cron.next_run_date).toBe("2032-06-01T10:05:00.000Z");
  // The cron fires on a second worker's tick, at its clock's 10:05, and that worker executes the run.
  worker.child.kill("SIGTERM");
  await worker.exited;
  ticker = await startTestApp(
    {
      graphConfigPath: RUNS_GRAPHS,
      role: "worker",
      databaseUrl: api.databaseUrl,
      bootstrapApiKey: api.adminKey,
    },
    { hooks: { clock, cronTickSeconds: 1 } },
  );
  clock.at = new Date("2032-06-01T10:05:00.000Z");
  const byKey = await waitFor(
    () => tracesBy("api_key", "api_key_short_key"),
    (counts) => Object.values(counts).reduce((a, b) => a + b, 0) >= 3,
  );
  expect(byKey).toEqual({ [admin.shortKey]: 1, [runner.shortKey]: 1, [scheduler.shortKey]: 1 });
  expect(await tracesBy("user", "user_id")).toEqual({ [admin.userId]: 1, "": 2 });
}, 60_000);
