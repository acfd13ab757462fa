/**
 * The newer Agent Server endpoints and fields (issue 25 item 5) through the clients that send them:
 * `GET /threads/{thread_id}/storage`, `Prefer: return=minimal` on PATCH (the SDK 1.15 `returnMinimal`
 * option of `threads.update`), and `feedback_keys` with presigned feedback URLs against our own
 * tracing API, used with plain `fetch` as a browser would; and MCP `tools/call` with `context`
 * through the official MCP SDK client.
 */
import { createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ThreadService } from "../../gen/agentplane/agents/v1/thread_service_pb.js";
import { mcpClient } from "../support/agent-protocols.js";
import { langGraphFailure } from "../support/call-failures.js";
import { langsmithClient } from "../support/langsmith-client.js";
import { type RunsApp, startRunsApp } from "../support/runs-app.js";

let r: RunsApp;
beforeAll(async () => {
  r = await startRunsApp();
});
afterAll(() => r?.t.stop());

const say = (content: string, id: string) => ({ messages: [{ role: "human", content, id }] });

interface StorageUse {
  count: number;
  bytes: number;
}
interface ThreadStorage {
  thread_id: string;
  total_bytes: number;
  checkpoints: StorageUse;
  channel_values: StorageUse & { by_channel: Record<string, { versions: number; bytes: number }> };
  pending_writes: StorageUse;
}

async function storageOf(threadId: string, init: { tenantId?: string } = {}): Promise<Response> {
  return r.t.fetch(`/threads/${threadId}/storage`, init);
}

describe("GET /threads/{thread_id}/storage", () => {
  it("reports the bytes of the thread's checkpoints, channel values and writes, growing with runs", async () => {
    const thread = await r.sdk.threads.create();
    const empty = (await (await storageOf(thread.thread_id)).json()) as ThreadStorage;
    expect(empty).toEqual({
      thread_id: thread.thread_id,
      total_bytes: 0,
      checkpoints: { count: 0, bytes: 0 },
      channel_values: { count: 0, bytes: 0, by_channel: {} },
      pending_writes: { count: 0, bytes: 0 },
    });

    await r.sdk.runs.wait(thread.thread_id, "chat", { input: say("hello", "m1") });
    const once = (await (await storageOf(thread.thread_id)).json()) as ThreadStorage;
    const history = await r.sdk.threads.getHistory(thread.thread_id, { limit: 1000 });
    expect(once.checkpoints.count).toBe(history.length);
    expect(once.checkpoints.bytes).toBeGreaterThan(0);
    expect(once.channel_values.by_channel.messages?.versions).toBeGreaterThan(0);
    const channels = Object.values(once.channel_values.by_channel);
    expect(once.channel_values.count).toBe(channels.reduce((n, c) => n + c.versions, 0));
    expect(once.channel_values.bytes).toBe(channels.reduce((n, c) => n + c.bytes, 0));
    expect(once.total_bytes).toBe(
      once.checkpoints.bytes + once.channel_values.bytes + once.pending_writes.bytes,
    );

    await r.sdk.runs.wait(thread.thread_id, "chat", { input: say("again", "m2") });
    const twice = (await (await storageOf(thread.thread_id)).json()) as ThreadStorage;
    expect(twice.checkpoints.count).toBeGreaterThan(once.checkpoints.count);
    expect(twice.channel_values.by_channel.messages!.bytes).toBeGreaterThan(
      once.channel_values.by_channel.messages!.bytes,
    );

    // The same answer through our Connect client.
    const rpc = createClient(ThreadService, r.t.client().transport);
    const viaRpc = await rpc.getThreadStorage({ threadId: thread.thread_id });
    expect(viaRpc.totalBytes).toBe(twice.total_bytes);
    expect(viaRpc.channelValues?.byChannel.messages?.versions).toBe(
      twice.channel_values.by_channel.messages!.versions,
    );
  });

  it("is 404 for an unknown thread and for another workspace's, 422 for a bad id", async () => {
    const unknown = await storageOf(crypto.randomUUID());
    expect(unknown.status).toBe(404);
    const thread = await r.sdk.threads.create();
    const other = (await (
      await r.t.fetch("/api/v1/workspaces", {
        method: "POST",
        body: JSON.stringify({ display_name: "elsewhere" }),
      })
    ).json()) as { id: string };
    expect((await storageOf(thread.thread_id, { tenantId: other.id })).status).toBe(404);
    expect((await storageOf("not-a-uuid")).status).toBe(422);
  });
});

