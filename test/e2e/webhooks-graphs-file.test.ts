/**
 * The graphs file's `webhooks` section and relative ("/…") webhooks, through the official
 * `@langchain/langgraph-sdk`: each `webhooks.url` key refuses (422, naming the key) or accepts at run
 * and cron creation; headers from the file, their `${{ env.NAME }}` templates filled in from the
 * environment at start, arrive at a receiver (the environment's setting winning on a shared name)
 * with only `allowed_fields` in the body; a template reading an unset variable stops start-up; and a
 * relative webhook reaches a custom `http.app` route once per run, with credentials of the run's
 * workspace.
 */
import { fileURLToPath } from "node:url";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_WEBHOOK_SETTINGS, type WebhookSettings } from "../../server/config.js";
import { createLogger } from "../../server/logger.js";
import { GraphConfigError } from "../../server/runtime/graph-config.js";
import { loadGraphRegistry } from "../../server/runtime/graph-registry.js";
import { sdkClient, waitFor } from "../support/runs-app.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.js";

const fixture = (name: string) =>
  fileURLToPath(new URL(`../fixtures/webhooks-graphs-file/${name}`, import.meta.url));

/** Loopback receivers allowed (the test's receiver); quick retries, few attempts. */
const TEST_WEBHOOKS: WebhookSettings = {
  ...DEFAULT_WEBHOOK_SETTINGS,
  allowPrivateAddresses: true,
  timeoutSeconds: 5,
  maxAttempts: 2,
  retryDelaySeconds: 1,
};

/** Waits until every webhook owed on `databaseUrl` was delivered or given up on. */
async function settled(databaseUrl: string): Promise<void> {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  try {
    await waitFor(
      async () => {
        const [row] = await sql<{ n: number }[]>`
          select count(*)::int as n from pgboss.job
          where name = 'agent.webhook' and state in ('created', 'retry', 'active')`;
        return row?.n ?? 0;
      },
      (n) => n === 0,
      60_000,
    );
  } finally {
    await sql.end();
  }
}

describe("a graphs file with webhook headers and a custom app", () => {
  let t: TestApp;
  let receiver: WebhookReceiver;
  const saved = { ...process.env };
  beforeAll(async () => {
    process.env.AP_TEST_HOOK_TOKEN = "tok-from-env";
    process.env.AP_TEST_HOOK_A = "left";
    process.env.AP_TEST_HOOK_B = "right";
    receiver = await startWebhookReceiver();
    // The deployment's own header setting names X-Static too, and wins over the file's.
    t = await startTestApp({
      graphConfigPath: fixture("langgraph.json"),
      webhooks: { ...TEST_WEBHOOKS, headers: { "X-Static": "from-environment" } },
    });
  });
  afterAll(async () => {
    await t?.stop();
    await receiver?.close();
    for (const name of ["AP_TEST_HOOK_TOKEN", "AP_TEST_HOOK_A", "AP_TEST_HOOK_B"])
      if (saved[name] === undefined) delete process.env[name];
  });

  it("sends the file's headers, templates filled from the environment, and only the allowed fields", async () => {
    const sdk = sdkClient(t.baseUrl, t.adminKey);
    const thread = await sdk.threads.create();
    const run = await sdk.runs.wait(thread.thread_id, "steps", {
      input: { topic: "headers" },
      webhook: receiver.url("/file-headers"),
    });
    expect(run).toBeDefined();
    const [call] = await receiver.waitForCalls("/file-headers", 1, 30_000);
    expect(call?.headers).toMatchObject({
      authorization: "Bearer tok-from-env",
      "x-pair": "left:right",
      "x-static": "from-environment",
    });
    expect(Object.keys(call?.body ?? {}).sort()).toEqual([
      "run_id",
      "status",
      "thread_id",
      "values",
      "webhook_sent_at",
    ]);
    expect(call?.body).toMatchObject({ thread_id: thread.thread_id, status: "success" });
  });

  it("delivers a relative webhook to the custom app's route once per run, with the run's workspace credentials", async () => {
    const sdk = sdkClient(t.baseUrl, t.adminKey);
    const thread = await sdk.threads.create();
    const first = await sdk.runs.create(thread.thread_id, "steps", {
      input: { topic: "one" },
      webhook: "/sink/hook?tag=relative",
    });
    await sdk.runs.join(thread.thread_id, first.run_id);
    const other = await sdk.threads.create();
    const second = await sdk.runs.create(other.thread_id, "steps", {
      input: { topic: "two" },
      webhook: "/sink/hook?tag=relative",
    });
    await sdk.runs.join(other.thread_id, second.run_id);
    await settled(t.databaseUrl);

    const calls = (await (await fetch(`${t.baseUrl}/sink/calls`)).json()) as {
      query: string;
      body: { run_id: string; thread_id: string; status: string };
      tenant: string | null;
      runTokenKey: boolean;
      authorization: string | null;
      xStatic: string | null;
      threadRead: number;
    }[];
    const relative = calls.filter((c) => c.query === "?tag=relative");
    expect(relative).toHaveLength(2);
    expect(relative.map((c) => c.body.run_id).sort()).toEqual([first.run_id, second.run_id].sort());
    for (const call of relative) {
      expect(call).toMatchObject({
        query: "?tag=relative",
        runTokenKey: true,
        // Credentials configured for outside receivers are not sent to the server's own routes.
        authorization: null,
        xStatic: "from-environment",
        threadRead: 200,
      });
      expect(call.body.status).toBe("success");
      expect(call.tenant).toMatch(/^[0-9a-f-]{36}$/);
    }
    // The call's token was deleted once the call ended.
    const sql = postgres(t.databaseUrl, { max: 1, onnotice: () => {} });
    try {
      const [row] = await sql<{ n: number }[]>`
        select count(*)::int as n from agent_run_tokens where purpose = 'webhook'`;
      expect(row?.n).toBe(0);
    } finally {
      await sql.end();
    }
  });

  it("retries a relative webhook its route answers with a 5xx, as any other", async () => {
    const sdk = sdkClient(t.baseUrl, t.adminKey);
    const thread = await sdk.threads.create();
    const run = await sdk.runs.create(thread.thread_id, "steps", {
      input: { topic: "flaky" },
      webhook: "/sink/flaky",
    });
    await sdk.runs.join(thread.thread_id, run.run_id);
    await settled(t.databaseUrl);
    const calls = (await (await fetch(`${t.baseUrl}/sink/calls`)).json()) as {
      query: string;
      body: { run_id: string };
      runTokenKey: boolean;
    }[];
    const flaky = calls.filter((c) => c.query === "flaky" && c.body.run_id === run.run_id);
    expect(flaky).toHaveLength(2);
    expect(flaky.every((c) => c.runTokenKey)).toBe(true);
  });

  it("refuses a relative webhook that is not a path of this server (422)", async () => {
    const sdk = sdkClient(t.baseUrl, t.adminKey);
    for (const webhook of ["//evil.example/hook", "/\\evil.example/hook", "/with space"])
      await expect(sdk.runs.wait(null, "steps", { input: {}, webhook })).rejects.toMatchObject({
        status: 422,
        message: expect.stringMatching(/is not a path of this server/),
      });
  });
});

