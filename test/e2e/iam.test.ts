import { createHash } from "node:crypto";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code } from "../../sdk/index.js";
import { connectFailure } from "../support/call-failures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** A key that expires while the test watches: long enough to be used once first, short enough to wait for. */
const KEY_LIFETIME_MS = 1_000;

let t: TestApp;
let db: postgres.Sql;

beforeAll(async () => {
  t = await startTestApp();
  db = postgres(t.databaseUrl, { max: 2, onnotice: () => {} });
});
afterAll(async () => {
  await db?.end();
  await t?.stop();
});

async function createServiceKey(body: Record<string, unknown>): Promise<{ key: string; id: string }> {
  const res = await t.fetch("/api/v1/api-key", {
    method: "POST",
    body: JSON.stringify({ kind: "service", ...body }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { key: string; id: string };
}

describe("authentication", () => {
  it("answers 401 with a detail when the key is missing or wrong", async () => {
    const missing = await t.fetch("/api/v1/whoami", { apiKey: null });
    expect(missing.status).toBe(401);
    expect(await missing.json()).toEqual({ detail: "missing API key: send it in the x-api-key header" });

    const wrong = await t.fetch("/api/v1/whoami", { apiKey: "ap_pt_nope" });
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toEqual({ detail: "invalid API key: it is unknown, revoked or expired" });

    const err = await connectFailure(t.client({ apiKey: "ap_pt_nope" }).iam.identity.whoami({}));
    expect(err.code).toBe(Code.Unauthenticated);
  });

  it("accepts the key as a bearer token too", async () => {
    const res = await t.fetch("/api/v1/whoami", {
      apiKey: null,
      headers: { authorization: `Bearer ${t.adminKey}` },
    });
    expect(res.status).toBe(200);
  });

  it("whoami answers the same over REST, Connect JSON, Connect binary and gRPC-Web", async () => {
    const rest = (await (await t.fetch("/api/v1/whoami")).json()) as Record<string, unknown>;
    expect(rest).toMatchObject({
      organization: { display_name: "Default organization", plan: "enterprise" },
      user: { email: "admin@example.com" },
      api_key_kind: "personal",
      organization_role: "admin",
      workspace: { display_name: "Default workspace", tenant_handle: "default", role: "admin" },
    });
    expect(rest.permissions).toContain("workspaces:manage");
    expect(rest.permissions).toContain("bulk-exports:manage");
    for (const protocol of ["connect", "connect-binary", "grpc-web"] as const) {
      const me = await t.client({ protocol }).iam.identity.whoami({});
      expect(me.organization?.id).toBe((rest.organization as { id: string }).id);
      expect(me.workspace?.id).toBe((rest.workspace as { id: string }).id);
      expect(me.permissions).toEqual(rest.permissions);
      expect(me.apiKeyShortKey).toBe(rest.api_key_short_key);
    }
  });

  it("records last_used_at", async () => {
    await t.client().iam.identity.whoami({});
    const keys = await t.client().iam.apiKeys.listApiKeys({});
    const admin = keys.apiKeys.find((k) => k.description === "admin key created at first start");
    expect(admin?.lastUsedAt).toBeDefined();
  });
});

describe("workspaces", () => {
  it("creates, lists and gets workspaces", async () => {
    const res = await t.fetch("/api/v1/workspaces", {
      method: "POST",
      body: JSON.stringify({ display_name: "Research", tenant_handle: "research" }),
    });
    expect(res.status).toBe(200);
    const created = (await res.json()) as Record<string, unknown>;
    expect(created).toMatchObject({ display_name: "Research", tenant_handle: "research", role: "admin" });
    // A field at its default is left out, as Connect JSON leaves it out.
    expect(created).not.toHaveProperty("is_personal");
    expect(created.created_at).toMatch(/^\d{4}-\d\d-\d\dT/);

    const list = (await (await t.fetch("/api/v1/workspaces")).json()) as { id: string }[];
    expect(Array.isArray(list)).toBe(true);
    expect(list.map((w) => w.id)).toContain(created.id);

    const got = await t.client().iam.workspaces.getWorkspace({ workspaceId: created.id as string });
    expect(got.displayName).toBe("Research");
  });

  it("derives a handle when none is given", async () => {
    const ws = await t.client().iam.workspaces.createWorkspace({ displayName: "Data Science & ML!" });
    expect(ws.tenantHandle).toMatch(/^data-science-ml-[0-9a-f]{6}$/);
  });

  it("rejects bad input with 4xx and a message", async () => {
    const cases: [string, number, string][] = [
      [JSON.stringify({ display_name: "" }), 422, "display_name must be 1 to 200 characters"],
      [JSON.stringify({ display_name: "x", tenant_handle: "Not OK" }), 422, "tenant_handle must be"],
      [
        JSON.stringify({ display_name: "x", tenant_handle: "research" }),
        409,
        'tenant_handle "research" already exists',
      ],
      ["{not json", 400, ""],
    ];
    await t
      .client()
      .iam.workspaces.createWorkspace({ displayName: "R", tenantHandle: "research" })
      .catch(() => undefined);
    for (const [body, status, detail] of cases) {
      const res = await t.fetch("/api/v1/workspaces", { method: "POST", body });
      expect(res.status, body).toBe(status);
      expect(((await res.json()) as { detail: string }).detail).toContain(detail);
    }
    const notUuid = await t.fetch("/api/v1/workspaces/abc");
    expect(notUuid.status).toBe(422);
    const missing = await t.fetch("/api/v1/workspaces/00000000-0000-4000-8000-000000000000");
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({
      detail: "workspace 00000000-0000-4000-8000-000000000000 not found",
    });
  });

  it("deletes a workspace in the background and refuses to delete the last one", async () => {
    const ws = await t.client().iam.workspaces.createWorkspace({ displayName: "Doomed" });
    const res = await t.fetch(`/api/v1/workspaces/${ws.id}`, { method: "DELETE" });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({});
    expect((await t.fetch(`/api/v1/workspaces/${ws.id}`)).status).toBe(404);
    await expect
      .poll(async () => (await db`select 1 from workspaces where id = ${ws.id}`).length, { timeout: 10_000 })
      .toBe(0);

    const all = await t.client().iam.workspaces.listWorkspaces({});
    for (const w of all.workspaces.slice(1))
      await t.client().iam.workspaces.deleteWorkspace({ workspaceId: w.id });
    const last = all.workspaces[0]!;
    const refused = await t.fetch(`/api/v1/workspaces/${last.id}`, { method: "DELETE" });
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { detail: string }).detail).toContain("last workspace");
  });
});

describe("API keys", () => {
  it("shows the key once, stores only its SHA-256 and lists it redacted", async () => {
    const created = await t.client().iam.apiKeys.createApiKey({ description: "ci", kind: "service" });
    expect(created.key).toMatch(/^ap_sk_/);
    expect(created.shortKey).toBe(`ap_sk_...${created.key.slice(-4)}`);
    expect(created.workspaceIds).toEqual([]);
    expect(created.role).toBe("editor");
    expect(created.organizationRole).toBe("viewer");
    const [row] = await db`select key_hash from api_keys where id = ${created.id}`;
    expect(Buffer.from(row!.key_hash).equals(createHash("sha256").update(created.key).digest())).toBe(true);
    const rows = await db`select * from api_keys where id = ${created.id}`;
    expect(JSON.stringify(rows)).not.toContain(created.key);

    const listed = (await (await t.fetch("/api/v1/api-key")).json()) as {
      id: string;
      key: string;
      short_key: string;
    }[];
    const mine = listed.find((k) => k.id === created.id);
    expect(mine).not.toHaveProperty("key");
    expect(mine?.short_key).toBe(created.shortKey);
  });

  it("answers the same list over REST and Connect JSON: absent fields are left out by both", async () => {
    await t.client().iam.apiKeys.createApiKey({ description: "", kind: "service" });
    const rest = (await (await t.fetch("/api/v1/api-key")).json()) as Record<string, unknown>[];
    const connect = await fetch(`${t.baseUrl}/agentplane.iam.v1.ApiKeyService/ListApiKeys`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": t.adminKey },
      body: "{}",
    });
    const { apiKeys } = (await connect.json()) as { apiKeys: Record<string, unknown>[] };
    const snakeCase = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    const asRest = apiKeys.map((k) =>
      Object.fromEntries(Object.entries(k).map(([n, v]) => [snakeCase(n), v])),
    );
    expect(rest).toEqual(asRest);
    expect(JSON.stringify(rest)).not.toContain('""');
  });

  it("revokes a key so that it answers 401", async () => {
    const { key, id } = await createServiceKey({ description: "short-lived" });
    expect((await t.fetch("/api/v1/whoami", { apiKey: key })).status).toBe(200);
    const revoked = await t.fetch(`/api/v1/api-key/${id}`, { method: "DELETE" });
    expect(revoked.status).toBe(200);
    expect(((await revoked.json()) as { revoked_at: string }).revoked_at).toMatch(/^\d{4}-/);
    expect((await t.fetch("/api/v1/whoami", { apiKey: key })).status).toBe(401);
    const listed = await t.client().iam.apiKeys.listApiKeys({});
    expect(listed.apiKeys.map((k) => k.id)).not.toContain(id);
  });

  it("stops accepting an expired key the moment it expires, though the server keeps keys it resolved", async () => {
    const soon = new Date(Date.now() + KEY_LIFETIME_MS);
    const created = await t
      .client()
      .iam.apiKeys.createApiKey({ kind: "service", expiresAt: timestampFromDate(soon) });
    expect((await t.fetch("/api/v1/whoami", { apiKey: created.key })).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, soon.getTime() - Date.now() + 1));
    expect((await t.fetch("/api/v1/whoami", { apiKey: created.key })).status).toBe(401);
    const past = await connectFailure(
      t.client().iam.apiKeys.createApiKey({
        kind: "service",
        expiresAt: timestampFromDate(new Date(Date.now() - 1000)),
      }),
    );
    expect(past.code).toBe(Code.InvalidArgument);
    expect(past.rawMessage).toBe("expires_at must be in the future");
  });

  it("validates roles, kinds and workspace ids", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ kind: "robot" }, 'kind must be "personal" or "service", not "robot"'],
      [{ kind: "service", role: "owner" }, 'role must be one of admin, editor, viewer; got "owner"'],
      [
        { kind: "service", organization_role: "root" },
        "organization_role must be one of admin, operator, user, viewer",
      ],
      [{ kind: "service", workspace_ids: ["nope"] }, 'workspace_ids must be a UUID, got "nope"'],
      [
        { kind: "service", workspace_ids: ["00000000-0000-4000-8000-000000000000"] },
        "workspace_ids: workspace 00000000-0000-4000-8000-000000000000 not found",
      ],
      [{ kind: "personal", role: "viewer" }, "apply to service keys only"],
      [{ kind: "service", expires_at: "tomorrow" }, "expires_at"],
    ];
    for (const [body, detail] of cases) {
      const res = await t.fetch("/api/v1/api-key", { method: "POST", body: JSON.stringify(body) });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(((await res.json()) as { detail: string }).detail).toContain(detail);
    }
  });
});

