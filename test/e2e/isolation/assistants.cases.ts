import { Code, createClient } from "@connectrpc/connect";
import { expect } from "vitest";
import { AssistantService } from "../../../gen/agentplane/agents/v1/assistant_service_pb.js";
import type { AgentplaneClient } from "../../../sdk/index.js";
import { isolationSuite } from "./isolation-suite.js";

const assistants = (c: AgentplaneClient) => createClient(AssistantService, c.transport);

/** Assistants: an assistant of workspace A, by id. */
export const suite = isolationSuite({
  service: "assistants",
  async setup({ adminA, workspaceA }) {
    const created = await assistants(adminA).createAssistant({
      graphId: "agent",
      name: "secret of A",
      metadata: { owner: "A" },
    });
    return { workspaceA, id: created.assistantId! };
  },
  cases: [
    {
      name: "AssistantService.GetAssistant",
      rest: (f) => ({ method: "GET", path: `/assistants/${f.id}` }),
      connect: (c, f) => assistants(c).getAssistant({ assistantId: f.id }),
      status: 404,
      code: Code.NotFound,
    },
    {
      name: "AssistantService.UpdateAssistant",
      rest: (f) => ({ method: "PATCH", path: `/assistants/${f.id}`, body: { name: "taken over" } }),
      connect: (c, f) => assistants(c).updateAssistant({ assistantId: f.id, name: "taken over" }),
      status: 404,
      code: Code.NotFound,
    },
    {
      name: "AssistantService.DeleteAssistant",
      rest: (f) => ({ method: "DELETE", path: `/assistants/${f.id}?delete_threads=true` }),
      connect: (c, f) => assistants(c).deleteAssistant({ assistantId: f.id, deleteThreads: true }),
      status: 404,
      code: Code.NotFound,
    },
    {
      name: "AssistantService.ListAssistantVersions",
      rest: (f) => ({ method: "POST", path: `/assistants/${f.id}/versions`, body: {} }),
      connect: (c, f) => assistants(c).listAssistantVersions({ assistantId: f.id }),
      status: 404,
      code: Code.NotFound,
    },
    {
      name: "AssistantService.SetLatestAssistantVersion",
      rest: (f) => ({ method: "POST", path: `/assistants/${f.id}/latest`, body: { version: 1 } }),
      connect: (c, f) => assistants(c).setLatestAssistantVersion({ assistantId: f.id, version: 1 }),
      status: 404,
      code: Code.NotFound,
    },
    {
      name: "AssistantService.GetAssistantGraph",
      rest: (f) => ({ method: "GET", path: `/assistants/${f.id}/graph` }),
      connect: (c, f) => assistants(c).getAssistantGraph({ assistantId: f.id }),
      status: 404,
      code: Code.NotFound,
    },
    {
      name: "AssistantService.GetAssistantSchemas",
      rest: (f) => ({ method: "GET", path: `/assistants/${f.id}/schemas` }),
      connect: (c, f) => assistants(c).getAssistantSchemas({ assistantId: f.id }),
      status: 404,
      code: Code.NotFound,
    },
    {
      name: "AssistantService.GetAssistantSubgraphs",
      rest: (f) => ({ method: "GET", path: `/assistants/${f.id}/subgraphs` }),
      connect: (c, f) => assistants(c).getAssistantSubgraphs({ assistantId: f.id }),
      status: 404,
      code: Code.NotFound,
    },
    {
      name: "AssistantService.SearchAssistants with x-tenant-id of A",
      rest: (f) => ({ method: "POST", path: "/assistants/search", body: {}, tenantId: f.workspaceA }),
      connect: (c) => assistants(c).searchAssistants({}),
      status: 403,
      code: Code.PermissionDenied,
    },
    {
      name: "AssistantService.CountAssistants with x-tenant-id of A",
      rest: (f) => ({ method: "POST", path: "/assistants/count", body: {}, tenantId: f.workspaceA }),
      connect: (c) => assistants(c).countAssistants({}),
      status: 403,
      code: Code.PermissionDenied,
    },
  ],
  async verify({ adminA, workspaceB, t }, f) {
    const a = await assistants(adminA).getAssistant({ assistantId: f.id });
    expect(a).toMatchObject({ name: "secret of A", version: 1, metadata: { owner: "A" } });
    // B's own search lists B's system assistant and never A's assistant.
    const keyB = await adminA.apiKeys.createApiKey({
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
    const names = ((await res.json()) as { assistant_id: string; name: string }[]).map((x) => x.name);
    expect(names).toEqual(["agent"]);
  },
});
