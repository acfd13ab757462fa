/**
 * Runs and their streams within workspaces, through the official `@langchain/langgraph-sdk`: a
 * viewer may read runs, join them and their streams but not create or cancel them; another
 * workspace sees none of them (404), and its bulk cancel leaves them alone.
 */
import { Client, type Run } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { langGraphFailure } from "../support/call-failures.js";
import { collect, type RunsApp, startRunsApp, waitFor } from "../support/runs-app.js";

let app: RunsApp;
let sdk: Client;
let viewer: Client;
let viewerKey = "";
let other: Client;
/** A finished resumable run of the default workspace. */
let done: Run;

/** A client for `apiKey`, in workspace `tenantId` when given. */
function client(apiKey: string, tenantId?: string): Client {
  return new Client({
    apiUrl: app.t.baseUrl,
    apiKey,
    ...(tenantId ? { defaultHeaders: { "x-tenant-id": tenantId } } : {}),
    callerOptions: { maxRetries: 0 },
  });
}

beforeAll(async () => {
  app = await startRunsApp();
  sdk = app.sdk;
  const admin = app.t.client();
  const workspaceId = (await admin.iam.workspaces.getCurrentWorkspace({})).id;
  viewerKey = (
    await admin.iam.apiKeys.createApiKey({ kind: "service", workspaceIds: [workspaceId], role: "viewer" })
  ).key;
  viewer = client(viewerKey);
  const two = (await admin.iam.workspaces.createWorkspace({ displayName: "Two" })).id;
  other = client(app.t.adminKey, two);
  const thread = await sdk.threads.create();
  done = await sdk.runs.create(thread.thread_id, "steps", {
    input: { topic: "mine" },
    streamResumable: true,
  });
  await sdk.runs.join(thread.thread_id, done.run_id);
});
afterAll(async () => {
  await app?.t.stop();
});

describe("a viewer", () => {
  it("reads, lists and joins runs and their streams", async () => {
    expect((await viewer.runs.get(done.thread_id, done.run_id)).status).toBe("success");
    expect((await viewer.runs.list(done.thread_id)).map((r) => r.run_id)).toEqual([done.run_id]);
    expect(await viewer.runs.join(done.thread_id, done.run_id)).toMatchObject({
      text: "published: draft about mine",
    });
    const replay = await collect(viewer.runs.joinStream(done.thread_id, done.run_id, { lastEventId: "-1" }));
    expect(replay[0]).toMatchObject({ event: "metadata", data: { run_id: done.run_id } });
  });

  it("may not create, stream, wait, cancel or delete runs (403)", async () => {
    const thread = await sdk.threads.create();
    const pending = await sdk.runs.create(thread.thread_id, "steps", {
      input: { topic: "x" },
      afterSeconds: 3_600,
    });
    const calls: [string, () => Promise<unknown>][] = [
      ["create", () => viewer.runs.create(thread.thread_id, "steps", { input: { topic: "v" } })],
      ["wait", () => viewer.runs.wait(null, "steps", { input: { topic: "v" } })],
      ["stream", () => collect(viewer.runs.stream(thread.thread_id, "steps", { input: { topic: "v" } }))],
      ["batch", () => viewerFetch("/runs/batch", [{ assistant_id: "steps", input: { topic: "v" } }])],
      ["cancel", () => viewer.runs.cancel(thread.thread_id, pending.run_id)],
      ["cancelMany", () => viewer.runs.cancelMany({ status: "pending" })],
      ["delete", () => viewer.runs.delete(done.thread_id, done.run_id)],
    ];
    for (const [name, call] of calls) expect((await failure(name, call)).status, name).toBe(403);
    expect((await sdk.runs.get(thread.thread_id, pending.run_id)).status).toBe("pending");
    expect(await sdk.runs.list(thread.thread_id)).toHaveLength(1);
    await sdk.runs.cancel(thread.thread_id, pending.run_id, true);
  });
});

describe("another workspace", () => {
  it("sees none of the runs, threads or streams (404)", async () => {
    const calls: [string, () => Promise<unknown>][] = [
      ["get", () => other.runs.get(done.thread_id, done.run_id)],
      ["list", () => other.runs.list(done.thread_id)],
      ["join", () => other.runs.join(done.thread_id, done.run_id)],
      [
        "joinStream",
        () => collect(other.runs.joinStream(done.thread_id, done.run_id, { lastEventId: "-1" })),
      ],
      ["cancel", () => other.runs.cancel(done.thread_id, done.run_id)],
      ["delete", () => other.runs.delete(done.thread_id, done.run_id)],
      ["create on the thread", () => other.runs.create(done.thread_id, "steps", { input: { topic: "o" } })],
    ];
    for (const [name, call] of calls) expect((await failure(name, call)).status, name).toBe(404);
    const threadStream = await fetch(`${app.t.baseUrl}/threads/${done.thread_id}/stream`, {
      headers: { "x-api-key": app.t.adminKey, "x-tenant-id": (await otherWorkspaceId()) ?? "" },
    });
    expect(threadStream.status).toBe(404);
    await threadStream.body?.cancel();
  });

  it("its bulk cancel by status leaves this workspace's runs alone", async () => {
    const thread = await sdk.threads.create();
    const pending = await sdk.runs.create(thread.thread_id, "steps", {
      input: { topic: "y" },
      afterSeconds: 3_600,
    });
    await other.runs.cancelMany({ status: "all" });
    expect((await sdk.runs.get(thread.thread_id, pending.run_id)).status).toBe("pending");
    await sdk.runs.cancelMany({ status: "pending" });
    await waitFor(
      () => sdk.runs.get(thread.thread_id, pending.run_id),
      (r) => r.status === "interrupted",
    );
  });

  it("runs its own graphs on its own threads", async () => {
    const thread = await other.threads.create();
    expect(await other.runs.wait(thread.thread_id, "steps", { input: { topic: "theirs" } })).toMatchObject({
      text: "published: draft about theirs",
    });
    expect((await langGraphFailure(sdk.runs.list(thread.thread_id))).status).toBe(404);
  });
});

/** How `call` failed; names the call when it did not. */
function failure(name: string, call: () => Promise<unknown>) {
  return langGraphFailure(call()).catch((error: Error) => {
    throw new Error(`${name}: ${error.message}`);
  });
}

/** POSTs `body` to `path` with the viewer's key; throws like the SDK on a non-2xx answer. */
async function viewerFetch(path: string, body: unknown): Promise<unknown> {
  const res = await app.t.fetch(path, { method: "POST", apiKey: viewerKey, body: JSON.stringify(body) });
  const text = await res.text();
  if (!res.ok) throw Object.assign(new Error(`HTTP ${res.status}: ${text}`), { status: res.status });
  return JSON.parse(text);
}

/** The second workspace's id, as its clients send it. */
async function otherWorkspaceId(): Promise<string | undefined> {
  const list = await app.t.client().iam.workspaces.listWorkspaces({});
  return list.workspaces.find((w) => w.displayName === "Two")?.id;
}
