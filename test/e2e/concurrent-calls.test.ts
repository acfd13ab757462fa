/**
 * Concurrent single-row calls share statements (server/store/batching/coalescer.ts). Through the official
 * SDK and REST, bursts of creates, gets and puts from two workspaces at once must each get their
 * own answer, exactly as if they had run one by one, and never see the other workspace's rows.
 */
import { Client } from "@langchain/langgraph-sdk";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** Calls in one burst: well above one batch of concurrent requests, below the pool's queue limits. */
const BURST = 60;

let t: TestApp;
let sql: postgres.Sql;
/** The admin's default workspace, and a second one reached with `x-tenant-id`. */
let one: Client;
let two: Client;
let workspaceTwo: string;

beforeAll(async () => {
  t = await startTestApp();
  sql = postgres(t.databaseUrl, { max: 2, onnotice: () => {} });
  workspaceTwo = (await t.client().iam.workspaces.createWorkspace({ displayName: "Two" })).id;
  const options = { apiUrl: t.baseUrl, apiKey: t.adminKey, callerOptions: { maxRetries: 0 } };
  one = new Client(options);
  two = new Client({ ...options, defaultHeaders: { "x-tenant-id": workspaceTwo } });
});
afterAll(async () => {
  await sql?.end();
  await t?.stop();
});

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

describe("bursts of single-row calls", () => {
  it("creates threads in two workspaces at once, each with its own metadata and workspace", async () => {
    const created = await Promise.all(
      range(BURST).map((i) => (i % 2 === 0 ? one : two).threads.create({ metadata: { i } })),
    );
    expect(created.map((thread) => thread.metadata)).toEqual(range(BURST).map((i) => ({ i })));
    expect(new Set(created.map((thread) => thread.thread_id)).size).toBe(BURST);
    const fetched = await Promise.all(
      created.map((thread, i) => (i % 2 === 0 ? one : two).threads.get(thread.thread_id)),
    );
    expect(fetched).toEqual(created);
    const foreign = await Promise.allSettled(
      created.map((thread, i) => (i % 2 === 0 ? two : one).threads.get(thread.thread_id)),
    );
    expect(foreign.map((r) => r.status)).toEqual(range(BURST).map(() => "rejected"));
  });

  it("answers every concurrent create of one thread id but one with 409, and do_nothing with the thread", async () => {
    const threadId = crypto.randomUUID();
    const raised = await Promise.allSettled(
      range(10).map((i) => one.threads.create({ threadId, metadata: { i } })),
    );
    const won = raised.filter((r) => r.status === "fulfilled");
    expect(won).toHaveLength(1);
    expect(raised.filter((r) => r.status === "rejected").map((r) => String(r.reason))).toEqual(
      range(9).map(() => expect.stringContaining("409")),
    );
    const kept = await Promise.all(
      range(10).map(() => one.threads.create({ threadId, ifExists: "do_nothing", metadata: { other: 1 } })),
    );
    expect(kept.map((thread) => thread.metadata)).toEqual(range(10).map(() => won[0]?.value.metadata));
  });

  it("fails only the bad call of a burst whose shared statement Postgres refused", async () => {
    const settled = await Promise.allSettled(
      range(10).map((i) => one.threads.create({ metadata: { note: i === 4 ? "nul \u0000" : `ok ${i}` } })),
    );
    expect(settled.map((r) => r.status)).toEqual(range(10).map((i) => (i === 4 ? "rejected" : "fulfilled")));
    expect(String((settled[4] as PromiseRejectedResult).reason)).toContain("422");
    const notes = settled.flatMap((r) => (r.status === "fulfilled" ? [r.value.metadata?.note] : []));
    expect(notes).toEqual(range(10).flatMap((i) => (i === 4 ? [] : [`ok ${i}`])));
  });

  it("finds each thread of a burst of gets, and 404s the unknown ones among them", async () => {
    const thread = await one.threads.create({ metadata: { kind: "known" } });
    const ids = range(BURST).map((i) => (i % 3 === 0 ? crypto.randomUUID() : thread.thread_id));
    const statuses = await Promise.all(ids.map((id) => t.fetch(`/threads/${id}`).then((res) => res.status)));
    expect(statuses).toEqual(range(BURST).map((i) => (i % 3 === 0 ? 404 : 200)));
  });

  it("stores every item of a burst of puts in its own workspace", async () => {
    await Promise.all(
      range(BURST).map((i) =>
        (i % 2 === 0 ? one : two).store.putItem(["burst"], `k${i}`, { i, workspace: i % 2 }),
      ),
    );
    const items = await Promise.all(
      range(BURST).map((i) => (i % 2 === 0 ? one : two).store.getItem(["burst"], `k${i}`)),
    );
    expect(items.map((item) => item?.value)).toEqual(range(BURST).map((i) => ({ i, workspace: i % 2 })));
    const [count] = await sql<{ n: number }[]>`
      select count(*)::int as n from store_items where workspace_id = ${workspaceTwo} and namespace = '{burst}'`;
    expect(count?.n).toBe(BURST / 2);
  });

  it("keeps one of the values of concurrent puts to one item, as if they had run one after another", async () => {
    const values = range(20).map((i) => ({ v: i }));
    await Promise.all(values.map((value) => one.store.putItem(["same"], "item", value)));
    const item = await one.store.getItem(["same"], "item");
    expect(values).toContainEqual(item?.value);
    const [rows] = await sql<{ n: number }[]>`select count(*)::int as n from store_items where key = 'item'`;
    expect(rows?.n).toBe(1);
  });
});
