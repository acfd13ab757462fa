import { expect } from "vitest";
import { ANSWERED, DENIED, isolationSuite, NOT_FOUND } from "./isolation-suite.js";

/** IAM: workspaces and API keys of workspace A. */
export const suite = isolationSuite({
  service: "iam",
  async setup({ adminA, workspaceA, workspaceB }) {
    const adminKeyIdA = (await adminA.iam.identity.whoami({})).apiKeyId;
    return { workspaceA, workspaceB, adminKeyIdA };
  },
  secrets: (f) => [f.workspaceA],
  cases: [
    {
      ...NOT_FOUND,
      name: "WorkspaceService.GetWorkspace",
      rest: (f) => ({ method: "GET", path: `/api/v1/workspaces/${f.workspaceA}` }),
      connect: (c, f) => c.iam.workspaces.getWorkspace({ workspaceId: f.workspaceA }),
    },
    {
      ...NOT_FOUND,
      name: "WorkspaceService.DeleteWorkspace",
      rest: (f) => ({ method: "DELETE", path: `/api/v1/workspaces/${f.workspaceA}` }),
      connect: (c, f) => c.iam.workspaces.deleteWorkspace({ workspaceId: f.workspaceA }),
    },
    {
      ...DENIED,
      name: "WorkspaceService.GetCurrentWorkspace with x-tenant-id of A",
      rest: (f) => ({ method: "GET", path: "/api/v1/workspaces/current", tenantId: f.workspaceA }),
      connect: (c) => c.iam.workspaces.getCurrentWorkspace({}),
    },
    {
      ...ANSWERED,
      name: "WorkspaceService.ListWorkspaces lists B only",
      rest: () => ({ method: "GET", path: "/api/v1/workspaces" }),
      connect: (c) => c.iam.workspaces.listWorkspaces({}).then((r) => r.workspaces),
      expectB: (answer, f) => expect((answer as { id: string }[]).map((w) => w.id)).toEqual([f.workspaceB]),
    },
    {
      ...NOT_FOUND,
      name: "ApiKeyService.RevokeApiKey of A's admin key",
      rest: (f) => ({ method: "DELETE", path: `/api/v1/api-key/${f.adminKeyIdA}` }),
      connect: (c, f) => c.iam.apiKeys.revokeApiKey({ apiKeyId: f.adminKeyIdA }),
    },
    {
      ...DENIED,
      name: "ApiKeyService.CreateApiKey scoped to A",
      rest: (f) => ({
        method: "POST",
        path: "/api/v1/api-key",
        body: { kind: "service", workspace_ids: [f.workspaceA] },
      }),
      connect: (c, f) => c.iam.apiKeys.createApiKey({ kind: "service", workspaceIds: [f.workspaceA] }),
    },
  ],
  async verify({ adminA, workspaceA }) {
    expect((await adminA.iam.workspaces.getWorkspace({ workspaceId: workspaceA })).id).toBe(workspaceA);
    expect((await adminA.iam.identity.whoami({})).workspace?.id).toBe(workspaceA);
  },
});