describe("a graphs file with a strict webhooks.url policy", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      graphConfigPath: fixture("strict.json"),
      webhooks: { ...TEST_WEBHOOKS, maxAttempts: 1 },
    });
  });
  afterAll(async () => {
    await t?.stop();
  });

  it.each([
    [
      "require_https",
      "http://localhost:8443/hook",
      "webhook must be an https:// URL on this server (webhooks.url.require_https in the graphs file)",
    ],
    [
      "allowed_ports",
      "https://localhost/hook",
      "webhook port 443 is not allowed on this server: webhooks may only use port 8443 (webhooks.url.allowed_ports in the graphs file)",
    ],
    [
      "allowed_domains",
      "https://127.0.0.1:8443/hook",
      "webhook host 127.0.0.1 is not allowed on this server: webhooks may only reach localhost (webhooks.url.allowed_domains in the graphs file)",
    ],
    [
      "max_url_length",
      "https://localhost:8443/a-rather-long-path/to/a/hook",
      "webhook is 51 characters long; this server accepts at most 48 (webhooks.url.max_url_length in the graphs file)",
    ],
    [
      "disable_loopback",
      "/sink/hook",
      'webhook is a path of this server, and relative ("/…") webhooks are disabled here (webhooks.url.disable_loopback in the graphs file)',
    ],
  ])("%s refuses %s at run creation (422)", async (_key, webhook, detail) => {
    const sdk = sdkClient(t.baseUrl, t.adminKey);
    await expect(sdk.runs.create(null, "steps", { input: {}, webhook })).rejects.toMatchObject({
      status: 422,
      // The SDK's message quotes the JSON answer, `{"detail": …}`, as it came.
      message: expect.stringContaining(JSON.stringify(detail).slice(1, -1)),
    });
  });

  it("accepts a webhook that meets every key, and refuses a cron whose runs would not", async () => {
    const sdk = sdkClient(t.baseUrl, t.adminKey);
    const run = await sdk.runs.create(null, "steps", {
      input: { topic: "ok" },
      webhook: "https://localhost:8443/hook",
    });
    expect(run.run_id).toMatch(/^[0-9a-f-]{36}$/);
    await expect(
      sdk.crons.create("steps", { schedule: "0 * * * *", webhook: "/sink/hook" }),
    ).rejects.toMatchObject({ status: 422, message: expect.stringMatching(/disable_loopback/) });
    await expect(
      sdk.crons.create("steps", { schedule: "0 * * * *", webhook: "http://localhost:8443/hook" }),
    ).rejects.toMatchObject({ status: 422, message: expect.stringMatching(/require_https/) });
  });
});

describe("start-up", () => {
  it("stops when a header template reads a variable that is not set, naming the header", async () => {
    const attempt = loadGraphRegistry({
      configPath: fixture("unset-variable.json"),
      cwd: process.cwd(),
      log: createLogger("error"),
      schemaTimeoutMs: 30_000,
    });
    await expect(attempt).rejects.toBeInstanceOf(GraphConfigError);
    await expect(attempt).rejects.toMatchObject({
      problems: [
        "webhooks.headers: header X-Token reads LG_WEBHOOK_AGENTPLANE_TEST_NEVER_SET, which is not set",
      ],
    });
  });
});
