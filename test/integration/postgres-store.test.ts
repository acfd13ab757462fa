import { Annotation, END, type LangGraphRunnableConfig, START, StateGraph } from "@langchain/langgraph";
import { beforeAll, describe, expect, it } from "vitest";
import { PostgresStore } from "../../server/runtime/postgres-store.js";
import { StoreInputError } from "../../server/runtime/store-validation.js";
import type { Sql } from "../../server/store/db.js";
import { useTestDatabase } from "../support/database.js";
import { createTestWorkspace } from "../support/tenancy.js";

const database = useTestDatabase();
let sql: Sql;
let workspaceA: string;
let workspaceB: string;

beforeAll(async () => {
  sql = database().sql;
  workspaceA = await createTestWorkspace(sql);
  workspaceB = await createTestWorkspace(sql);
});

/** A store on a fresh workspace, so tests do not see each other's items. */
async function freshStore(options?: ConstructorParameters<typeof PostgresStore>[2]): Promise<PostgresStore> {
  return new PostgresStore(sql, await createTestWorkspace(sql), options);
}

/** Moves an item's expiry into the past, as if its TTL had run out. */
async function expire(namespace: string[], key: string): Promise<void> {
  await sql`update store_items set expires_at = now() - interval '1 second' where namespace = ${namespace} and key = ${key}`;
}

describe("BaseStore helpers", () => {
  it("puts, gets, replaces and deletes items", async () => {
    const store = await freshStore();
    expect(await store.get(["users", "u1"], "prefs")).toBeNull();
    await store.put(["users", "u1"], "prefs", { theme: "dark" });
    const first = await store.get(["users", "u1"], "prefs");
    expect(first).toMatchObject({ namespace: ["users", "u1"], key: "prefs", value: { theme: "dark" } });
    expect(first?.createdAt).toBeInstanceOf(Date);
    await store.put(["users", "u1"], "prefs", { theme: "light" });
    const second = await store.get(["users", "u1"], "prefs");
    expect(second?.value).toEqual({ theme: "light" });
    expect(second?.createdAt).toEqual(first?.createdAt);
    expect(second!.updatedAt.getTime()).toBeGreaterThanOrEqual(first!.updatedAt.getTime());
    await store.delete(["users", "u1"], "prefs");
    expect(await store.get(["users", "u1"], "prefs")).toBeNull();
  });

  it("keeps each workspace's items apart", async () => {
    const a = new PostgresStore(sql, workspaceA);
    const b = new PostgresStore(sql, workspaceB);
    await a.put(["shared"], "k", { owner: "a" });
    await b.put(["shared"], "k", { owner: "b" });
    expect((await a.get(["shared"], "k"))?.value).toEqual({ owner: "a" });
    expect((await b.get(["shared"], "k"))?.value).toEqual({ owner: "b" });
    await b.delete(["shared"], "k");
    expect((await a.get(["shared"], "k"))?.value).toEqual({ owner: "a" });
    expect(await b.search(["shared"])).toEqual([]);
    expect(await b.listNamespaces()).toEqual([]);
  });

  it("refuses bad namespaces, keys, values and filters with StoreInputError", async () => {
    const store = await freshStore();
    await expect(store.batch([{ namespace: [], key: "k", value: {} }])).rejects.toThrow(
      new StoreInputError("namespace must have at least one label"),
    );
    // LangGraph's own get() checks the namespace before it reaches the store; batch() does not.
    await expect(store.get(["a", ""], "k")).rejects.toThrow("Namespace labels cannot be empty strings");
    await expect(store.batch([{ namespace: ["a", ""], key: "k" }])).rejects.toThrow(
      new StoreInputError("namespace label 2 is empty; namespace labels must be non-empty"),
    );
    await expect(store.batch([{ namespace: ["a.b"], key: "k" }])).rejects.toThrow(
      'namespace label 1 ("a.b") contains "."',
    );
    await expect(store.get(["a"], "")).rejects.toThrow("key must not be empty");
    await expect(store.get(["a"], "x".repeat(513))).rejects.toThrow("key is longer than 512 bytes");
    await expect(store.batch([{ namespace: ["a"], key: "k", value: [1] as never }])).rejects.toThrow(
      "value must be a JSON object",
    );
    await expect(store.search(["a"], { filter: { n: { $gt: [1] } } })).rejects.toThrow(
      'filter field "n": $gt needs a number, a string or a boolean',
    );
    await expect(store.search(["a"], { filter: { n: { $like: "x" } } })).rejects.toThrow(
      "unknown operator $like",
    );
    await expect(store.search(["a"], { filter: { n: { $in: 3 } } })).rejects.toThrow("$in needs an array");
    await expect(store.batch([{ namespace: ["a"], key: "k", value: {}, ttl: -1 }])).rejects.toThrow(
      "ttl must be a positive number of minutes",
    );
    expect(() => new PostgresStore(sql, workspaceA, { defaultTtlMinutes: 0 })).toThrow(StoreInputError);
  });
});

