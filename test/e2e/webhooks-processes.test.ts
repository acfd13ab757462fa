/**
 * Webhook durability across a kill -9: an API process (in-process, role `api`) and worker processes
 * (child processes, role `worker`, configured through the environment) on one database. A run ends on
 * a worker, which is killed with SIGKILL before its webhook was delivered; a worker started afterwards
 * delivers it, and the receiver takes exactly one call. Also: the header templates of the environment
 * (`AGENTPLANE_WEBHOOK_HEADERS` with `${{ env.LG_WEBHOOK_… }}`) reach the receiver.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Client } from "@langchain/langgraph-sdk";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AgentplaneProcess, startAgentplaneProcess } from "../support/agentplane-process.js";
import { RUNS_GRAPHS, sdkClient, waitFor } from "../support/runs-app.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.js";

/** Generous: processes to start and kill, and a job to expire, on a loaded 2-core machine. */
const TIMEOUT = 150_000;

let api: TestApp;
let sdk: Client;
let receiver: WebhookReceiver;
let sql: postgres.Sql;
let dataDir: string;
const workers: AgentplaneProcess[] = [];

/** A worker process executing runs and delivering webhooks, configured as an operator would. */
async function startWorker(): Promise<AgentplaneProcess> {
  const worker = await startAgentplaneProcess({
    AGENTPLANE_ROLE: "worker",
    AGENTPLANE_CONFIG: RUNS_GRAPHS,
    DATABASE_URL: api.databaseUrl,
    AGENTPLANE_DATA_DIR: dataDir,
    AGENTPLANE_WEBHOOK_ALLOW_PRIVATE_ADDRESSES: "true",
    AGENTPLANE_WEBHOOK_TIMEOUT_SECONDS: "2",
    // Retries 3-6 s after a failure: time enough to kill the worker before it retries.
    AGENTPLANE_WEBHOOK_RETRY_DELAY_SECONDS: "3",
    AGENTPLANE_WEBHOOK_HEADERS: JSON.stringify({
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the server's header template syntax
      Authorization: "Bearer ${{ env.LG_WEBHOOK_TOKEN }}",
      "X-Deployment": "agentplane-test",
    }),
    LG_WEBHOOK_TOKEN: "token-from-the-environment",
  });
  workers.push(worker);
  return worker;
}

/** The state of the webhook job of `runId`. */
async function jobState(runId: string): Promise<string | undefined> {
  const [row] = await sql<{ state: string }[]>`
    select state from pgboss.job where name = 'agent.webhook' and data ->> 'runId' = ${runId}`;
  return row?.state;
}

async function kill(worker: AgentplaneProcess): Promise<void> {
  worker.child.kill("SIGKILL");
  expect(await worker.exited).toMatch(/SIGKILL/);
}

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  api = await startTestApp({
    graphConfigPath: RUNS_GRAPHS,
    role: "api",
    webhooks: {
      enabled: true,
      allowedHosts: [],
      allowPrivateAddresses: true,
      headers: {},
      timeoutSeconds: 2,
      maxAttempts: 8,
      retryDelaySeconds: 3,
    },
  });
  sdk = sdkClient(api.baseUrl, api.adminKey);
  sql = postgres(api.databaseUrl, { max: 1, onnotice: () => {} });
  dataDir = await mkdtemp(join(tmpdir(), "agentplane-webhook-worker-"));
}, TIMEOUT);
afterAll(async () => {
  for (const worker of workers) {
    if (worker.child.exitCode === null && worker.child.signalCode === null) {
      worker.child.kill("SIGTERM");
      await worker.exited;
    }
  }
  await sql?.end();
  await api?.stop();
  await receiver?.close();
  await rm(dataDir, { recursive: true, force: true });
}, TIMEOUT);

describe("a worker killed before its run's webhook was delivered", () => {
  it(
    "after a refused first call, another worker delivers it once, with the environment's headers",
    async () => {
      const first = await startWorker();
      receiver.script("/refused-then-killed", [503]);
      const values = await sdk.runs.wait(null, "steps", {
        input: { topic: "kill" },
        webhook: receiver.url("/refused-then-killed"),
      });
      expect(values).toMatchObject({ topic: "kill" });
      const [refused] = await receiver.waitForCalls("/refused-then-killed", 1);
      const runId = refused?.body.run_id as string;
      // The failed call is recorded: the retry is owed in the database, due in a few seconds.
      await waitFor(
        () => jobState(runId),
        (state) => state === "retry",
      );
      await kill(first);
      expect(receiver.calls("/refused-then-killed")).toHaveLength(1);

      await startWorker();
      const calls = await receiver.waitForCalls("/refused-then-killed", 2, 60_000);
      await waitFor(
        () => jobState(runId),
        (state) => state === "completed",
        30_000,
      );
      expect(calls.map((c) => c.answer)).toEqual([503, 200]);
      expect(receiver.calls("/refused-then-killed")).toHaveLength(2);
      expect(calls[1]?.body).toMatchObject({ run_id: runId, status: "success" });
      expect(calls[1]?.headers).toMatchObject({
        authorization: "Bearer token-from-the-environment",
        "x-deployment": "agentplane-test",
      });
    },
    TIMEOUT,
  );

  it(
    "killed in the middle of the call, the webhook is called again by another worker once the job expires",
    async () => {
      const worker = await startWorker();
      // The only other worker process left is the one from the test before: stop it, so this one
      // makes the first call.
      for (const other of workers.filter((w) => w !== worker && w.child.exitCode === null)) {
        other.child.kill("SIGTERM");
        await other.exited;
      }
      receiver.script("/held-then-killed", ["hold"]);
      await sdk.runs.wait(null, "steps", {
        input: { topic: "held" },
        webhook: receiver.url("/held-then-killed"),
      });
      const [held] = await receiver.waitForCalls("/held-then-killed", 1);
      const runId = held?.body.run_id as string;
      expect(await jobState(runId)).toBe("active");
      await kill(worker);

      await startWorker();
      const calls = await receiver.waitForCalls("/held-then-killed", 2, 120_000);
      await waitFor(
        () => jobState(runId),
        (state) => state === "completed",
        30_000,
      );
      expect(calls.map((c) => c.answer)).toEqual(["hold", 200]);
      expect(calls[1]?.body).toMatchObject({ run_id: runId, status: "success" });
    },
    TIMEOUT,
  );
});