describe("workspace selection and permissions", () => {
  let a: string;
  let b: string;
  beforeAll(async () => {
    a = (await t.client().iam.workspaces.createWorkspace({ displayName: "A" })).id;
    b = (await t.client().iam.workspaces.createWorkspace({ displayName: "B" })).id;
  });

  it("a personal key falls back to its default workspace and honours x-tenant-id", async () => {
    const current = await t.client().iam.workspaces.getCurrentWorkspace({});
    expect(current.tenantHandle).toBe("default");
    const chosen = await t.client({ tenantId: b }).iam.workspaces.getCurrentWorkspace({});
    expect(chosen.id).toBe(b);
    const bad = await t.fetch("/api/v1/workspaces/current", { tenantId: "not-a-uuid" });
    expect(bad.status).toBe(422);
    expect(await bad.json()).toEqual({ detail: "x-tenant-id must be a workspace UUID" });
  });

  it("a service key over several workspaces must send x-tenant-id", async () => {
    const { key } = await createServiceKey({ workspace_ids: [a, b], role: "viewer" });
    const res = await t.fetch("/api/v1/workspaces/current", { apiKey: key });
    expect(res.status).toBe(403);
    expect(((await res.json()) as { detail: string }).detail).toBe(
      "this service key can act in several workspaces: send the x-tenant-id header naming one of them",
    );
    const ok = await t.fetch("/api/v1/workspaces/current", { apiKey: key, tenantId: a });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { role: string }).role).toBe("viewer");
    const me = (await (await t.fetch("/api/v1/whoami", { apiKey: key })).json()) as Record<string, unknown>;
    expect(me.workspace).toBeUndefined();
    expect(me.user).toBeUndefined();
    expect(me.api_key_kind).toBe("service");
  });

  it("a service key scoped to one workspace uses it by default and reaches no other", async () => {
    const { key } = await createServiceKey({ workspace_ids: [a] });
    const current = (await (await t.fetch("/api/v1/workspaces/current", { apiKey: key })).json()) as {
      id: string;
    };
    expect(current.id).toBe(a);
    const other = await t.fetch("/api/v1/workspaces/current", { apiKey: key, tenantId: b });
    expect(other.status).toBe(403);
    expect(((await other.json()) as { detail: string }).detail).toBe(
      `permission denied: this API key has no access to workspace ${b}`,
    );
    const list = (await (await t.fetch("/api/v1/workspaces", { apiKey: key })).json()) as { id: string }[];
    expect(list.map((w) => w.id)).toEqual([a]);
  });

  it("checks organization permissions by role", async () => {
    const viewer = await createServiceKey({ workspace_ids: [a], organization_role: "viewer" });
    const denied = await t.fetch("/api/v1/workspaces", {
      method: "POST",
      apiKey: viewer.key,
      body: JSON.stringify({ display_name: "nope" }),
    });
    expect(denied.status).toBe(403);
    expect(await denied.json()).toEqual({
      detail: "permission denied: this call needs the workspaces:manage permission",
    });
    const noKeys = await t.fetch("/api/v1/api-key", {
      method: "POST",
      apiKey: viewer.key,
      body: JSON.stringify({ kind: "service" }),
    });
    expect(noKeys.status).toBe(403);
    const personal = await t.fetch("/api/v1/api-key", {
      method: "POST",
      apiKey: viewer.key,
      body: JSON.stringify({ kind: "personal" }),
    });
    expect(personal.status).toBe(403);

    const operator = await createServiceKey({ workspace_ids: [a], organization_role: "operator" });
    const made = await t.fetch("/api/v1/workspaces", {
      method: "POST",
      apiKey: operator.key,
      body: JSON.stringify({ display_name: "Operated" }),
    });
    expect(made.status).toBe(200);
    const madeWs = (await made.json()) as { id: string; role: string };
    // The creating key is widened to the workspace it made.
    const visible = (await (await t.fetch("/api/v1/workspaces", { apiKey: operator.key })).json()) as {
      id: string;
    }[];
    expect(visible.map((w) => w.id)).toContain(madeWs.id);
  });
});
