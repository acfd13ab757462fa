/**
 * Run webhooks through the official `@langchain/langgraph-sdk`: a run's `webhook` receives the run
 * once when it ends (create, wait, stream, stateless, failed, cancelled; many runs on two servers),
 * with the configured headers; a 5xx or a timeout is retried, a 4xx is not, attempts are bounded;
 * URLs the SSRF policy or the allow list refuse are a 422 at run creation; a server with webhooks
 * disabled calls nothing.
 */
import type { Client } from "@langchain/langgraph-sdk";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_WEBHOOK_SETTINGS, type WebhookSettings } from "../../server/config.js";
import { collect, type RunsApp, startRunsApp, waitFor } from "../support/runs-app.js";
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.js";

/** Loopback receivers allowed; short timeout and retry delay so retries happen within the test. */
const TEST_WEBHOOKS: WebhookSettings = {
  ...DEFAULT_WEBHOOK_SETTINGS,
  allowPrivateAddresses: true,
  headers: { "X-Static": "static-value", Authorization: "Bearer resolved-token" },
  timeoutSeconds: 1,
  maxAttempts: 3,
  retryDelaySeconds: 1,
};

let app: RunsApp;
let sdk: Client;
let receiver: WebhookReceiver;
let sql: postgres.Sql;

/** The webhook jobs not yet finished (created, retry, active). */
async function outstandingWebhookJobs(): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from pgboss.job
    where name = 'agent.webhook' and state in ('created', 'retry', 'active')`;
  return row?.n ?? 0;
}

/** Waits until every webhook owed so far was delivered or given up on. */
async function settled(): Promise<void> {
  await waitFor(outstandingWebhookJobs, (n) => n === 0, 30_000);
}

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  app = await startRunsApp({ webhooks: TEST_WEBHOOKS });
  sdk = app.sdk;
  sql = postgres(app.t.databaseUrl, { max: 1, onnotice: () => {} });
});
afterAll(async () => {
  await sql?.end();
  await app?.t.stop();
  await receiver?.close();
});

const FINAL = (topic: string) => ({
  topic,
  text: `published: draft about ${topic}`,
  log: ["draft", "publish"],
});

describe("delivery", () => {
  it("every kind of run calls its webhook once with the run, its values and the configured headers", async () => {
    const thread = await sdk.threads.create();
    const created = await sdk.runs.create(thread.thread_id, "steps", {
      input: { topic: "create" },
      metadata: { origin: "test" },
      webhook: receiver.url("/each/create"),
    });
    await sdk.runs.join(thread.thread_id, created.run_id);
    // A thread each: the graph's log accumulates over a thread's runs.
    const waited = await sdk.threads.create();
    const streamed = await sdk.threads.create();
    await sdk.runs.wait(waited.thread_id, "steps", {
      input: { topic: "wait" },
      webhook: receiver.url("/each/wait"),
    });
    await collect(
      sdk.runs.stream(streamed.thread_id, "steps", {
        input: { topic: "stream" },
        webhook: receiver.url("/each/stream"),
      }),
    );
    await sdk.runs.wait(null, "steps", {
      input: { topic: "stateless" },
      webhook: receiver.url("/each/stateless"),
    });
    await collect(
      sdk.runs.stream(null, "steps", {
        input: { topic: "stateless-stream" },
        webhook: receiver.url("/each/stateless-stream"),
      }),
    );
    await settled();

    const paths = ["create", "wait", "stream", "stateless", "stateless-stream"].map((p) => `/each/${p}`);
    for (const path of paths) expect(receiver.calls(path)).toHaveLength(1);
    const [call] = receiver.calls("/each/create");
    expect(call?.headers).toMatchObject({
      "content-type": "application/json",
      "x-static": "static-value",
      authorization: "Bearer resolved-token",
    });
    const body = call?.body;
    expect(body).toMatchObject({
      run_id: created.run_id,
      thread_id: thread.thread_id,
      assistant_id: created.assistant_id,
      status: "success",
      metadata: { origin: "test" },
      multitask_strategy: "enqueue",
      kwargs: expect.objectContaining({ webhook: receiver.url("/each/create") }),
      values: FINAL("create"),
    });
    expect(body).not.toHaveProperty("error");
    const started = Date.parse(body.run_started_at);
    const ended = Date.parse(body.run_ended_at);
    const sent = Date.parse(body.webhook_sent_at);
    expect(Date.parse(body.created_at)).toBeLessThanOrEqual(started);
    expect(started).toBeLessThanOrEqual(ended);
    expect(ended).toBeLessThanOrEqual(sent);

    const run = await sdk.runs.get(thread.thread_id, created.run_id);
    expect(body.created_at).toBe(run.created_at);
    expect(receiver.calls("/each/wait")[0]?.body.values).toEqual(FINAL("wait"));
    expect(receiver.calls("/each/stream")[0]?.body.values).toEqual(FINAL("stream"));
    const stateless = receiver.calls("/each/stateless")[0]?.body;
    expect(stateless).toMatchObject({ status: "success", values: FINAL("stateless") });
    expect(stateless.thread_id).not.toBe(thread.thread_id);
    expect(receiver.calls("/each/stream")[0]?.body.thread_id).toBe(streamed.thread_id);
  });

  it("many runs on two servers sharing the database: each webhook is called exactly once", async () => {
    const second = await startRunsApp({
      databaseUrl: app.t.databaseUrl,
      bootstrapApiKey: app.t.adminKey,
      webhooks: TEST_WEBHOOKS,
    });
    try {
      const count = 24;
      const runs = await Promise.all(
        Array.from({ length: count }, (_, i) =>
          (i % 2 === 0 ? sdk : second.sdk).runs.create(null, "steps", {
            input: { topic: `many-${i}` },
            webhook: receiver.url(`/many/${i}`),
          }),
        ),
      );
      await Promise.all(runs.map((_, i) => receiver.waitForCalls(`/many/${i}`, 1)));
      await settled();
      for (let i = 0; i < count; i++) {
        const calls = receiver.calls(`/many/${i}`);
        expect(calls).toHaveLength(1);
        expect(calls[0]?.body).toMatchObject({ run_id: runs[i]?.run_id, values: FINAL(`many-${i}`) });
      }
    } finally {
      await second.t.stop();
    }
  });

  it("a failed run's webhook carries status error and the error message", async () => {
    const thread = await sdk.threads.create();
    await sdk.runs.wait(thread.thread_id, "failing", {
      input: {},
      raiseError: false,
      webhook: receiver.url("/failed"),
    });
    const [call] = await receiver.waitForCalls("/failed", 1);
    expect(call?.body).toMatchObject({ thread_id: thread.thread_id, status: "error", error: "Boo!" });
  });

  it("a cancelled run's webhook says interrupted, whether it was running or still pending", async () => {
    const thread = await sdk.threads.create();
    const running = await sdk.runs.create(thread.thread_id, "sleepy", {
      input: { sleep_ms: 30_000 },
      webhook: receiver.url("/cancel/running"),
    });
    const pending = await sdk.runs.create(thread.thread_id, "sleepy", {
      input: { sleep_ms: 1 },
      webhook: receiver.url("/cancel/pending"),
    });
    await waitFor(
      () => sdk.runs.get(thread.thread_id, running.run_id),
      (r) => r.status === "running",
    );
    await sdk.runs.cancel(thread.thread_id, pending.run_id, true);
    await sdk.runs.cancel(thread.thread_id, running.run_id, true);
    const [stopped] = await receiver.waitForCalls("/cancel/running", 1);
    const [skipped] = await receiver.waitForCalls("/cancel/pending", 1);
    expect(stopped?.body).toMatchObject({ run_id: running.run_id, status: "interrupted" });
    expect(skipped?.body).toMatchObject({
      run_id: pending.run_id,
      status: "interrupted",
      run_started_at: null,
    });
    expect(skipped?.body.run_ended_at).toEqual(expect.any(String));
  });

  it("a 5xx answer is retried until the receiver takes the call", async () => {
    receiver.script("/flaky", [503, 502]);
    const run = await sdk.runs.wait(null, "steps", {
      input: { topic: "flaky" },
      webhook: receiver.url("/flaky"),
    });
    expect(run).toEqual(FINAL("flaky"));
    const calls = await receiver.waitForCalls("/flaky", 3);
    await settled();
    expect(calls.map((c) => c.answer)).toEqual([503, 502, 200]);
    expect(new Set(calls.map((c) => c.body.run_id)).size).toBe(1);
    // Each call stamps its own send time, later each time (the backoff waits in between).
    const sentAt = calls.map((c) => Date.parse(c.body.webhook_sent_at));
    expect(sentAt[1]).toBeGreaterThan(sentAt[0] as number);
    expect(sentAt[2]).toBeGreaterThan(sentAt[1] as number);
    expect(receiver.calls("/flaky")).toHaveLength(3);
  });

  it("a receiver that does not answer within the timeout is called again", async () => {
    receiver.script("/slow", ["hold"]);
    await sdk.runs.wait(null, "steps", { input: { topic: "slow" }, webhook: receiver.url("/slow") });
    const calls = await receiver.waitForCalls("/slow", 2);
    await settled();
    expect(calls.map((c) => c.answer)).toEqual(["hold", 200]);
    expect(receiver.calls("/slow")).toHaveLength(2);
  });

  it("a 4xx or 3xx answer is final, and a receiver failing every attempt is called maxAttempts times", async () => {
    receiver.script("/gone", [410]);
    receiver.script("/moved", [302]);
    receiver.script("/down", [500, 500, 500, 500]);
    await sdk.runs.wait(null, "steps", { input: { topic: "gone" }, webhook: receiver.url("/gone") });
    await sdk.runs.wait(null, "steps", { input: { topic: "moved" }, webhook: receiver.url("/moved") });
    await sdk.runs.wait(null, "steps", { input: { topic: "down" }, webhook: receiver.url("/down") });
    await receiver.waitForCalls("/down", TEST_WEBHOOKS.maxAttempts);
    await settled();
    expect(receiver.calls("/gone").map((c) => c.answer)).toEqual([410]);
    expect(receiver.calls("/moved").map((c) => c.answer)).toEqual([302]);
    expect(receiver.calls("/down").map((c) => c.answer)).toEqual([500, 500, 500]);
    const states = await sql<{ state: string; retry_count: number }[]>`
      select state, retry_count from pgboss.job
      where name = 'agent.webhook' and data ->> 'url' = ${receiver.url("/down")}`;
    expect(states).toEqual([{ state: "failed", retry_count: 2 }]);
  });
});

describe("refused webhooks", () => {
  // Two more servers on the same database: the defaults (no private addresses), and the defaults
  // with an allow list.
  let defaults: RunsApp;
  let strict: RunsApp;
  beforeAll(async () => {
    const shared = { databaseUrl: app.t.databaseUrl, bootstrapApiKey: app.t.adminKey };
    defaults = await startRunsApp({ ...shared, webhooks: DEFAULT_WEBHOOK_SETTINGS });
    strict = await startRunsApp({
      ...shared,
      webhooks: { ...DEFAULT_WEBHOOK_SETTINGS, allowedHosts: ["hooks.example.com", "*.hooks.test"] },
    });
  });
  afterAll(async () => {
    await strict?.t.stop();
    await defaults?.t.stop();
  });

  /** Creates a run with `webhook` through REST and answers the status and detail. */
  async function create(target: RunsApp, webhook: string, path = "/runs/wait") {
    const res = await target.t.fetch(path, {
      method: "POST",
      body: JSON.stringify({ assistant_id: "steps", input: { topic: "x" }, webhook }),
    });
    return { status: res.status, detail: ((await res.json()) as { detail?: string }).detail };
  }

  it.each([
    [
      "http://127.0.0.1:9/hook",
      /^webhook refused: 127\.0\.0\.1 is a loopback or private-network address; a server admin can allow these with AGENTPLANE_WEBHOOK_ALLOW_PRIVATE_ADDRESSES=true$/,
    ],
    ["http://10.1.2.3/hook", /10\.1\.2\.3 is a loopback or private-network address/],
    ["http://[::1]:8080/hook", /\[::1\] is a loopback or private-network address/],
    [
      "http://localhost:9/hook",
      /^webhook refused: localhost resolves to .* loopback or private-network address/,
    ],
  ])("a private or loopback webhook %s is a 422 by default", async (webhook, detail) => {
    const got = await create(defaults, webhook);
    expect(got.status).toBe(422);
    expect(got.detail).toMatch(detail);
  });

  it("a cron whose runs would name a refused webhook is a 422 at create and update, and nothing changes", async () => {
    const refused = { webhook: "http://10.1.2.3/hook" };
    const created = await defaults.t.fetch("/runs/crons", {
      method: "POST",
      body: JSON.stringify({ assistant_id: "steps", schedule: "0 * * * *", ...refused }),
    });
    expect(created.status).toBe(422);
    expect(((await created.json()) as { detail: string }).detail).toMatch(
      /10\.1\.2\.3 is a loopback or private/,
    );
    const cron = await defaults.sdk.crons.create("steps", { schedule: "0 * * * *" });
    const updated = await defaults.t.fetch(`/runs/crons/${cron.cron_id}`, {
      method: "PATCH",
      body: JSON.stringify(refused),
    });
    expect(updated.status).toBe(422);
    const stored = (await (await defaults.t.fetch(`/runs/crons/${cron.cron_id}`)).json()) as {
      payload: Record<string, unknown>;
    };
    expect(stored.payload.webhook ?? null).toBeNull();
    await defaults.sdk.crons.delete(cron.cron_id);
  });

  it("link-local addresses (cloud metadata) are refused even where private addresses are allowed", async () => {
    const got = await create(app, "http://169.254.169.254/latest/meta-data");
    expect(got).toEqual({
      status: 422,
      detail:
        "webhook refused: 169.254.169.254 is a link-local, unspecified, multicast or reserved address, which the server may never reach",
    });
  });

  it("hosts off the allow list, names that do not resolve, malformed relative and non-http URLs are a 422", async () => {
    expect(await create(strict, "https://evil.example.net/hook")).toEqual({
      status: 422,
      detail:
        "webhook host evil.example.net is not allowed on this server: webhooks may only reach hooks.example.com, *.hooks.test",
    });
    expect(await create(strict, "https://hooks.example.com.evil.net/hook")).toMatchObject({ status: 422 });
    // On the list, but .test names resolve nowhere.
    expect(await create(strict, "https://a.hooks.test/hook")).toEqual({
      status: 422,
      detail: expect.stringMatching(
        /^webhook host a\.hooks\.test does not resolve \(ENOTFOUND\): check the URL$/,
      ),
    });
    expect(await create(strict, "//relative/hook")).toEqual({
      status: 422,
      detail:
        'webhook "//relative/hook" is not a path of this server: a relative webhook starts with a single "/" and has no spaces, backslashes or characters outside printable ASCII (percent-encode them)',
    });
    expect(await create(strict, "ftp://hooks.example.com/x")).toEqual({
      status: 422,
      detail:
        'webhook must be an http:// or https:// URL, or a path of this server starting with "/", of at most 65,536 characters',
    });
  });

  it("every run-creating endpoint refuses, through the SDK, and no run is left behind", async () => {
    const client = defaults.sdk;
    const thread = await client.threads.create();
    const webhook = "http://127.0.0.1:9/hook";
    const attempts = [
      () => client.runs.create(thread.thread_id, "steps", { input: {}, webhook }),
      () => client.runs.wait(thread.thread_id, "steps", { input: {}, webhook }),
      () => collect(client.runs.stream(thread.thread_id, "steps", { input: {}, webhook })),
      () => client.runs.create(null, "steps", { input: {}, webhook }),
      () => client.runs.wait(null, "steps", { input: {}, webhook }),
      () => collect(client.runs.stream(null, "steps", { input: {}, webhook })),
    ];
    for (const attempt of attempts)
      await expect(attempt()).rejects.toMatchObject({
        status: 422,
        message: expect.stringMatching(/webhook/),
      });
    expect(await client.runs.list(thread.thread_id)).toEqual([]);
    expect((await client.threads.get(thread.thread_id)).status).toBe("idle");
  });
});

describe("disabled", () => {
  it("a server with webhooks disabled accepts the run and calls nothing", async () => {
    const off = await startRunsApp({ webhooks: { ...TEST_WEBHOOKS, enabled: false } });
    const offSql = postgres(off.t.databaseUrl, { max: 1, onnotice: () => {} });
    try {
      const values = await off.sdk.runs.wait(null, "steps", {
        input: { topic: "off" },
        webhook: receiver.url("/off"),
      });
      expect(values).toEqual(FINAL("off"));
      const [jobs] = await offSql<{ n: number }[]>`
        select count(*)::int as n from pgboss.job where name = 'agent.webhook'`;
      expect(jobs?.n).toBe(0);
      expect(receiver.calls("/off")).toEqual([]);
    } finally {
      await offSql.end();
      await off.t.stop();
    }
  });
});