describe("batch()", () => {
  it("answers reads from the state before the batch's writes, which apply last and last-wins", async () => {
    const store = await freshStore();
    await store.put(["docs"], "a", { v: 1 });
    const results = (await store.batch([
      { namespace: ["docs"], key: "a", value: { v: 2 } },
      { namespace: ["docs"], key: "a" },
      { namespace: ["docs"], key: "b", value: { v: 1 } },
      { namespace: ["docs"], key: "b", value: { v: 3 } },
      { namespacePrefix: ["docs"], limit: 10, offset: 0 },
      { matchConditions: undefined, limit: 10, offset: 0 },
      { namespace: ["docs"], key: "missing" },
    ])) as unknown[];
    expect(results[0]).toBeUndefined();
    expect((results[1] as { value: unknown }).value).toEqual({ v: 1 });
    expect((results[4] as { key: string }[]).map((i) => i.key)).toEqual(["a"]);
    expect(results[5]).toEqual([["docs"]]);
    expect(results[6]).toBeNull();
    expect((await store.get(["docs"], "a"))?.value).toEqual({ v: 2 });
    expect((await store.get(["docs"], "b"))?.value).toEqual({ v: 3 });
  });

  it("deletes with a null value, and a later put in the same batch wins over a delete", async () => {
    const store = await freshStore();
    await store.put(["docs"], "a", { v: 1 });
    await store.put(["docs"], "b", { v: 1 });
    await store.batch([
      { namespace: ["docs"], key: "a", value: null },
      { namespace: ["docs"], key: "b", value: null },
      { namespace: ["docs"], key: "b", value: { v: 2 } },
    ]);
    expect(await store.get(["docs"], "a")).toBeNull();
    expect((await store.get(["docs"], "b"))?.value).toEqual({ v: 2 });
  });

  it("writes nothing when one operation of the batch is invalid", async () => {
    const store = await freshStore();
    await expect(
      store.batch([
        { namespace: ["docs"], key: "a", value: { v: 1 } },
        { namespace: ["docs"], key: "", value: { v: 1 } },
      ]),
    ).rejects.toThrow(StoreInputError);
    expect(await store.get(["docs"], "a")).toBeNull();
  });
});

describe("search()", () => {
  let store: PostgresStore;
  beforeAll(async () => {
    store = await freshStore();
    // Stored in this order, so the newest (most recently updated) is "e".
    await store.put(["docs", "en"], "a", { lang: "en", n: 1, tags: ["x"], meta: { k: 1 } });
    await store.put(["docs", "en"], "b", { lang: "en", n: 5, title: "beta" });
    await store.put(["docs", "fr"], "c", { lang: "fr", n: 10, title: "gamma", note: null });
    await store.put(["docs-old"], "d", { lang: "en", n: 2 });
    await store.put(["other", "en"], "e", { lang: "en", n: "7" });
  });

  const keys = async (prefix: string[], options?: Parameters<PostgresStore["search"]>[1]) =>
    (await store.search(prefix, options)).map((i) => i.key);

  it("matches namespace prefixes label by label, newest first", async () => {
    expect(await keys([])).toEqual(["e", "d", "c", "b", "a"]);
    expect(await keys(["docs"])).toEqual(["c", "b", "a"]);
    expect(await keys(["docs", "en"])).toEqual(["b", "a"]);
    expect(await keys(["docs", "e"])).toEqual([]);
    expect(await keys(["*", "en"])).toEqual(["e", "b", "a"]);
  });

  it("pages with limit and offset", async () => {
    expect(await keys([], { limit: 2 })).toEqual(["e", "d"]);
    expect(await keys([], { limit: 2, offset: 2 })).toEqual(["c", "b"]);
    expect(await keys([], { limit: 2, offset: 4 })).toEqual(["a"]);
  });

  it("filters on equal JSON and on the BaseStore operators", async () => {
    expect(await keys([], { filter: { lang: "fr" } })).toEqual(["c"]);
    expect(await keys([], { filter: { lang: "en", n: 5 } })).toEqual(["b"]);
    expect(await keys([], { filter: { meta: { k: 1 } } })).toEqual(["a"]);
    expect(await keys([], { filter: { tags: ["x"] } })).toEqual(["a"]);
    expect(await keys([], { filter: { note: null } })).toEqual(["c"]);
    expect(await keys([], { filter: { n: { $eq: 10 } } })).toEqual(["c"]);
    expect(await keys(["docs"], { filter: { lang: { $ne: "en" } } })).toEqual(["c"]);
    expect(await keys([], { filter: { title: { $ne: "beta" } } })).toEqual(["e", "d", "c", "a"]);
    // Ordering operators compare numbers with numbers only: "7" (a string) is not > 4.
    expect(await keys([], { filter: { n: { $gt: 4 } } })).toEqual(["c", "b"]);
    expect(await keys([], { filter: { n: { $gte: 5, $lt: 10 } } })).toEqual(["b"]);
    expect(await keys([], { filter: { n: { $lte: 2 } } })).toEqual(["d", "a"]);
    expect(await keys([], { filter: { title: { $gt: "c" } } })).toEqual(["c"]);
    expect(await keys([], { filter: { n: { $in: [1, 10, "7"] } } })).toEqual(["e", "c", "a"]);
    expect(await keys(["docs"], { filter: { n: { $nin: [1, 10] } } })).toEqual(["b"]);
  });

  it("ignores a semantic query, as InMemoryStore does without an index", async () => {
    expect(await keys(["docs"], { query: "anything" })).toEqual(["c", "b", "a"]);
  });
});

