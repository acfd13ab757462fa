import { Code } from "@connectrpc/connect";
import { expect } from "vitest";
import { isolationSuite } from "./isolation-suite.js";

/** IAM: workspaces and API keys of workspace A. */
export const suite = isolationSuite({
  service: "iam",
  async setup({ adminA, workspaceA }) {
    const adminKeyIdA = (await adminA.identity.whoami({})).apiKeyId;
    return { workspaceA, adminKeyIdA };
  },
  cases: [
    {
      name: "WorkspaceService.GetWorkspace",
      rest: (f) => ({ method: "GET", path: `/api/v1/workspaces/${f.workspaceA}` }),
      connect: (c, f) => c.workspaces.getWorkspace({ workspaceId: f.workspaceA }),
      status: 404,
      code: Code.NotFound,
    },
    {
      name: "WorkspaceService.DeleteWorkspace",
      rest: (f) => ({ method: "DELETE", path: `/api/v1/workspaces/${f.workspaceA}` }),
      connect: (c, f) => c.workspaces.deleteWorkspace({ workspaceId: f.workspaceA }),
      status: 404,
      code: Code.NotFound,
    },
    {
      name: "WorkspaceService.GetCurrentWorkspace with x-tenant-id of A",
      rest: (f) => ({ method: "GET", path: "/api/v1/workspaces/current", tenantId: f.workspaceA }),
      connect: (c) => c.workspaces.getCurrentWorkspace({}),
      status: 403,
      code: Code.PermissionDenied,
    },
    {
      name: "ApiKeyService.RevokeApiKey of A's admin key",
      rest: (f) => ({ method: "DELETE", path: `/api/v1/api-key/${f.adminKeyIdA}` }),
      connect: (c, f) => c.apiKeys.revokeApiKey({ apiKeyId: f.adminKeyIdA }),
      status: 404,
      code: Code.NotFound,
    },
    {
      name: "ApiKeyService.CreateApiKey scoped to A",
      rest: (f) => ({
        method: "POST",
        path: "/api/v1/api-key",
        body: { kind: "service", workspace_ids: [f.workspaceA] },
      }),
      connect: (c, f) => c.apiKeys.createApiKey({ kind: "service", workspaceIds: [f.workspaceA] }),
      status: 403,
      code: Code.PermissionDenied,
    },
  ],
  async verify({ adminA, workspaceA }) {
    expect((await adminA.workspaces.getWorkspace({ workspaceId: workspaceA })).id).toBe(workspaceA);
    expect((await adminA.identity.whoami({})).workspace?.id).toBe(workspaceA);
  },
});
