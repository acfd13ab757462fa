/**
 * The tenant-isolation table: a key of workspace B can neither read nor change workspace A's
 * resources, through REST and through Connect. Every service adds its RPCs to CASES.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AgentplaneClient, Code, ConnectError } from "../../sdk/index.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** What the fixture holds: workspace A with its resources, and a powerful key confined to B. */
interface Fixture {
  workspaceA: string;
  workspaceB: string;
  adminKeyIdA: string;
}

interface IsolationCase {
  name: string;
  rest: (f: Fixture) => { method: string; path: string; body?: unknown; tenantId?: string };
  connect: (client: AgentplaneClient, f: Fixture) => Promise<unknown>;
  /** The REST status and Connect code a key of B gets. */
  status: number;
  code: Code;
}

const CASES: IsolationCase[] = [
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
];

let t: TestApp;
let f: Fixture;
let keyB: string;

beforeAll(async () => {
  t = await startTestApp();
  const admin = t.client();
  const workspaceA = (await admin.workspaces.getCurrentWorkspace({})).id;
  const workspaceB = (await admin.workspaces.createWorkspace({ displayName: "B" })).id;
  const adminKeyIdA = (await admin.identity.whoami({})).apiKeyId;
  // As strong as a key confined to B can be: workspace admin there, organization operator.
  keyB = (
    await admin.apiKeys.createApiKey({
      kind: "service",
      workspaceIds: [workspaceB],
      role: "admin",
      organizationRole: "operator",
    })
  ).key;
  f = { workspaceA, workspaceB, adminKeyIdA };
});
afterAll(() => t?.stop());

describe("a key of workspace B cannot reach workspace A", () => {
  for (const c of CASES) {
    it(`${c.name} over REST`, async () => {
      const { method, path, body, tenantId } = c.rest(f);
      const res = await t.fetch(path, {
        method,
        apiKey: keyB,
        ...(tenantId ? { tenantId } : {}),
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      expect(res.status).toBe(c.status);
      expect(typeof ((await res.json()) as { detail: unknown }).detail).toBe("string");
    });

    it(`${c.name} over Connect`, async () => {
      const tenantId = c.rest(f).tenantId;
      const client = t.client({ apiKey: keyB, ...(tenantId ? { tenantId } : {}) });
      const error = await c.connect(client, f).then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      expect(error?.code).toBe(c.code);
    });
  }

  it("lists show none of A's workspaces or keys", async () => {
    const workspaces = await t.client({ apiKey: keyB }).workspaces.listWorkspaces({});
    expect(workspaces.workspaces.map((w) => w.id)).toEqual([f.workspaceB]);
    const keys = await t.client({ apiKey: keyB }).apiKeys.listApiKeys({});
    expect(keys.apiKeys).toEqual([]);
  });

  it("nothing of A changed", async () => {
    const a = await t.client().workspaces.getWorkspace({ workspaceId: f.workspaceA });
    expect(a.id).toBe(f.workspaceA);
    expect((await t.fetch("/api/v1/whoami")).status).toBe(200);
  });
});