describe("listNamespaces()", () => {
  let store: PostgresStore;
  beforeAll(async () => {
    store = await freshStore();
    for (const ns of [["a", "b", "c"], ["a", "b", "d"], ["a", "x"], ["b", "c"], ["a-z"]]) {
      await store.put(ns, "k1", { v: 1 });
      await store.put(ns, "k2", { v: 2 });
    }
  });

  it("lists each namespace once, in label order", async () => {
    expect(await store.listNamespaces()).toEqual([
      ["a", "b", "c"],
      ["a", "b", "d"],
      ["a", "x"],
      ["a-z"],
      ["b", "c"],
    ]);
  });

  it("matches prefixes and suffixes, with * for any label", async () => {
    expect(await store.listNamespaces({ prefix: ["a"] })).toEqual([
      ["a", "b", "c"],
      ["a", "b", "d"],
      ["a", "x"],
    ]);
    expect(await store.listNamespaces({ prefix: ["a", "*", "d"] })).toEqual([["a", "b", "d"]]);
    expect(await store.listNamespaces({ suffix: ["c"] })).toEqual([
      ["a", "b", "c"],
      ["b", "c"],
    ]);
    expect(await store.listNamespaces({ suffix: ["*", "c"] })).toEqual([
      ["a", "b", "c"],
      ["b", "c"],
    ]);
    expect(await store.listNamespaces({ prefix: ["a"], suffix: ["c"] })).toEqual([["a", "b", "c"]]);
  });

  it("truncates to max depth after matching, then deduplicates", async () => {
    expect(await store.listNamespaces({ maxDepth: 1 })).toEqual([["a"], ["a-z"], ["b"]]);
    expect(await store.listNamespaces({ prefix: ["a"], maxDepth: 2 })).toEqual([
      ["a", "b"],
      ["a", "x"],
    ]);
    expect(await store.listNamespaces({ suffix: ["d"], maxDepth: 1 })).toEqual([["a"]]);
  });

  it("pages with limit and offset", async () => {
    expect(await store.listNamespaces({ limit: 2, offset: 1 })).toEqual([
      ["a", "b", "d"],
      ["a", "x"],
    ]);
  });
});

