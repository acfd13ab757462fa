import { randomUUID } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemberService } from "../../gen/agentplane/iam/v1/member_service_pb.js";
import { Code } from "../../sdk/index.js";
import { connectFailure } from "../support/call-failures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

let t: TestApp;
let db: postgres.Sql;
/** The bootstrap admin's user id. */
let adminId: string;
/** A user of another organization, inserted straight into the database. */
let foreignUserId: string;
const FOREIGN_EMAIL = "someone@other.example";

beforeAll(async () => {
  t = await startTestApp();
  db = postgres(t.databaseUrl, { max: 2, onnotice: () => {} });
  adminId = (await t.client().iam.identity.whoami({})).user?.id ?? "";
  const orgId = randomUUID();
  foreignUserId = randomUUID();
  await db`insert into organizations (id, display_name, plan) values (${orgId}, 'Other', 'developer')`;
  await db`insert into users (id, email, full_name) values (${foreignUserId}, ${FOREIGN_EMAIL}, 'Someone')`;
  await db`insert into organization_members (organization_id, user_id, role) values (${orgId}, ${foreignUserId}, 'admin')`;
});
afterAll(async () => {
  await db?.end();
  await t?.stop();
});

const members = (apiKey?: string) =>
  createClient(MemberService, t.client(apiKey ? { apiKey } : {}).transport);

