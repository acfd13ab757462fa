/**
 * Each process keeps the API keys it resolved for a few seconds. These tests run two servers on one
 * database, A and B, and check that a change made through A, or by hand in SQL, reaches B's cache at
 * once (by NOTIFY, well inside the 5 s a kept key would otherwise live), and A's before A answers.
 */
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** How long a change may take to reach the other server: NOTIFY takes milliseconds; a kept key lives 5 s. */
const PROPAGATION_MS = 2_000;
/** How long to wait before concluding that no notification came. */
const QUIET_MS = 300;
/** How long to wait at most for notifications of earlier tests' background work to stop. */
const SETTLE_MS = 10_000;

let a: TestApp;
let b: TestApp;
let sql: postgres.Sql;

beforeAll(async () => {
  a = await startTestApp();
  b = await startTestApp({ databaseUrl: a.databaseUrl, bootstrapApiKey: a.adminKey, role: "api" });
  sql = postgres(a.databaseUrl, { max: 2, onnotice: () => {} });
});
afterAll(async () => {
  await sql?.end();
  await b?.stop();
  await a?.stop();
});

/** A new service key of A's default workspace with `role`. */
async function serviceKey(role: "viewer" | "editor"): Promise<{ id: string; key: string }> {
  const created = await a.client().iam.apiKeys.createApiKey({ kind: "service", role, description: role });
  return { id: created.id, key: created.key };
}

/** The status of GET /threads/search (a read) on `app` with `key`. */
async function readStatus(app: TestApp, key: string): Promise<number> {
  return (await app.fetch("/threads/search", { method: "POST", body: "{}", apiKey: key })).status;
}

describe("a change to a key reaches every server's cache", () => {
  it("revoking through A refuses the key on A at once and on B by notification", async () => {
    const { id, key } = await serviceKey("viewer");
    expect(await readStatus(a, key)).toBe(200);
    expect(await readStatus(b, key)).toBe(200);
    expect((await a.fetch(`/api/v1/api-key/${id}`, { method: "DELETE" })).status).toBe(200);
    expect(await readStatus(a, key)).toBe(401);
    await expect.poll(() => readStatus(b, key), { timeout: PROPAGATION_MS }).toBe(401);
  });

  it("revoking by hand in SQL refuses the key on both servers", async () => {
    const { id, key } = await serviceKey("viewer");
    expect(await readStatus(a, key)).toBe(200);
    expect(await readStatus(b, key)).toBe(200);
    await sql`update api_keys set revoked_at = now() where id = ${id}`;
    await expect.poll(() => readStatus(a, key), { timeout: PROPAGATION_MS }).toBe(401);
    await expect.poll(() => readStatus(b, key), { timeout: PROPAGATION_MS }).toBe(401);
  });

  it("a member's new role applies on the other server too", async () => {
    const member = await a.client().iam.members.addOrganizationMember({ email: "role@example.com" });
    await a.client().iam.members.addWorkspaceMember({ userId: member.userId, role: "editor" });
    const { key } = await a.client().iam.apiKeys.createApiKey({ userId: member.userId });
    // Naming the workspace makes the key's lookup read the member's role there, so the role is kept with it.
    const tenantId = (await a.client().iam.workspaces.getCurrentWorkspace({})).id;
    const create = (app: TestApp) =>
      app.fetch("/threads", { method: "POST", body: "{}", apiKey: key, tenantId }).then((r) => r.status);
    expect(await create(b)).toBe(200);
    await a.client().iam.members.updateWorkspaceMember({ userId: member.userId, role: "viewer" });
    expect(await create(a)).toBe(403);
    await expect.poll(() => create(b), { timeout: PROPAGATION_MS }).toBe(403);
  });

  it("a deleted workspace is closed to keys kept on the other server", async () => {
    const ws = await a.client().iam.workspaces.createWorkspace({ displayName: "Short-lived" });
    // A service key without workspace_ids acts in every workspace of the organization.
    const { key } = await a.client().iam.apiKeys.createApiKey({ kind: "service", role: "editor" });
    const search = (app: TestApp) =>
      app
        .fetch("/threads/search", { method: "POST", body: "{}", apiKey: key, tenantId: ws.id })
        .then((r) => r.status);
    expect(await search(b)).toBe(200);
    await a.client({ tenantId: ws.id }).iam.workspaces.deleteWorkspace({ workspaceId: ws.id });
    expect(await search(a)).toBe(403);
    await expect.poll(() => search(b), { timeout: PROPAGATION_MS }).toBe(403);
  });
});

describe("what is announced", () => {
  /** The notifications on the identity channel while `change` runs and for a short while after. */
  async function notificationsDuring(change: () => Promise<unknown>): Promise<number> {
    let received = 0;
    let lastAt = Date.now();
    const listener = await sql.listen("agentplane_identity_changed", () => {
      received += 1;
      lastAt = Date.now();
    });
    try {
      // Earlier tests' background work (the purge job of a deleted workspace) announces its own
      // changes: start counting once the channel has been quiet for QUIET_MS.
      const settleBy = Date.now() + SETTLE_MS;
      while (Date.now() - lastAt < QUIET_MS && Date.now() < settleBy) {
        await new Promise((resolve) => setTimeout(resolve, QUIET_MS / 4));
      }
      received = 0;
      await change();
      await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
      return received;
    } finally {
      await listener.unlisten();
    }
  }

  it("announces a key's revocation but not the once-a-minute record of its use", async () => {
    const { id } = await serviceKey("viewer");
    expect(
      await notificationsDuring(() => sql`update api_keys set last_used_at = now() where id = ${id}`),
    ).toBe(0);
    expect(
      await notificationsDuring(() => sql`update api_keys set revoked_at = now() where id = ${id}`),
    ).toBe(1);
  });

  it("announces nothing for a change that is rolled back", async () => {
    const { id } = await serviceKey("viewer");
    const rolledBack = () =>
      sql
        .begin(async (tx) => {
          await tx`update api_keys set revoked_at = now() where id = ${id}`;
          throw new Error("roll back");
        })
        .catch(() => undefined);
    expect(await notificationsDuring(rolledBack)).toBe(0);
  });
});
