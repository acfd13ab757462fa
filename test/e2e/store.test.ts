/**
 * The store end to end: every StoreClient method of the official `@langchain/langgraph-sdk`, the
 * same operations through our Connect client, the REST JSON shapes, bad input and permissions.
 */
import { toJson } from "@bufbuild/protobuf";
import { ListValueSchema } from "@bufbuild/protobuf/wkt";
import { type Client as ConnectClient, createClient } from "@connectrpc/connect";
import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoreService } from "../../gen/agentplane/agents/v1/store_service_pb.js";
import { Code, ConnectError } from "../../sdk/index.js";
import { langGraphFailure } from "../support/call-failures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

let t: TestApp;
let sdk: Client;
let rpc: ConnectClient<typeof StoreService>;
let viewer: Client;
let viewerKey: string;

beforeAll(async () => {
  t = await startTestApp();
  sdk = new Client({ apiUrl: t.baseUrl, apiKey: t.adminKey, callerOptions: { maxRetries: 0 } });
  rpc = createClient(StoreService, t.client().transport);
  const admin = t.client();
  const workspaceId = (await admin.iam.workspaces.getCurrentWorkspace({})).id;
  viewerKey = (
    await admin.iam.apiKeys.createApiKey({ kind: "service", workspaceIds: [workspaceId], role: "viewer" })
  ).key;
  viewer = new Client({ apiUrl: t.baseUrl, apiKey: viewerKey, callerOptions: { maxRetries: 0 } });
});
afterAll(() => t?.stop());

/** A REST call's status and JSON body. */
async function rest(method: string, path: string, body?: unknown, apiKey?: string) {
  const res = await t.fetch(path, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    ...(apiKey ? { apiKey } : {}),
  });
  return { status: res.status, body: (await res.json()) as unknown };
}

describe("with the official SDK", () => {
  it("puts and gets an item, and answers null for a missing one", async () => {
    await sdk.store.putItem(["sdk", "users", "u1"], "prefs", { theme: "dark", n: 1 });
    const item = await sdk.store.getItem(["sdk", "users", "u1"], "prefs");
    expect(item).toMatchObject({
      namespace: ["sdk", "users", "u1"],
      key: "prefs",
      value: { theme: "dark", n: 1 },
    });
    expect(Date.parse(item!.createdAt)).toBeGreaterThan(Date.now() - 60_000);
    expect(item!.updatedAt).toBe(item!.createdAt);
    expect(await sdk.store.getItem(["sdk", "users", "u1"], "nope")).toBeNull();
    expect(await sdk.store.getItem(["sdk", "users", "u1"], "prefs", { refreshTtl: false })).not.toBeNull();

    await sdk.store.putItem(["sdk", "users", "u1"], "prefs", { theme: "light" }, { ttl: 30, index: false });
    const replaced = await sdk.store.getItem(["sdk", "users", "u1"], "prefs");
    expect(replaced?.value).toEqual({ theme: "light" });
    expect(replaced?.createdAt).toBe(item!.createdAt);
  });

  it("deletes an item", async () => {
    await sdk.store.putItem(["sdk", "del"], "k", { v: 1 });
    await sdk.store.deleteItem(["sdk", "del"], "k");
    expect(await sdk.store.getItem(["sdk", "del"], "k")).toBeNull();
    // Deleting what is not there succeeds.
    await sdk.store.deleteItem(["sdk", "del"], "k");
  });

  it("searches by prefix and filter, newest first, with limit and offset", async () => {
    for (const [key, value] of [
      ["a", { kind: "note", score: 1 }],
      ["b", { kind: "note", score: 5 }],
      ["c", { kind: "todo", score: 9 }],
    ] as const) {
      await sdk.store.putItem(["search", "docs"], key, value);
    }
    await sdk.store.putItem(["search-other"], "z", { kind: "note", score: 3 });
    const keys = (r: { items: { key: string }[] }) => r.items.map((i) => i.key);

    expect(keys(await sdk.store.searchItems(["search"]))).toEqual(["c", "b", "a"]);
    expect(keys(await sdk.store.searchItems(["search"], { filter: { kind: "note" } }))).toEqual(["b", "a"]);
    expect(keys(await sdk.store.searchItems(["search"], { filter: { score: { $gte: 5 } } }))).toEqual([
      "c",
      "b",
    ]);
    expect(keys(await sdk.store.searchItems(["search"], { limit: 1, offset: 1 }))).toEqual(["b"]);
    const result = await sdk.store.searchItems(["search", "docs"], { limit: 1 });
    expect(result.items[0]).toMatchObject({
      namespace: ["search", "docs"],
      key: "c",
      value: { kind: "todo" },
    });
    expect(result.items[0]).not.toHaveProperty("score");
  });

  it("lists namespaces with prefix, suffix and max depth", async () => {
    for (const ns of [
      ["ns", "a", "x"],
      ["ns", "a", "y"],
      ["ns", "b", "x"],
    ]) {
      await sdk.store.putItem(ns, "k", { v: 1 });
    }
    expect((await sdk.store.listNamespaces({ prefix: ["ns"] })).namespaces).toEqual([
      ["ns", "a", "x"],
      ["ns", "a", "y"],
      ["ns", "b", "x"],
    ]);
    expect((await sdk.store.listNamespaces({ prefix: ["ns"], suffix: ["x"] })).namespaces).toEqual([
      ["ns", "a", "x"],
      ["ns", "b", "x"],
    ]);
    expect((await sdk.store.listNamespaces({ prefix: ["ns"], maxDepth: 2 })).namespaces).toEqual([
      ["ns", "a"],
      ["ns", "b"],
    ]);
    expect((await sdk.store.listNamespaces({ prefix: ["ns"], limit: 1, offset: 2 })).namespaces).toEqual([
      ["ns", "b", "x"],
    ]);
  });
});

