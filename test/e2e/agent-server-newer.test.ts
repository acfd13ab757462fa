/**
 * The newer Agent Server endpoints and fields (issue 25 item 5) through the clients that send them:
 * `GET /threads/{thread_id}/storage`, `Prefer: return=minimal` on PATCH (the SDK 1.15 `returnMinimal`
 * option of `threads.update`), and `feedback_keys` with presigned feedback URLs against our own
 * tracing API, used with plain `fetch` as a browser would.
 */
import { createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ThreadService } from "../../gen/agentplane/agents/v1/thread_service_pb.js";
import { langGraphFailure } from "../support/call-failures.js";
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
