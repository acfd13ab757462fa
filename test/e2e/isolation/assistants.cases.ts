import { createClient } from "@connectrpc/connect";
import { expect } from "vitest";
import { AssistantService } from "../../../gen/agentplane/agents/v1/assistant_service_pb.js";
import type { AgentplaneClient } from "../../../sdk/index.js";
import { uuidv7 } from "../../../server/ids.js";
import { ANSWERED, countOf, DENIED, isolationSuite, listOf, NOT_FOUND } from "./isolation-suite.js";

const assistants = (c: AgentplaneClient) => createClient(AssistantService, c.transport);

/** Text only A's assistants hold. */
const SECRET = "secret-of-A-assistants";
/** Metadata and name of the look-alike assistants: two in A, one in B. */
const SHARED = { shared: "isolation-assistants" };
const LOOK_ALIKE = "look-alike assistant";

/**
 * Assistants: an assistant of workspace A, by id; look-alikes in both workspaces (same graph, name
 * and metadata) for searches and counts; and an assistant id both workspaces use, A's with two
 * versions, so that a version lookup that forgets the workspace would show B A's versions.
 */
export const suite = isolationSuite({
  service: "assistants",
  async setup({ adminA, adminB, workspaceA }) {
    const created = await assistants(adminA).createAssistant({
      graphId: "agent",
      name: "secret of A",
      metadata: { owner: "A" },
    });
    const lookAlike = { graphId: "agent", name: LOOK_ALIKE, metadata: SHARED };
    const lookAlikesA = [
      (await assistants(adminA).createAssistant(lookAlike)).assistantId!,
      (await assistants(adminA).createAssistant(lookAlike)).assistantId!,
    ];
    await assistants(adminB).createAssistant(lookAlike);
    const sharedId = uuidv7();
    await assistants(adminA).createAssistant({ assistantId: sharedId, graphId: "agent", name: "A's twin" });
    await assistants(adminA).updateAssistant({ assistantId: sharedId, metadata: { secret: SECRET } });
    await assistants(adminB).createAssistant({
      assistantId: sharedId,
      graphId: "agent",
      name: "B's own",
      metadata: { owner: "b" },
    });
    return { workspaceA, id: created.assistantId!, lookAlikesA, sharedId };
  },
  secrets: (f) => [f.id, ...f.lookAlikesA, SECRET, "secret of A", "A's twin"],
  cases: [
    {
      ...NOT_FOUND,
      name: "AssistantService.GetAssistant",
      rest: (f) => ({ method: "GET", path: `/assistants/${f.id}` }),
      connect: (c, f) => assistants(c).getAssistant({ assistantId: f.id }),
    },
    {
      ...NOT_FOUND,
      name: "AssistantService.UpdateAssistant",
      rest: (f) => ({ method: "PATCH", path: `/assistants/${f.id}`, body: { name: "taken over" } }),
      connect: (c, f) => assistants(c).updateAssistant({ assistantId: f.id, name: "taken over" }),
    },
    {
      ...NOT_FOUND,
      name: "AssistantService.DeleteAssistant",
      rest: (f) => ({ method: "DELETE", path: `/assistants/${f.id}?delete_threads=true` }),
      connect: (c, f) => assistants(c).deleteAssistant({ assistantId: f.id, deleteThreads: true }),
    },
    {
      ...NOT_FOUND,
      name: "AssistantService.ListAssistantVersions",
      rest: (f) => ({ method: "POST", path: `/assistants/${f.id}/versions`, body: {} }),
      connect: (c, f) => assistants(c).listAssistantVersions({ assistantId: f.id }),
    },
    {
      ...NOT_FOUND,
      name: "AssistantService.SetLatestAssistantVersion",
      rest: (f) => ({ method: "POST", path: `/assistants/${f.id}/latest`, body: { version: 1 } }),
      connect: (c, f) => assistants(c).setLatestAssistantVersion({ assistantId: f.id, version: 1 }),
    },
    {
      ...NOT_FOUND,
      name: "AssistantService.GetAssistantGraph",
      rest: (f) => ({ method: "GET", path: `/assistants/${f.id}/graph` }),
      connect: (c, f) => assistants(c).getAssistantGraph({ assistantId: f.id }),
    },
    {
      ...NOT_FOUND,
      name: "AssistantService.GetAssistantSchemas",
      rest: (f) => ({ method: "GET", path: `/assistants/${f.id}/schemas` }),
      connect: (c, f) => assistants(c).getAssistantSchemas({ assistantId: f.id }),
    },
    {
      ...NOT_FOUND,
      name: "AssistantService.GetAssistantSubgraphs",
      rest: (f) => ({ method: "GET", path: `/assistants/${f.id}/subgraphs` }),
      connect: (c, f) => assistants(c).getAssistantSubgraphs({ assistantId: f.id }),
    },
    {
      ...DENIED,
      name: "AssistantService.SearchAssistants with x-tenant-id of A",
      rest: (f) => ({ method: "POST", path: "/assistants/search", body: {}, tenantId: f.workspaceA }),
      connect: (c) => assistants(c).searchAssistants({}),
    },
    {
      ...DENIED,
      name: "AssistantService.CountAssistants with x-tenant-id of A",
      rest: (f) => ({ method: "POST", path: "/assistants/count", body: {}, tenantId: f.workspaceA }),
      connect: (c) => assistants(c).countAssistants({}),
    },
    {
      ...ANSWERED,
      name: "AssistantService.SearchAssistants by metadata",
      rest: () => ({ method: "POST", path: "/assistants/search", body: { metadata: SHARED } }),
      connect: (c) =>
        assistants(c)
          .searchAssistants({ metadata: SHARED })
          .then((r) => r.assistants),
      expectB: listOf(1),
      expectA: listOf(2),
    },
    {
      ...ANSWERED,
      name: "AssistantService.SearchAssistants by name",
      rest: () => ({ method: "POST", path: "/assistants/search", body: { name: "LOOK-ALIKE" } }),
      connect: (c) =>
        assistants(c)
          .searchAssistants({ name: "LOOK-ALIKE" })
          .then((r) => r.assistants),
      expectB: listOf(1),
      expectA: listOf(2),
    },
    {
      ...ANSWERED,
      name: "AssistantService.SearchAssistants by graph_id",
      rest: () => ({ method: "POST", path: "/assistants/search", body: { graph_id: "agent", limit: 1000 } }),
      connect: (c) =>
        assistants(c)
          .searchAssistants({ graphId: "agent", limit: 1000 })
          .then((r) => r.assistants),
    },
    {
      ...ANSWERED,
      name: "AssistantService.SearchAssistants by A's metadata",
      rest: () => ({ method: "POST", path: "/assistants/search", body: { metadata: { owner: "A" } } }),
      connect: (c) =>
        assistants(c)
          .searchAssistants({ metadata: { owner: "A" } })
          .then((r) => r.assistants),
      expectB: listOf(0),
    },
    {
      ...ANSWERED,
      name: "AssistantService.CountAssistants by metadata",
      rest: () => ({ method: "POST", path: "/assistants/count", body: { metadata: SHARED } }),
      connect: (c) =>
        assistants(c)
          .countAssistants({ metadata: SHARED })
          .then((r) => r.count),
      expectB: countOf(1),
      expectA: countOf(2),
    },
    {
      ...ANSWERED,
      name: "AssistantService.CountAssistants by name and graph_id",
      rest: () => ({
        method: "POST",
        path: "/assistants/count",
        body: { name: "look-alike", graph_id: "agent" },
      }),
      connect: (c) =>
        assistants(c)
          .countAssistants({ name: "look-alike", graphId: "agent" })
          .then((r) => r.count),
      expectB: countOf(1),
      expectA: countOf(2),
    },
    {
      ...ANSWERED,
      name: "AssistantService.GetAssistant of an id both workspaces use",
      rest: (f) => ({ method: "GET", path: `/assistants/${f.sharedId}` }),
      connect: (c, f) => assistants(c).getAssistant({ assistantId: f.sharedId }),
      expectB: (assistant) => expect(assistant).toMatchObject({ name: "B's own", version: 1 }),
    },
    {
      ...ANSWERED,
      name: "AssistantService.ListAssistantVersions of an id both workspaces use",
      rest: (f) => ({ method: "POST", path: `/assistants/${f.sharedId}/versions`, body: {} }),
      connect: (c, f) =>
        assistants(c)
          .listAssistantVersions({ assistantId: f.sharedId })
          .then((r) => r.versions),
      expectB: listOf(1),
    },
    {
      ...ANSWERED,
      name: "AssistantService.ListAssistantVersions by A's metadata",
      rest: (f) => ({
        method: "POST",
        path: `/assistants/${f.sharedId}/versions`,
        body: { metadata: { secret: SECRET } },
      }),
      connect: (c, f) =>
        assistants(c)
          .listAssistantVersions({ assistantId: f.sharedId, metadata: { secret: SECRET } })
          .then((r) => r.versions),
      expectB: listOf(0),
    },
  ],
  async verify({ adminA, workspaceB, t }, f) {
    const a = await assistants(adminA).getAssistant({ assistantId: f.id });
    expect(a).toMatchObject({ name: "secret of A", version: 1, metadata: { owner: "A" } });
    const versions = await assistants(adminA).listAssistantVersions({ assistantId: f.sharedId });
    expect(versions.versions.map((v) => v.version)).toEqual([2, 1]);
    // A viewer of B lists B's system assistant and B's own assistants, never A's.
    const keyB = await adminA.iam.apiKeys.createApiKey({
      kind: "service",
      workspaceIds: [workspaceB],
      role: "viewer",
      organizationRole: "viewer",
    });
    const res = await t.fetch("/assistants/search", {
      method: "POST",
      apiKey: keyB.key,
      body: JSON.stringify({ limit: 1000 }),
    });
    expect(res.status).toBe(200);
    const names = ((await res.json()) as { name: string }[]).map((x) => x.name);
    expect(names.sort()).toEqual(["B's own", "agent", LOOK_ALIKE].sort());
  },
});