describe("REST shapes", () => {
  it("answers the item with exactly the LangGraph fields, or null", async () => {
    await sdk.store.putItem(["shape"], "k", { nested: { list: [1, "two", null] } });
    const found = await rest("GET", "/store/items?namespace=shape&key=k");
    expect(found.status).toBe(200);
    expect(Object.keys(found.body as object).sort()).toEqual([
      "created_at",
      "key",
      "namespace",
      "updated_at",
      "value",
    ]);
    expect((found.body as { value: unknown }).value).toEqual({ nested: { list: [1, "two", null] } });
    const missing = await t.fetch("/store/items?namespace=shape&key=missing");
    expect(missing.status).toBe(200);
    expect(await missing.text()).toBe("null");
  });

  it("takes a get's namespace joined by dots, as the SDKs send it, or as repeated labels", async () => {
    await sdk.store.putItem(["shape", "deep"], "k", { at: "deep" });
    const dotted = await rest("GET", "/store/items?namespace=shape.deep&key=k");
    const repeated = await rest("GET", "/store/items?namespace=shape&namespace=deep&key=k");
    expect(dotted.status).toBe(200);
    expect(repeated).toEqual(dotted);
    expect((repeated.body as { namespace: string[] }).namespace).toEqual(["shape", "deep"]);
    const period = await rest("GET", "/store/items?namespace=shape&namespace=de.ep&key=k");
    expect(period).toEqual({
      status: 422,
      body: { detail: 'namespace label 2 ("de.ep") contains "."; namespace labels cannot contain periods' },
    });
  });

  it("accepts the nulls the Python SDK sends for unset fields", async () => {
    const put = await rest("PUT", "/store/items", {
      namespace: ["py"],
      key: "k",
      value: { v: 1 },
      index: null,
      ttl: null,
    });
    expect(put).toEqual({ status: 200, body: {} });
    const search = await rest("POST", "/store/items/search", {
      namespace_prefix: ["py"],
      filter: null,
      limit: 10,
      offset: 0,
      query: null,
      refresh_ttl: null,
    });
    expect(search.status).toBe(200);
    expect((search.body as { items: unknown[] }).items).toHaveLength(1);
    const list = await rest("POST", "/store/namespaces", {
      prefix: null,
      suffix: null,
      max_depth: null,
      limit: 100,
      offset: 0,
    });
    expect(list.status).toBe(200);
    expect((list.body as { namespaces: string[][] }).namespaces).toContainEqual(["py"]);
  });
});

