/**
 * Custom auth claims of the Agent Server seed, through the official `@langchain/langgraph-sdk` as
 * users of a custom auth handler: a stateless run's `threads:create_run` value has no thread_id
 * (the reference's None); copying a thread needs the permission to create threads, and a user the
 * `threads:update` handler refuses cannot change a thread's TTL.
 */
import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GraphFixture, writeGraphFixture } from "../support/graph-fixture.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/**
 * Users are named by their bearer token: `writer` may create and update threads, `reader` may
 * only read them. Each run records in its metadata what its `threads:create_run` handler saw.
 */
const AUTH = `
import { Auth, HTTPException } from "@langchain/langgraph-sdk/auth";

const PERMISSIONS = { writer: ["threads:create", "threads:update"], reader: [] };

export const auth = new Auth()
  .authenticate((request) => {
    const name = /^Bearer\\s+(\\S+)$/i.exec(request.headers.get("authorization") ?? "")?.[1] ?? "";
    if (!(name in PERMISSIONS)) throw new HTTPException(401, { message: "unknown user" });
    return { identity: name, permissions: PERMISSIONS[name] };
  })
  .on("threads:create", ({ user }) => {
    if (!user.permissions.includes("threads:create"))
      throw new HTTPException(403, { message: user.identity + " may not create threads" });
  })
  .on("threads:update", ({ user }) => {
    if (!user.permissions.includes("threads:update"))
      throw new HTTPException(403, { message: user.identity + " may not update threads" });
  })
  .on("threads:create_run", ({ value }) => {
    value.metadata = {
      ...value.metadata,
      auth_saw_thread_id: "thread_id" in value && value.thread_id != null ? value.thread_id : "none",
    };
  });
`;

const GRAPH = `
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";
export const graph = new StateGraph(Annotation.Root({ n: Annotation() }))
  .addNode("one", () => ({ n: 1 }))
  .addEdge(START, "one")
  .addEdge("one", END)
  .compile();
`;

let fixture: GraphFixture;
let t: TestApp;
const as = (user: string) =>
  new Client({
    apiUrl: t.baseUrl,
    apiKey: null,
    defaultHeaders: { Authorization: `Bearer ${user}` },
    callerOptions: { maxRetries: 0 },
  });

beforeAll(async () => {
  fixture = await writeGraphFixture(
    { "auth.mjs": AUTH, "graph.mjs": GRAPH },
    { graphs: { one: "./graph.mjs:graph" }, auth: { path: "./auth.mjs:auth" } },
  );
  t = await startTestApp({ graphConfigPath: fixture.configFile });
}, 120_000);
afterAll(async () => {
  await t?.stop();
  await fixture?.remove();
});

/** Status and message of a rejected SDK call (200 when it succeeded). */
async function outcomeOf(call: Promise<unknown>): Promise<{ status: number | undefined; message: string }> {
  try {
    await call;
    return { status: 200, message: "" };
  } catch (error) {
    return { status: (error as { status?: number }).status, message: String((error as Error).message) };
  }
}

describe("threads:create_run", () => {
  it("sees no thread_id for a stateless run, and the thread's for a run on a thread", async () => {
    const writer = as("writer");
    const stateless = await writer.runs.create(null, "one", { input: {} });
    expect(stateless.metadata).toMatchObject({ auth_saw_thread_id: "none" });
    const thread = await writer.threads.create();
    const onThread = await writer.runs.create(thread.thread_id, "one", { input: {} });
    expect(onThread.metadata).toMatchObject({ auth_saw_thread_id: thread.thread_id });
    await writer.runs.join(thread.thread_id, onThread.run_id);
  });
});

describe("copy and TTL", () => {
  it("refuses a copy to a user who may not create threads, and a TTL update to one who may not update them", async () => {
    const writer = as("writer");
    const reader = as("reader");
    const thread = await writer.threads.create({ ttl: { ttl: 60, strategy: "delete" } });
    const before = await writer.threads.get(thread.thread_id, { include: ["ttl"] });
    const ttlOf = (t: unknown) => (t as { ttl?: { ttl_minutes?: number } }).ttl?.ttl_minutes;
    expect(ttlOf(before)).toBe(60);
    const threads = await writer.threads.count();

    const copy = await outcomeOf(reader.threads.copy(thread.thread_id));
    expect(copy.status).toBe(403);
    expect(copy.message).toContain("reader may not create threads");
    const ttl = await outcomeOf(
      reader.threads.update(thread.thread_id, { ttl: { ttl: 5, strategy: "delete" } }),
    );
    expect(ttl.status).toBe(403);
    expect(ttl.message).toContain("reader may not update threads");
    // Neither changed anything: no new thread, the same TTL.
    expect(await writer.threads.count()).toBe(threads);
    expect(await writer.threads.get(thread.thread_id, { include: ["ttl"] })).toEqual(before);

    // The writer may do both.
    const copied = await writer.threads.copy(thread.thread_id);
    expect(copied.thread_id).not.toBe(thread.thread_id);
    await writer.threads.update(thread.thread_id, { ttl: { ttl: 5, strategy: "delete" } });
    expect(ttlOf(await writer.threads.get(thread.thread_id, { include: ["ttl"] }))).toBe(5);
  });
});
