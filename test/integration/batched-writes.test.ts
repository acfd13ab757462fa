/**
 * The multi-row writes that coalesced requests share (server/store/batching/coalescer.ts): two batches run at
 * once, and concurrent requests may touch the same rows in any order. These run such batches side
 * by side on separate connections, in opposite orders, as the pool does under load.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { uuidv7 } from "../../server/ids.js";
import {
  upsertStoreItems,
  type WorkspaceStoreItemWrite,
} from "../../server/store/agents/store-item-store.js";
import { insertThreads, type NewThread } from "../../server/store/agents/thread-store.js";
import type { Sql } from "../../server/store/db.js";
import { useTestDatabase } from "../support/database.js";
import { createTestWorkspace } from "../support/tenancy.js";

/** Rows per batch: enough that two opposite-order batches interleave their row locks. */
const ROWS = 40;
/** Pairs of opposite-order batches; a deadlock-prone statement fails within a few. */
const PAIRS = 15;

const database = useTestDatabase();
let sql: Sql;
let workspaceA: string;
let workspaceB: string;

beforeAll(async () => {
  sql = database().sql;
  workspaceA = await createTestWorkspace(sql);
  workspaceB = await createTestWorkspace(sql);
});

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

describe("upsertStoreItems", () => {
  it("runs concurrent batches over the same items in opposite orders without a deadlock", async () => {
    const items = (version: number): WorkspaceStoreItemWrite[] =>
      range(ROWS).map((i) => ({
        workspaceId: i % 2 === 0 ? workspaceA : workspaceB,
        namespace: ["locks"],
        key: `k${i}`,
        value: { version },
        ttlMinutes: null,
      }));
    for (let pair = 0; pair < PAIRS; pair++) {
      await Promise.all([upsertStoreItems(sql, items(pair)), upsertStoreItems(sql, items(pair).reverse())]);
    }
    const rows = await sql<{ n: number; versions: number }[]>`
      select count(*)::int as n, count(distinct value->>'version')::int as versions
      from store_items where namespace = '{locks}'`;
    expect(rows[0]).toEqual({ n: ROWS, versions: 1 });
  });

  it("keeps the last of several writes to one item in one batch", async () => {
    const write = (version: number): WorkspaceStoreItemWrite => ({
      workspaceId: workspaceA,
      namespace: ["dupes"],
      key: "k",
      value: { version },
      ttlMinutes: null,
    });
    await upsertStoreItems(sql, [write(1), write(2), write(3)]);
    const [row] = await sql<{ value: { version: number } }[]>`
      select value from store_items where workspace_id = ${workspaceA} and namespace = '{dupes}'`;
    expect(row?.value).toEqual({ version: 3 });
  });
});

describe("insertThreads", () => {
  it("runs concurrent batches claiming the same ids in opposite orders without a deadlock", async () => {
    for (let pair = 0; pair < PAIRS; pair++) {
      const threads: NewThread[] = range(ROWS).map(() => ({
        workspaceId: workspaceA,
        threadId: uuidv7(),
        metadata: { pair },
        ttl: null,
      }));
      const [forward, backward] = await Promise.all([
        insertThreads(sql, threads),
        insertThreads(sql, [...threads].reverse()),
      ]);
      // Every id is created exactly once: by one batch or the other.
      const created = threads.map(
        (_, i) => Number(forward[i] !== undefined) + Number(backward[ROWS - 1 - i] !== undefined),
      );
      expect(created).toEqual(range(ROWS).map(() => 1));
    }
  });

  it("answers a duplicate id within one batch as taken", async () => {
    const threadId = uuidv7();
    const results = await insertThreads(sql, [
      { workspaceId: workspaceB, threadId, metadata: { first: true }, ttl: null },
      { workspaceId: workspaceB, threadId, metadata: { first: false }, ttl: null },
    ]);
    expect(results.map((r) => r?.metadata ?? null)).toEqual([{ first: true }, null]);
  });
});