describe("through Connect", () => {
  it("puts, gets, searches, lists and deletes", async () => {
    await rpc.putItem({ namespace: ["rpc", "a"], key: "k", value: { n: 1 }, ttl: 5 });
    const { item } = await rpc.getItem({ namespace: ["rpc", "a"], key: "k" });
    expect(item?.namespace).toEqual(["rpc", "a"]);
    expect(item?.value).toEqual({ n: 1 });
    expect(item?.createdAt).toBeDefined();
    expect((await rpc.getItem({ namespace: ["rpc", "a"], key: "missing" })).item).toBeUndefined();

    const { items } = await rpc.searchItems({ namespacePrefix: ["rpc"], filter: { n: 1 } });
    expect(items.map((i) => i.key)).toEqual(["k"]);
    const { namespaces } = await rpc.listNamespaces({ prefix: ["rpc"] });
    expect(namespaces.map((ns) => toJson(ListValueSchema, ns))).toEqual([["rpc", "a"]]);

    await rpc.deleteItem({ namespace: ["rpc", "a"], key: "k" });
    expect((await rpc.getItem({ namespace: ["rpc", "a"], key: "k" })).item).toBeUndefined();
  });

  it("refuses bad input with INVALID_ARGUMENT", async () => {
    const error = await rpc.putItem({ namespace: ["a", ""], key: "k", value: {} }).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(error?.code).toBe(Code.InvalidArgument);
    expect(error?.rawMessage).toBe("namespace label 2 is empty; namespace labels must be non-empty");
  });
});

