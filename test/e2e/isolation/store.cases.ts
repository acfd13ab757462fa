import { type JsonObject, toJson } from "@bufbuild/protobuf";
import { type ListValue, ListValueSchema } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { expect } from "vitest";
import { StoreService } from "../../../gen/agentplane/agents/v1/store_service_pb.js";
import type { AgentplaneClient } from "../../../sdk/index.js";
import { ANSWERED, DENIED, isolationSuite } from "./isolation-suite.js";

/** Text only A's items hold. */
const SECRET = "secret-of-A-store";
/** A's namespace label, which B's namespaces never have. */
const A_LABEL = "secrets-of-a";
const NAMESPACE = ["isolation", A_LABEL];
const KEY = "k";
const VALUE = { owner: "A", note: SECRET };
/** Namespace of the look-alike items: two in A, one in B, with the same fields. */
const SHARED_NAMESPACE = ["isolation", "shared"];
const lookAlike = (rank: number) => ({ shared: "isolation-store", rank });

const store = (client: AgentplaneClient) => createClient(StoreService, client.transport);

/** A SearchItems request both ways; Connect's answer in REST's `{items}` shape. */
const search = (body: { namespace_prefix: string[]; filter?: JsonObject }) => ({
  rest: () => ({ method: "POST", path: "/store/items/search", body }),
  connect: (c: AgentplaneClient) =>
    store(c)
      .searchItems({
        namespacePrefix: body.namespace_prefix,
        ...(body.filter ? { filter: body.filter } : {}),
      })
      .then((r) => ({ items: r.items })),
});

/** A ListNamespaces answer of Connect in REST's shape: `{namespaces: [["a", "b"], ...]}`. */
const namespacesOf = (r: { namespaces: ListValue[] }) => ({
  namespaces: r.namespaces.map((n) => toJson(ListValueSchema, n)),
});

/** A check that a SearchItems answer holds `n` items. */
const itemCount = (n: number) => (answer: unknown) =>
  expect((answer as { items: unknown[] }).items).toHaveLength(n);

/**
 * Store: items of workspace A. Store calls address items by namespace and key, not by id, so a key
 * of B either names A as its tenant (refused) or works on B's own, separate store: its searches,
 * filters and namespace listings see B's look-alike items and none of A's, and its writes leave A's
 * items alone (checked in `verify`).
 */