async function call(
  method: string,
  path: string,
  body?: unknown,
  apiKey?: string,
): Promise<{ status: number; json: unknown }> {
  const res = await t.fetch(path, {
    method,
    ...(apiKey ? { apiKey } : {}),
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: await res.json() };
}

async function addMember(email: string, role = "user"): Promise<{ user_id: string }> {
  const res = await call("POST", "/api/v1/orgs/current/members", { email, organization_role: role });
  expect(res.status).toBe(200);
  return res.json as { user_id: string };
}

async function permissions(apiKey: string): Promise<string[]> {
  return (await t.client({ apiKey }).iam.identity.whoami({})).permissions;
}

describe("organization members", () => {
  it("lists the members as a bare array, the same over REST and Connect", async () => {
    const res = await call("GET", "/api/v1/orgs/current/members");
    expect(res.status).toBe(200);
    const list = res.json as Record<string, unknown>[];
    const admin = list.find((m) => m.user_id === adminId);
    expect(Object.keys(admin ?? {}).sort()).toEqual([
      "created_at",
      "email",
      "full_name",
      "organization_role",
      "user_id",
    ]);
    expect(admin).toMatchObject({ email: "admin@example.com", organization_role: "admin" });
    const viaConnect = await members().listOrganizationMembers({});
    expect(viaConnect.members.map((m) => m.userId)).toEqual(list.map((m) => m.user_id));
  });

  it("adds a user whose email belongs to another organization too, as the same global user", async () => {
    const res = await call("POST", "/api/v1/orgs/current/members", {
      email: `  ${FOREIGN_EMAIL.toUpperCase()} `,
      full_name: "Ignored, the user exists",
    });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      user_id: foreignUserId,
      email: FOREIGN_EMAIL,
      full_name: "Someone",
      organization_role: "user",
    });
    const [other] =
      await db`select role from organization_members where user_id = ${foreignUserId} and role = 'admin'`;
    expect(other).toBeDefined();
    await call("DELETE", `/api/v1/orgs/current/members/${foreignUserId}`);
  });

  it("answers 409 when the email is a member already", async () => {
    await addMember("twice@example.com");
    const again = await call("POST", "/api/v1/orgs/current/members", { email: "TWICE@example.com" });
    expect(again).toEqual({
      status: 409,
      json: { detail: "TWICE@example.com is already a member of the organization" },
    });
  });

  it("refuses to demote or remove the last admin, and allows it when another admin remains", async () => {
    const demote = await call("PATCH", `/api/v1/orgs/current/members/${adminId}`, {
      organization_role: "user",
    });
    expect(demote).toEqual({
      status: 409,
      json: {
        detail: "the last admin of the organization cannot be demoted: make another member admin first",
      },
    });
    const remove = await connectFailure(members().removeOrganizationMember({ userId: adminId }));
    expect(remove.code).toBe(Code.FailedPrecondition);
    expect(remove.rawMessage).toContain("the last admin of the organization cannot be removed");

    const bob = await addMember("bob@example.com", "admin");
    const demoteBob = await members().updateOrganizationMember({
      userId: bob.user_id,
      organizationRole: "operator",
    });
    expect(demoteBob.organizationRole).toBe("operator");
    expect(
      (await call("PATCH", `/api/v1/orgs/current/members/${bob.user_id}`, { organization_role: "admin" }))
        .status,
    ).toBe(200);
    expect((await call("DELETE", `/api/v1/orgs/current/members/${bob.user_id}`)).status).toBe(200);
    expect((await call("DELETE", `/api/v1/orgs/current/members/${adminId}`)).status).toBe(409);
  });

  it("rejects bad input with 422 and a message", async () => {
    const cases: [string, string, unknown, string][] = [
      ["POST", "/api/v1/orgs/current/members", { email: " " }, "email is required"],
      [
        "POST",
        "/api/v1/orgs/current/members",
        { email: "not-an-email" },
        'email "not-an-email" is not an email address',
      ],
      ["POST", "/api/v1/orgs/current/members", { email: "a@b" }, 'email "a@b" is not an email address'],
      [
        "POST",
        "/api/v1/orgs/current/members",
        { email: `${"a".repeat(310)}@example.com` },
        "email must be at most 320 characters",
      ],
      [
        "POST",
        "/api/v1/orgs/current/members",
        { email: "x@example.com", full_name: "n".repeat(201) },
        "full_name must be at most 200 characters",
      ],
      [
        "POST",
        "/api/v1/orgs/current/members",
        { email: "x@example.com", organization_role: "owner" },
        'organization_role must be one of admin, operator, user, viewer; got "owner"',
      ],
      [
        "PATCH",
        "/api/v1/orgs/current/members/nope",
        { organization_role: "user" },
        'user_id must be a UUID, got "nope"',
      ],
      [
        "PATCH",
        `/api/v1/orgs/current/members/${adminId}`,
        {},
        'organization_role must be one of admin, operator, user, viewer; got ""',
      ],
      ["DELETE", "/api/v1/orgs/current/members/nope", undefined, 'user_id must be a UUID, got "nope"'],
      [
        "POST",
        "/api/v1/workspaces/current/members",
        { user_id: "nope" },
        'user_id must be a UUID, got "nope"',
      ],
      [
        "POST",
        "/api/v1/workspaces/current/members",
        { user_id: adminId, role: "owner" },
        'role must be one of admin, editor, viewer; got "owner"',
      ],
      [
        "PATCH",
        `/api/v1/workspaces/current/members/${adminId}`,
        { role: "boss" },
        'role must be one of admin, editor, viewer; got "boss"',
      ],
      ["DELETE", "/api/v1/workspaces/current/members/nope", undefined, 'user_id must be a UUID, got "nope"'],
      ["POST", "/api/v1/api-key", { user_id: "nope" }, 'user_id must be a UUID, got "nope"'],
      [
        "POST",
        "/api/v1/api-key",
        { kind: "service", user_id: adminId },
        "user_id applies to personal keys only",
      ],
    ];
    for (const [method, path, body, detail] of cases) {
      expect({ method, path, ...(await call(method, path, body)) }).toEqual({
        method,
        path,
        status: 422,
        json: { detail },
      });
    }
    expect(
      (await call("POST", "/api/v1/orgs/current/members", { email: "x@example.com", role: "admin" })).status,
    ).toBe(422);
  });

  it("answers 404 for users who are not members", async () => {
    const stranger = randomUUID();
    for (const userId of [stranger, foreignUserId]) {
      const notInOrg = `user ${userId} is not a member of the organization`;
      expect(
        await call("PATCH", `/api/v1/orgs/current/members/${userId}`, { organization_role: "user" }),
      ).toEqual({
        status: 404,
        json: { detail: notInOrg },
      });
      expect((await call("DELETE", `/api/v1/orgs/current/members/${userId}`)).status).toBe(404);
      expect(await call("POST", "/api/v1/workspaces/current/members", { user_id: userId })).toEqual({
        status: 404,
        json: { detail: notInOrg },
      });
      expect(await call("POST", "/api/v1/api-key", { user_id: userId })).toEqual({
        status: 404,
        json: { detail: notInOrg },
      });
    }
    const outsider = await addMember("not-in-workspace@example.com");
    const notInWorkspace = `user ${outsider.user_id} is not a member of the workspace`;
    expect(
      await call("PATCH", `/api/v1/workspaces/current/members/${outsider.user_id}`, { role: "editor" }),
    ).toEqual({
      status: 404,
      json: { detail: notInWorkspace },
    });
    const err = await connectFailure(members().removeWorkspaceMember({ userId: outsider.user_id }));
    expect(err.code).toBe(Code.NotFound);
  });
});

