import { Code, createClient } from "@connectrpc/connect";
import { expect } from "vitest";
import { StoreService } from "../../../gen/agentplane/agents/v1/store_service_pb.js";
import type { AgentplaneClient } from "../../../sdk/index.js";
import { isolationSuite } from "./isolation-suite.js";

const NAMESPACE = ["isolation", "secrets"];
const KEY = "k";
const VALUE = { owner: "A" };

const store = (client: AgentplaneClient) => createClient(StoreService, client.transport);

/**
 * Store: items of workspace A. Store calls address items by namespace and key, not by id, so a key
 * of B either names A as its tenant (refused) or works on B's own, separate store (checked in
 * `verify`: it sees none of A's items and its writes leave them alone).
 */
export const suite = isolationSuite({
  service: "store",
  async setup({ adminA, workspaceA, workspaceB }) {
    await store(adminA).putItem({ namespace: NAMESPACE, key: KEY, value: VALUE });
    // A key of B for `verify`, acting in B by default.
    const keyB = (
      await adminA.apiKeys.createApiKey({ kind: "service", workspaceIds: [workspaceB], role: "admin" })
    ).key;
    return { workspaceA, keyB };
  },
  cases: [
    {
      name: "StoreService.GetItem in A",
      rest: (f) => ({
        method: "GET",
        path: `/store/items?namespace=${NAMESPACE.join(".")}&key=${KEY}`,
        tenantId: f.workspaceA,
      }),
      connect: (c) => store(c).getItem({ namespace: NAMESPACE.join("."), key: KEY }),
      status: 403,
      code: Code.PermissionDenied,
    },
    {
      name: "StoreService.PutItem in A",
      rest: (f) => ({
        method: "PUT",
        path: "/store/items",
        body: { namespace: NAMESPACE, key: KEY, value: { owner: "B" } },
        tenantId: f.workspaceA,
      }),
      connect: (c) => store(c).putItem({ namespace: NAMESPACE, key: KEY, value: { owner: "B" } }),
      status: 403,
      code: Code.PermissionDenied,
    },
    {
      name: "StoreService.DeleteItem in A",
      rest: (f) => ({
        method: "DELETE",
        path: "/store/items",
        body: { namespace: NAMESPACE, key: KEY },
        tenantId: f.workspaceA,
      }),
      connect: (c) => store(c).deleteItem({ namespace: NAMESPACE, key: KEY }),
      status: 403,
      code: Code.PermissionDenied,
    },
    {
      name: "StoreService.SearchItems in A",
      rest: (f) => ({
        method: "POST",
        path: "/store/items/search",
        body: { namespace_prefix: ["isolation"] },
        tenantId: f.workspaceA,
      }),
      connect: (c) => store(c).searchItems({ namespacePrefix: ["isolation"] }),
      status: 403,
      code: Code.PermissionDenied,
    },
    {
      name: "StoreService.ListNamespaces in A",
      rest: (f) => ({ method: "POST", path: "/store/namespaces", body: {}, tenantId: f.workspaceA }),
      connect: (c) => store(c).listNamespaces({}),
      status: 403,
      code: Code.PermissionDenied,
    },
  ],
  async verify({ t, adminA }, f) {
    const inB = store(t.client({ apiKey: f.keyB }));
    expect((await inB.getItem({ namespace: NAMESPACE.join("."), key: KEY })).item).toBeUndefined();
    expect((await inB.searchItems({ namespacePrefix: ["isolation"] })).items).toEqual([]);
    expect((await inB.listNamespaces({})).namespaces).toEqual([]);
    const restGet = await t.fetch(`/store/items?namespace=${NAMESPACE.join(".")}&key=${KEY}`, {
      apiKey: f.keyB,
    });
    expect(await restGet.json()).toBeNull();
    await inB.putItem({ namespace: NAMESPACE, key: KEY, value: { owner: "B" } });
    await inB.deleteItem({ namespace: NAMESPACE, key: KEY });
    const { item } = await store(adminA).getItem({ namespace: NAMESPACE.join("."), key: KEY });
    expect(item?.value).toEqual(VALUE);
  },
});