describe("Prefer: return=minimal on PATCH", () => {
  it("threads.update({returnMinimal: true}) gets 204 with no body, and the update is made", async () => {
    const thread = await r.sdk.threads.create({ metadata: { a: 1 } });
    const answer = await r.sdk.threads.update(thread.thread_id, {
      metadata: { b: 2 },
      returnMinimal: true,
    });
    expect(answer).toBeUndefined();
    expect((await r.sdk.threads.get(thread.thread_id)).metadata).toMatchObject({ a: 1, b: 2 });
    const full = await r.sdk.threads.update(thread.thread_id, { metadata: { c: 3 } });
    expect(full.metadata).toMatchObject({ a: 1, b: 2, c: 3 });
  });

  it("is honoured on assistants and crons too, and applied per RFC 7240", async () => {
    const assistant = await r.sdk.assistants.create({ graphId: "chat" });
    const cron = await r.sdk.crons.create("chat", { schedule: "0 0 1 1 *" });
    for (const path of [`/assistants/${assistant.assistant_id}`, `/runs/crons/${cron.cron_id}`]) {
      const minimal = await r.t.fetch(path, {
        method: "PATCH",
        headers: { prefer: "handling=lenient, return=minimal" },
        body: JSON.stringify({ metadata: { minimal: true } }),
      });
      expect(minimal.status, path).toBe(204);
      expect(minimal.headers.get("preference-applied"), path).toBe("return=minimal");
      expect(await minimal.text(), path).toBe("");
      const read = (await (await r.t.fetch(path)).json()) as { metadata: Record<string, unknown> };
      expect(read.metadata, path).toMatchObject({ minimal: true });
      const representation = await r.t.fetch(path, {
        method: "PATCH",
        headers: { prefer: "return=representation" },
        body: JSON.stringify({ metadata: { minimal: false } }),
      });
      expect(representation.status, path).toBe(200);
      expect(((await representation.json()) as { metadata: object }).metadata, path).toMatchObject({
        minimal: false,
      });
    }
  });

  it("still refuses a bad PATCH with its error", async () => {
    const failure = await langGraphFailure(
      r.sdk.threads.update(crypto.randomUUID(), { metadata: {}, returnMinimal: true }),
    );
    expect(failure.status).toBe(404);
  });
});

