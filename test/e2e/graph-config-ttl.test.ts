/**
 * The graphs file's `checkpointer.ttl` and `store.ttl` reach the services: threads created without a
 * TTL get the default one, and store items get the default expiry.
 */
import { Client } from "@langchain/langgraph-sdk";
import postgres from "postgres";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type GraphFixture, NESTED_GRAPH_MODULE, writeGraphFixture } from "../support/graph-fixture.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

let fixture: GraphFixture;
let t: TestApp;
let db: postgres.Sql;

beforeAll(async () => {
  fixture = await writeGraphFixture(
    { "graphs.ts": NESTED_GRAPH_MODULE },
    {
      graphs: { parent: "./graphs.ts:graph" },
      checkpointer: { ttl: { strategy: "keep_latest", default_ttl: 90 } },
      store: { ttl: { default_ttl: 30, refresh_on_read: false } },
    },
  );
  t = await startTestApp({ graphConfigPath: fixture.configFile });
  db = postgres(t.databaseUrl, { max: 1, onnotice: () => {} });
});
afterAll(async () => {
  await db?.end();
  await t?.stop();
  await fixture?.remove();
});

it("gives threads created without a TTL the checkpointer's default", async () => {
  const client = new Client({ apiUrl: t.baseUrl, apiKey: t.adminKey });
  const thread = await client.threads.create();
  const res = await t.fetch(`/threads/${thread.thread_id}?include=ttl`);
  const body = (await res.json()) as { ttl?: { strategy: string; ttl_minutes: number } };
  expect(body.ttl).toMatchObject({ strategy: "keep_latest", ttl_minutes: 90 });
  const explicit = await client.threads.create({ ttl: { strategy: "delete", ttl: 5 } });
  const own = (await (await t.fetch(`/threads/${explicit.thread_id}?include=ttl`)).json()) as {
    ttl?: { strategy: string; ttl_minutes: number };
  };
  expect(own.ttl).toMatchObject({ strategy: "delete", ttl_minutes: 5 });
});

it("gives store items the store's default TTL", async () => {
  const client = new Client({ apiUrl: t.baseUrl, apiKey: t.adminKey });
  await client.store.putItem(["ttl", "test"], "k", { v: 1 });
  const [row] = await db`
    select extract(epoch from (expires_at - updated_at)) / 60 as minutes from store_items where key = 'k'`;
  expect(Math.round(Number(row?.minutes))).toBe(30);
});