export const suite = isolationSuite({
  service: "store",
  async setup({ adminA, adminB, workspaceA, workspaceB }) {
    await store(adminA).putItem({ namespace: NAMESPACE, key: KEY, value: VALUE });
    await store(adminA).putItem({
      namespace: SHARED_NAMESPACE,
      key: "k1",
      value: { ...lookAlike(1), note: SECRET },
    });
    await store(adminA).putItem({
      namespace: SHARED_NAMESPACE,
      key: "k2",
      value: { ...lookAlike(2), note: SECRET },
    });
    await store(adminB).putItem({ namespace: SHARED_NAMESPACE, key: "k1", value: lookAlike(1) });
    // A key of B for `verify`, acting in B by default.
    const keyB = (
      await adminA.iam.apiKeys.createApiKey({ kind: "service", workspaceIds: [workspaceB], role: "admin" })
    ).key;
    return { workspaceA, keyB };
  },
  secrets: () => [SECRET, A_LABEL],
  cases: [
    {
      ...DENIED,
      name: "StoreService.GetItem in A",
      rest: (f) => ({
        method: "GET",
        path: `/store/items?namespace=${NAMESPACE.join(".")}&key=${KEY}`,
        tenantId: f.workspaceA,
      }),
      connect: (c) => store(c).getItem({ namespace: NAMESPACE, key: KEY }),
    },
    {
      ...DENIED,
      name: "StoreService.PutItem in A",
      rest: (f) => ({
        method: "PUT",
        path: "/store/items",
        body: { namespace: NAMESPACE, key: KEY, value: { owner: "B" } },
        tenantId: f.workspaceA,
      }),
      connect: (c) => store(c).putItem({ namespace: NAMESPACE, key: KEY, value: { owner: "B" } }),
    },
    {
      ...DENIED,
      name: "StoreService.DeleteItem in A",
      rest: (f) => ({
        method: "DELETE",
        path: "/store/items",
        body: { namespace: NAMESPACE, key: KEY },
        tenantId: f.workspaceA,
      }),
      connect: (c) => store(c).deleteItem({ namespace: NAMESPACE, key: KEY }),
    },
    {
      ...DENIED,
      name: "StoreService.SearchItems in A",
      rest: (f) => ({
        method: "POST",
        path: "/store/items/search",
        body: { namespace_prefix: ["isolation"] },
        tenantId: f.workspaceA,
      }),
      connect: (c) => store(c).searchItems({ namespacePrefix: ["isolation"] }),
    },
    {
      ...DENIED,
      name: "StoreService.ListNamespaces in A",
      rest: (f) => ({ method: "POST", path: "/store/namespaces", body: {}, tenantId: f.workspaceA }),
      connect: (c) => store(c).listNamespaces({}),
    },
    {
      ...ANSWERED,
      name: "StoreService.GetItem of A's namespace and key",
      rest: () => ({ method: "GET", path: `/store/items?namespace=${NAMESPACE.join(".")}&key=${KEY}` }),
      connect: (c) =>
        store(c)
          .getItem({ namespace: NAMESPACE, key: KEY })
          .then((r) => r.item ?? null),
      expectB: (item) => expect(item).toBeNull(),
    },
    {
      ...ANSWERED,
      name: "StoreService.SearchItems by namespace prefix",
      ...search({ namespace_prefix: ["isolation"] }),
      expectB: itemCount(1),
    },
    {
      ...ANSWERED,
      name: "StoreService.SearchItems by a wildcard prefix",
      ...search({ namespace_prefix: ["*", A_LABEL] }),
      expectB: itemCount(0),
    },
    {
      ...ANSWERED,
      name: "StoreService.SearchItems with an equality filter",
      ...search({ namespace_prefix: ["isolation"], filter: { shared: "isolation-store" } }),
      expectB: itemCount(1),
      expectA: itemCount(2),
    },
    {
      ...ANSWERED,
      name: "StoreService.SearchItems with $gte and $in filters",
      ...search({
        namespace_prefix: [],
        filter: { rank: { $gte: 1 }, shared: { $in: ["isolation-store", "x"] } },
      }),
      expectB: itemCount(1),
      expectA: itemCount(2),
    },
    {
      ...ANSWERED,
      name: "StoreService.SearchItems with $ne and $nin filters",
      ...search({ namespace_prefix: ["isolation"], filter: { owner: { $ne: "B" }, rank: { $nin: [7] } } }),
    },
    {
      ...ANSWERED,
      name: "StoreService.ListNamespaces by prefix",
      rest: () => ({ method: "POST", path: "/store/namespaces", body: { prefix: ["isolation"] } }),
      connect: (c) =>
        store(c)
          .listNamespaces({ prefix: ["isolation"] })
          .then(namespacesOf),
      expectB: (answer) => expect(answer).toEqual({ namespaces: [SHARED_NAMESPACE] }),
    },
    {
      ...ANSWERED,
      name: "StoreService.ListNamespaces by suffix",
      rest: () => ({ method: "POST", path: "/store/namespaces", body: { suffix: [A_LABEL] } }),
      connect: (c) =>
        store(c)
          .listNamespaces({ suffix: [A_LABEL] })
          .then(namespacesOf),
      expectB: (answer) => expect(answer).toEqual({ namespaces: [] }),
    },
  ],
  async verify({ t, adminA }, f) {
    const inB = store(t.client({ apiKey: f.keyB }));
    expect((await inB.getItem({ namespace: NAMESPACE, key: KEY })).item).toBeUndefined();
    await inB.putItem({ namespace: NAMESPACE, key: KEY, value: { owner: "B" } });
    await inB.deleteItem({ namespace: NAMESPACE, key: KEY });
    const { item } = await store(adminA).getItem({ namespace: NAMESPACE, key: KEY });
    expect(item?.value).toEqual(VALUE);
    const shared = await store(adminA).searchItems({ namespacePrefix: SHARED_NAMESPACE });
    expect(shared.items).toHaveLength(2);
  },
});