describe("feedback_keys and presigned feedback tokens", () => {
  /** Posts feedback to a presigned URL as a browser page would: no API key. */
  const giveFeedback = (url: string, body: object) =>
    fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  it("a run created with feedbackKeys answers __feedback__ URLs on join, which take feedback without a key", async () => {
    const thread = await r.sdk.threads.create();
    const run = await r.sdk.runs.create(thread.thread_id, "chat", {
      input: say("rate me", "f1"),
      feedbackKeys: ["user_liked", "user_disliked"],
    });
    const joined = (await r.sdk.runs.join(thread.thread_id, run.run_id)) as {
      messages: unknown[];
      __feedback__: Record<string, string>;
    };
    expect(joined.messages).toHaveLength(2);
    const urls = joined.__feedback__;
    expect(Object.keys(urls)).toEqual(["user_liked", "user_disliked"]);
    for (const url of Object.values(urls))
      expect(url).toMatch(new RegExp(`^${r.t.baseUrl}/api/v1/feedback/tokens/[0-9a-f-]{36}$`));

    const given = await giveFeedback(urls.user_liked!, {
      score: 1,
      comment: "great",
      metadata: { page: "chat" },
    });
    expect(given.status).toBe(200);
    const { feedback_id } = (await given.json()) as { feedback_id: string };

    const langsmith = langsmithClient(r.t).client;
    const listed = [];
    for await (const item of langsmith.listFeedback({ runIds: [run.run_id] })) listed.push(item);
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({
      id: feedback_id,
      run_id: run.run_id,
      key: "user_liked",
      score: 1,
      comment: "great",
      feedback_source: { type: "app", metadata: { page: "chat" } },
    });
    // A join of the ended run presigns again; the run's tokens are listed for it.
    const again = (await r.sdk.runs.join(thread.thread_id, run.run_id)) as { __feedback__: object };
    expect(Object.keys(again.__feedback__)).toEqual(["user_liked", "user_disliked"]);
    const tokens = [];
    for await (const token of langsmith.listPresignedFeedbackTokens(run.run_id)) tokens.push(token);
    expect(tokens).toHaveLength(4);
  });

  it("POST /runs/wait with feedback_keys answers __feedback__ beside the values", async () => {
    const res = await r.t.fetch("/runs/wait", {
      method: "POST",
      body: JSON.stringify({ assistant_id: "chat", input: say("hi", "w1"), feedback_keys: ["helpful"] }),
    });
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { messages: unknown[]; __feedback__: { helpful: string } };
    expect(answer.messages).toHaveLength(2);
    expect(answer.__feedback__.helpful).toMatch(/\/api\/v1\/feedback\/tokens\//);
    // Without feedback_keys the answer has no __feedback__.
    const plain = await r.sdk.runs.wait(null, "chat", { input: say("hi", "w2") });
    expect(plain).not.toHaveProperty("__feedback__");
  });

  it("the langsmith SDK's createPresignedFeedbackToken works against our own tracing API", async () => {
    const { client } = langsmithClient(r.t);
    const runId = crypto.randomUUID();
    const token = await client.createPresignedFeedbackToken(runId, "quality", {
      expiration: { hours: 1 },
      feedbackConfig: { type: "continuous", min: 0, max: 1 },
    });
    expect(token.url).toBe(`${r.t.baseUrl}/api/v1/feedback/tokens/${token.id}`);
    const inAnHour = Date.now() + 60 * 60 * 1000;
    expect(Math.abs(new Date(token.expires_at).getTime() - inAnHour)).toBeLessThan(60_000);

    const tooHigh = await giveFeedback(token.url, { score: 2 });
    expect(tooHigh.status).toBe(422);
    expect(((await tooHigh.json()) as { detail: string }).detail).toContain("maximum 1");
    expect((await giveFeedback(token.url, { score: 0.5 })).status).toBe(200);
    const feedback = [];
    for await (const item of client.listFeedback({ runIds: [runId] })) feedback.push(item);
    expect(feedback.map((f) => [f.key, f.score])).toEqual([["quality", 0.5]]);
  });

  it("refuses an unknown token, bad lifetimes and bad configs", async () => {
    expect(
      (await giveFeedback(`${r.t.baseUrl}/api/v1/feedback/tokens/${crypto.randomUUID()}`, { score: 1 }))
        .status,
    ).toBe(404);
    expect((await giveFeedback(`${r.t.baseUrl}/api/v1/feedback/tokens/nope`, { score: 1 })).status).toBe(422);
    const runId = crypto.randomUUID();
    const cases: [object, string][] = [
      [{ run_id: runId, feedback_key: "k", expires_in: { minutes: 0 } }, "expire in the future"],
      [{ run_id: runId, feedback_key: "k", expires_in: { days: 31 } }, "at most 30 days"],
      [{ run_id: runId, feedback_key: "k", expires_at: "yesterday" }, "RFC 3339"],
      [{ run_id: runId, feedback_key: "" }, "feedback key"],
      [{ run_id: "x", feedback_key: "k" }, "run_id"],
      [{ run_id: runId, feedback_key: "k", feedback_config: { type: "stars" } }, "feedback_config.type"],
    ];
    for (const [body, detail] of cases) {
      const res = await r.t.fetch("/api/v1/feedback/tokens", { method: "POST", body: JSON.stringify(body) });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(((await res.json()) as { detail: string }).detail, JSON.stringify(body)).toContain(detail);
    }
    // Presigning needs an API key; redeeming does not.
    const anonymous = await fetch(`${r.t.baseUrl}/api/v1/feedback/tokens`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ run_id: runId, feedback_key: "k" }),
    });
    expect(anonymous.status).toBe(401);
  });
});

describe("MCP tools/call with context", () => {
  it("hands the call's context to the run, as the graph's runtime context", async () => {
    const client = await mcpClient(r.t.baseUrl, r.t.adminKey);
    try {
      const params = { name: "echo", arguments: {}, context: { user_id: "u1", tier: "gold" } };
      const result = await client.callTool(params as Parameters<typeof client.callTool>[0]);
      expect(result.isError).toBeFalsy();
      expect((result.structuredContent as { context: unknown }).context).toEqual({
        user_id: "u1",
        tier: "gold",
      });
      const plain = await client.callTool({ name: "echo", arguments: {} });
      expect((plain.structuredContent as { context: unknown }).context).toEqual({});
      const bad = { name: "echo", arguments: {}, context: ["not", "an", "object"] };
      await expect(client.callTool(bad as unknown as Parameters<typeof client.callTool>[0])).rejects.toThrow(
        /context must be a JSON object/,
      );
    } finally {
      await client.close();
    }
  });
});