describe("bad input", () => {
  const cases: [string, string, string, unknown, string][] = [
    [
      "empty label on put",
      "PUT",
      "/store/items",
      { namespace: ["a", ""], key: "k", value: {} },
      "namespace label 2 is empty; namespace labels must be non-empty",
    ],
    [
      "label with a period on put",
      "PUT",
      "/store/items",
      { namespace: ["a.b"], key: "k", value: {} },
      'namespace label 1 ("a.b") contains "."; namespace labels cannot contain periods',
    ],
    [
      "no namespace on put",
      "PUT",
      "/store/items",
      { namespace: [], key: "k", value: {} },
      "namespace must have at least one label",
    ],
    ["empty key", "PUT", "/store/items", { namespace: ["a"], key: "", value: {} }, "key must not be empty"],
    [
      "missing value",
      "PUT",
      "/store/items",
      { namespace: ["a"], key: "k" },
      "value is required: send a JSON object",
    ],
    [
      "index fields",
      "PUT",
      "/store/items",
      { namespace: ["a"], key: "k", value: {}, index: ["text"] },
      "semantic search is not configured on this server: index must be false or null",
    ],
    [
      "negative ttl",
      "PUT",
      "/store/items",
      { namespace: ["a"], key: "k", value: {}, ttl: -1 },
      "ttl must be a positive number of minutes, at most 52596000 (100 years); got -1",
    ],
    [
      "empty label on delete",
      "DELETE",
      "/store/items",
      { namespace: [""], key: "k" },
      "namespace label 1 is empty; namespace labels must be non-empty",
    ],
    [
      "empty label on get",
      "GET",
      "/store/items?namespace=a..b&key=k",
      undefined,
      "namespace label 2 is empty; namespace labels must be non-empty",
    ],
    ["no namespace on get", "GET", "/store/items?key=k", undefined, "namespace must have at least one label"],
    [
      "label with a period in a search prefix",
      "POST",
      "/store/items/search",
      { namespace_prefix: ["a.b"] },
      'namespace_prefix label 1 ("a.b") contains "."; namespace labels cannot contain periods',
    ],
    [
      "search limit 0",
      "POST",
      "/store/items/search",
      { limit: 0 },
      "limit must be an integer from 1 to 1000; got 0",
    ],
    [
      "search limit 1001",
      "POST",
      "/store/items/search",
      { limit: 1001 },
      "limit must be an integer from 1 to 1000; got 1001",
    ],
    [
      "negative search offset",
      "POST",
      "/store/items/search",
      { offset: -1 },
      "offset must be an integer from 0 to 2147483647; got -1",
    ],
    [
      "semantic query",
      "POST",
      "/store/items/search",
      { query: "tea" },
      "semantic search is not configured on this server: send no query, and use filter to match values",
    ],
    [
      "bad filter operator",
      "POST",
      "/store/items/search",
      { filter: { n: { $regex: "x" } } },
      'filter field "n": unknown operator $regex; use one of $eq, $ne, $gt, $gte, $lt, $lte, $in, $nin',
    ],
    [
      "empty label in a namespace prefix",
      "POST",
      "/store/namespaces",
      { prefix: ["a", ""] },
      "prefix label 2 is empty; namespace labels must be non-empty",
    ],
    [
      "label with a period in a suffix",
      "POST",
      "/store/namespaces",
      { suffix: ["x.y"] },
      'suffix label 1 ("x.y") contains "."; namespace labels cannot contain periods',
    ],
    [
      "max depth 0",
      "POST",
      "/store/namespaces",
      { max_depth: 0 },
      "max_depth must be an integer from 1 to 2147483647; got 0",
    ],
    [
      "namespaces limit 5000",
      "POST",
      "/store/namespaces",
      { limit: 5000 },
      "limit must be an integer from 1 to 1000; got 5000",
    ],
  ];
  for (const [name, method, path, body, detail] of cases) {
    it(`answers 422 for ${name}`, async () => {
      expect(await rest(method, path, body)).toEqual({ status: 422, body: { detail } });
    });
  }

  it("answers 422 for a value that is not an object, and ignores fields it does not know", async () => {
    const array = await rest("PUT", "/store/items", { namespace: ["a"], key: "k", value: [1] });
    expect(array.status).toBe(422);
    expect((array.body as { detail: string }).detail).toContain("value");
    // A newer client's field (decision 14): ignored, the search answers as without it.
    const newer = await rest("POST", "/store/items/search", { namespace_prefix: ["a"], bogus: 1 });
    expect(newer).toEqual(await rest("POST", "/store/items/search", { namespace_prefix: ["a"] }));
    expect(newer.status).toBe(200);
  });

  it("answers 422 through the SDK, with the detail", async () => {
    expect(await langGraphFailure(sdk.store.putItem(["a", ""], "k", {}))).toEqual({
      status: 422,
      detail: "namespace label 2 is empty; namespace labels must be non-empty",
    });
    expect(await langGraphFailure(sdk.store.searchItems([], { limit: 0 }))).toEqual({
      status: 422,
      detail: "limit must be an integer from 1 to 1000; got 0",
    });
  });
});

describe("permissions", () => {
  it("lets a viewer read but not write", async () => {
    await sdk.store.putItem(["perm"], "k", { v: 1 });
    expect((await viewer.store.getItem(["perm"], "k"))?.value).toEqual({ v: 1 });
    expect((await viewer.store.searchItems(["perm"])).items).toHaveLength(1);
    expect((await viewer.store.listNamespaces({ prefix: ["perm"] })).namespaces).toEqual([["perm"]]);
    const denied = "permission denied: this call needs the store:write permission";
    expect(await langGraphFailure(viewer.store.putItem(["perm"], "k", { v: 2 }))).toEqual({
      status: 403,
      detail: denied,
    });
    expect(await langGraphFailure(viewer.store.deleteItem(["perm"], "k"))).toEqual({
      status: 403,
      detail: denied,
    });
    expect((await sdk.store.getItem(["perm"], "k"))?.value).toEqual({ v: 1 });
  });

  it("answers 401 without a key", async () => {
    const res = await t.fetch("/store/items/search", { method: "POST", body: "{}", apiKey: null });
    expect(res.status).toBe(401);
  });
});