describe("TTL", () => {
  it("hides expired items from get, search and listNamespaces", async () => {
    const store = await freshStore();
    await store.batch([{ namespace: ["tmp"], key: "old", value: { v: 1 }, ttl: 5 }]);
    await store.put(["keep"], "k", { v: 1 });
    expect(await store.get(["tmp"], "old")).not.toBeNull();
    await expire(["tmp"], "old");
    expect(await store.get(["tmp"], "old")).toBeNull();
    expect(await store.search([])).toHaveLength(1);
    expect(await store.listNamespaces()).toEqual([["keep"]]);
  });

  it("applies the default TTL to puts without one; ttl null means no expiry", async () => {
    const store = await freshStore({ defaultTtlMinutes: 10, refreshOnRead: false });
    const before = Date.now();
    await store.put(["d"], "default", { v: 1 });
    await store.batch([{ namespace: ["d"], key: "forever", value: { v: 1 }, ttl: null }]);
    const [row] = await sql<{ expires_at: Date; ttl_minutes: number }[]>`
      select expires_at, ttl_minutes from store_items where namespace = ${["d"]} and key = 'default'`;
    expect(row?.ttl_minutes).toBe(10);
    expect(row!.expires_at.getTime() - before).toBeGreaterThan(9 * 60_000);
    expect(row!.expires_at.getTime() - before).toBeLessThan(11 * 60_000);
    const [forever] = await sql<{ expires_at: Date | null }[]>`
      select expires_at from store_items where namespace = ${["d"]} and key = 'forever'`;
    expect(forever?.expires_at).toBeNull();
  });

  it("restarts the TTL on get and search when refreshOnRead, unless the operation says otherwise", async () => {
    const onRead = await freshStore();
    await onRead.batch([{ namespace: ["r"], key: "g", value: { v: 1 }, ttl: 60 }]);
    await onRead.batch([{ namespace: ["r"], key: "s", value: { v: 1 }, ttl: 60 }]);
    const soon = sql`now() + interval '1 minute'`;
    await sql`update store_items set expires_at = ${soon} where namespace = ${["r"]}`;
    const expiry = async (key: string) =>
      (
        await sql<
          { expires_at: Date }[]
        >`select expires_at from store_items where namespace = ${["r"]} and key = ${key}`
      )[0]!.expires_at.getTime();
    const inTwoMinutes = Date.now() + 2 * 60_000;

    await onRead.batch([{ namespace: ["r"], key: "g", refreshTtl: false }]);
    expect(await expiry("g")).toBeLessThan(inTwoMinutes);
    await onRead.get(["r"], "g");
    expect(await expiry("g")).toBeGreaterThan(Date.now() + 59 * 60_000);
    expect(await expiry("s")).toBeLessThan(inTwoMinutes);
    await onRead.search(["r"], { filter: { v: 1 } });
    expect(await expiry("s")).toBeGreaterThan(Date.now() + 59 * 60_000);

    const noRefresh = await freshStore({ refreshOnRead: false });
    await noRefresh.batch([{ namespace: ["n"], key: "k", value: { v: 1 }, ttl: 60 }]);
    await sql`update store_items set expires_at = ${soon} where namespace = ${["n"]}`;
    await noRefresh.get(["n"], "k");
    await noRefresh.search(["n"]);
    const [row] = await sql<
      { expires_at: Date }[]
    >`select expires_at from store_items where namespace = ${["n"]}`;
    expect(row!.expires_at.getTime()).toBeLessThan(inTwoMinutes);
    await noRefresh.batch([{ namespace: ["n"], key: "k", refreshTtl: true }]);
    const [after] = await sql<
      { expires_at: Date }[]
    >`select expires_at from store_items where namespace = ${["n"]}`;
    expect(after!.expires_at.getTime()).toBeGreaterThan(Date.now() + 59 * 60_000);
  });

  it("treats a put over an expired item as a new item", async () => {
    const store = await freshStore();
    await store.batch([{ namespace: ["x"], key: "k", value: { v: 1 }, ttl: 1 }]);
    await sql`update store_items set created_at = now() - interval '1 day' where namespace = ${["x"]}`;
    await expire(["x"], "k");
    await store.put(["x"], "k", { v: 2 });
    const item = await store.get(["x"], "k");
    expect(item?.value).toEqual({ v: 2 });
    expect(Date.now() - item!.createdAt.getTime()).toBeLessThan(60_000);
  });
});

describe("as a graph's store", () => {
  it("serves config.store in nodes through LangGraph's batching wrapper", async () => {
    const store = await freshStore();
    const State = Annotation.Root({
      seen: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
    });
    const graph = new StateGraph(State)
      .addNode("remember", async (_state, config: LangGraphRunnableConfig) => {
        await config.store!.put(["memories", "u1"], "m1", { text: "likes tea" });
        await config.store!.put(["memories", "u1"], "m2", { text: "lives in Paris" });
        return {};
      })
      .addNode("recall", async (_state, config: LangGraphRunnableConfig) => {
        const items = await config.store!.search(["memories"], { filter: { text: "likes tea" } });
        const one = await config.store!.get(["memories", "u1"], "m2");
        return { seen: [...items.map((i) => i.key), String(one?.value.text)] };
      })
      .addEdge(START, "remember")
      .addEdge("remember", "recall")
      .addEdge("recall", END)
      .compile({ store });
    const result = await graph.invoke({});
    expect(result.seen).toEqual(["m1", "lives in Paris"]);
    expect(await store.listNamespaces()).toEqual([["memories", "u1"]]);
  });
});