describe("a new member's lifecycle", () => {
  it("gets a key from the admin, acts with its roles, and loses access when removed", async () => {
    const alice = await addMember("Alice@Example.com");
    const key = await t
      .client()
      .iam.apiKeys.createApiKey({ userId: alice.user_id, description: "first key" });
    expect(key).toMatchObject({ kind: "personal", userId: alice.user_id, description: "first key" });
    expect(key.key).toMatch(/^ap_/);
    const listed = await t.client({ apiKey: key.key }).iam.apiKeys.listApiKeys({});
    expect(listed.apiKeys.map((k) => [k.id, k.key])).toEqual([[key.id, ""]]);

    const me = await t.client({ apiKey: key.key }).iam.identity.whoami({});
    expect(me).toMatchObject({ organizationRole: "user", user: { email: "Alice@Example.com" } });
    expect(me.workspace).toBeUndefined();
    expect((await call("GET", "/api/v1/workspaces/current", undefined, key.key)).status).toBe(403);
    // An organization "user" may neither manage members nor issue keys for others.
    expect(
      (await call("POST", "/api/v1/orgs/current/members", { email: "c@example.com" }, key.key)).status,
    ).toBe(403);
    expect((await call("POST", "/api/v1/api-key", { user_id: adminId }, key.key)).status).toBe(403);
    const own = await call("POST", "/api/v1/api-key", { user_id: alice.user_id }, key.key);
    expect(own).toMatchObject({ status: 200, json: { user_id: alice.user_id, kind: "personal" } });
    expect((await call("GET", "/api/v1/orgs/current/members", undefined, key.key)).status).toBe(200);

    const added = await members().addWorkspaceMember({ userId: alice.user_id });
    expect(added).toMatchObject({ userId: alice.user_id, email: "Alice@Example.com", role: "viewer" });
    expect(
      (await call("POST", "/api/v1/workspaces/current/members", { user_id: alice.user_id })).status,
    ).toBe(409);

    const current = await call("GET", "/api/v1/workspaces/current", undefined, key.key);
    expect(current).toMatchObject({ status: 200, json: { role: "viewer" } });
    expect((await call("POST", "/api/v1/workspaces", { display_name: "Mine" }, key.key)).status).toBe(403);
    const wsMembers = await call("GET", "/api/v1/workspaces/current/members", undefined, key.key);
    expect(wsMembers.status).toBe(200);
    // Alice has no full name: the field is left out, as Connect JSON leaves it out.
    expect(wsMembers.json).toContainEqual({
      user_id: alice.user_id,
      email: "Alice@Example.com",
      role: "viewer",
    });
    expect(
      (await call("PATCH", `/api/v1/workspaces/current/members/${alice.user_id}`, { role: "admin" }, key.key))
        .status,
    ).toBe(403);
    expect(await permissions(key.key)).not.toContain("projects:create");

    const promoted = await call("PATCH", `/api/v1/workspaces/current/members/${alice.user_id}`, {
      role: "editor",
    });
    expect(promoted).toMatchObject({ status: 200, json: { role: "editor" } });
    expect((await t.client({ apiKey: key.key }).iam.workspaces.getCurrentWorkspace({})).role).toBe("editor");
    expect(await permissions(key.key)).toContain("projects:create");
    expect(await permissions(key.key)).not.toContain("workspace-members:manage");
    await members().updateWorkspaceMember({ userId: alice.user_id, role: "admin" });
    expect(await permissions(key.key)).toContain("workspace-members:manage");

    expect(await call("DELETE", `/api/v1/workspaces/current/members/${alice.user_id}`)).toEqual({
      status: 200,
      json: {},
    });
    expect((await call("GET", "/api/v1/workspaces/current", undefined, key.key)).status).toBe(403);
    expect((await call("DELETE", `/api/v1/workspaces/current/members/${alice.user_id}`)).status).toBe(404);

    await members().addWorkspaceMember({ userId: alice.user_id, role: "editor" });
    expect(await call("DELETE", `/api/v1/orgs/current/members/${alice.user_id}`)).toEqual({
      status: 200,
      json: {},
    });
    expect((await call("GET", "/api/v1/whoami", undefined, key.key)).status).toBe(401);
    const [left] =
      await db`select count(*)::int as n from workspace_members where user_id = ${alice.user_id}`;
    expect(left?.n).toBe(0);

    // Adding the user again does not revive the old key: removal revoked it.
    await addMember("alice@example.com");
    expect((await call("GET", "/api/v1/whoami", undefined, key.key)).status).toBe(401);
  });

  it("lets an admin issue a key for another admin, usable in every workspace", async () => {
    const carol = await addMember("carol@example.com", "admin");
    const key = await t.client().iam.apiKeys.createApiKey({
      userId: carol.user_id,
      defaultWorkspaceId: (await t.client().iam.workspaces.getCurrentWorkspace({})).id,
    });
    const me = await t.client({ apiKey: key.key }).iam.identity.whoami({});
    expect(me).toMatchObject({
      organizationRole: "admin",
      user: { id: carol.user_id },
      workspace: { role: "admin" },
    });
    await members().updateOrganizationMember({ userId: carol.user_id, organizationRole: "viewer" });
    expect((await t.client({ apiKey: key.key }).iam.identity.whoami({})).organizationRole).toBe("viewer");
  });
});
