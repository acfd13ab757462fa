import { ConnectError } from "@connectrpc/connect";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../../test/support/database.js";
import { uuidv7 } from "../../ids.js";
import { createLogger } from "../../logger.js";
import { insertApiKey, type NewApiKey } from "../../store/iam/api-key-store.js";
import type { OrganizationRole, WorkspaceRole } from "../../store/iam/member-store.js";
import { insertUser, upsertOrganizationMember, upsertWorkspaceMember } from "../../store/iam/member-store.js";
import { insertOrganization } from "../../store/iam/organization-store.js";
import { insertWorkspace, markWorkspaceDeleted } from "../../store/iam/workspace-store.js";
import { generateApiKey, hashApiKey, shortApiKey } from "./api-key-secret.js";
import { type Authenticator, createAuthenticator } from "./authenticator.js";
import type { Identity } from "./identity.js";
import { createIdentityCache } from "./identity-cache.js";

let db: TestDatabase;
/** A second pool on the same database that counts the statements it sends. */
let counted: postgres.Sql;
let statements = 0;
let auth: Authenticator;
const identities = createIdentityCache<Identity>();
const org = uuidv7();
const otherOrg = uuidv7();
const ws: Record<"w1" | "w2" | "w3" | "gone" | "foreign", string> = {
  w1: uuidv7(),
  w2: uuidv7(),
  w3: uuidv7(),
  gone: uuidv7(),
  foreign: uuidv7(),
};
const nameOf = (id: string) => Object.entries(ws).find(([, v]) => v === id)?.[0];
const keys = new Map<string, string>();

async function addKey(
  name: string,
  fields: Partial<NewApiKey> & { kind: NewApiKey["kind"] },
  workspaceIds: string[] = [],
): Promise<void> {
  const key = generateApiKey(fields.kind);
  keys.set(name, key);
  await insertApiKey(db.sql, {
    id: uuidv7(),
    organizationId: org,
    userId: null,
    keyHash: hashApiKey(key),
    shortKey: shortApiKey(key),
    description: name,
    // The schema requires both roles of a service key; these are the narrowest.
    role: fields.kind === "service" ? "viewer" : null,
    organizationRole: fields.kind === "service" ? "viewer" : null,
    allWorkspaces: false,
    defaultWorkspaceId: null,
    expiresAt: null,
    ...fields,
    workspaceIds,
  });
}

async function addUser(role: OrganizationRole, memberships: [string, WorkspaceRole][]): Promise<string> {
  const id = uuidv7();
  await insertUser(db.sql, { id, email: `${id}@example.com`, fullName: "Test User" });
  await upsertOrganizationMember(db.sql, org, id, role);
  for (const [workspaceId, wsRole] of memberships)
    await upsertWorkspaceMember(db.sql, workspaceId, id, wsRole);
  return id;
}

/** The workspace a key selects with an optional x-tenant-id, as `name:role`, or the error it gets. */
async function select(keyName: string, tenant?: string): Promise<string> {
  const headers = new Headers({ "x-api-key": keys.get(keyName)! });
  if (tenant !== undefined) headers.set("x-tenant-id", tenant);
  try {
    const selected = await (await auth.authenticate(headers)).workspace();
    return `${nameOf(selected.id)}:${selected.role}`;
  } catch (error) {
    return `${ConnectError.from(error).code} ${ConnectError.from(error).rawMessage}`;
  }
}

beforeAll(async () => {
  db = await createTestDatabase();
  counted = postgres(db.url, { max: 1, onnotice: () => {}, debug: () => statements++ });
  auth = createAuthenticator({ sql: counted, mode: "apikey", log: createLogger("error"), identities });
  await insertOrganization(db.sql, { id: org, displayName: "Org", plan: "plus" });
  await insertOrganization(db.sql, { id: otherOrg, displayName: "Other", plan: "plus" });
  for (const name of ["w1", "w2", "w3", "gone"] as const) {
    await insertWorkspace(db.sql, {
      id: ws[name],
      organizationId: org,
      displayName: name,
      tenantHandle: name,
      isPersonal: false,
    });
  }
  await insertWorkspace(db.sql, {
    id: ws.foreign,
    organizationId: otherOrg,
    displayName: "f",
    tenantHandle: "f",
    isPersonal: false,
  });
  const admin = await addUser("admin", []);
  const user = await addUser("user", [
    [ws.w2, "editor"],
    [ws.w3, "viewer"],
    [ws.gone, "admin"],
  ]);
  const leaver = await addUser("user", [[ws.w2, "editor"]]);
  await addKey("admin", { kind: "personal", userId: admin });
  await addKey("user", { kind: "personal", userId: user });
  await addKey("user-default-w3", { kind: "personal", userId: user, defaultWorkspaceId: ws.w3 });
  await addKey("user-default-w1", { kind: "personal", userId: user, defaultWorkspaceId: ws.w1 });
  await addKey("leaver", { kind: "personal", userId: leaver });
  await addKey("all", { kind: "service", role: "editor", organizationRole: "viewer", allWorkspaces: true });
  await addKey("all-default-w2", {
    kind: "service",
    role: "editor",
    allWorkspaces: true,
    defaultWorkspaceId: ws.w2,
  });
  await addKey("org-admin-default-gone", {
    kind: "service",
    organizationRole: "admin",
    defaultWorkspaceId: ws.gone,
  });
  await addKey("scoped-w2", { kind: "service", role: "viewer" }, [ws.w2]);
  await addKey("scoped-w1-w3", { kind: "service", role: "editor" }, [ws.w1, ws.w3]);
  await addKey("scoped-default-w3", { kind: "service", role: "editor", defaultWorkspaceId: ws.w3 }, [
    ws.w1,
    ws.w3,
  ]);
  await addKey("scoped-none", { kind: "service", role: "editor" });
  await markWorkspaceDeleted(db.sql, org, ws.gone);
  await db.sql`delete from organization_members where user_id = ${leaver}`;
});
afterAll(async () => {
  await counted?.end();
  await db?.drop();
});

describe("createAuthenticator workspace selection", () => {
  it.each([
    ["admin", undefined, "w1:admin"],
    ["admin", "w3", "w3:admin"],
    ["admin", "gone", "7 permission denied: this API key has no access to workspace <gone>"],
    ["admin", "foreign", "7 permission denied: this API key has no access to workspace <foreign>"],
    ["user", undefined, "w2:editor"],
    ["user", "w3", "w3:viewer"],
    ["user", "w1", "7 permission denied: this API key has no access to workspace <w1>"],
    ["user", "gone", "7 permission denied: this API key has no access to workspace <gone>"],
    ["user-default-w3", undefined, "w3:viewer"],
    ["user-default-w3", "w2", "w2:editor"],
    ["user-default-w1", undefined, "w2:editor"],
    [
      "all",
      undefined,
      "7 this service key can act in several workspaces: send the x-tenant-id header naming one of them",
    ],
    ["all", "w2", "w2:editor"],
    ["all-default-w2", undefined, "w2:editor"],
    [
      "org-admin-default-gone",
      undefined,
      "7 this service key can act in several workspaces: send the x-tenant-id header naming one of them",
    ],
    ["org-admin-default-gone", "w1", "w1:admin"],
    ["scoped-w2", undefined, "w2:viewer"],
    ["scoped-w2", "w1", "7 permission denied: this API key has no access to workspace <w1>"],
    [
      "scoped-w1-w3",
      undefined,
      "7 this service key can act in several workspaces: send the x-tenant-id header naming one of them",
    ],
    ["scoped-w1-w3", "w3", "w3:editor"],
    ["scoped-default-w3", undefined, "w3:editor"],
    ["scoped-none", undefined, "7 permission denied: this API key has no access to any workspace"],
    ["scoped-none", "w1", "7 permission denied: this API key has no access to workspace <w1>"],
    ["user", "not-a-uuid", "3 x-tenant-id must be a workspace UUID"],
  ])("key %s with x-tenant-id %s selects %s", async (key, tenant, expected) => {
    const header = tenant === undefined ? undefined : (ws[tenant as keyof typeof ws] ?? tenant);
    const message = expected.replace(/<(\w+)>/, (_, name: string) => ws[name as keyof typeof ws]);
    expect(await select(key, header)).toBe(message);
  });

  it("matches x-tenant-id case-insensitively, like the UUID it names", async () => {
    expect(await select("user", ws.w3.toUpperCase())).toBe("w3:viewer");
  });

  it("rejects a personal key whose user left the organization before looking at workspaces", async () => {
    expect(await select("leaver", ws.w2)).toBe(
      "16 invalid API key: its user is no longer a member of the organization",
    );
  });

  it("reads the key and a named or default workspace in one statement, and lists only when it must", async () => {
    // [key, x-tenant-id, statements with an empty cache, statements once the key is cached]
    const cases: [string, string | undefined, number, number][] = [
      ["scoped-w2", ws.w2, 1, 0],
      ["scoped-w2", ws.w1, 1, 0],
      ["user-default-w3", undefined, 1, 0],
      ["user", undefined, 2, 1],
      ["user-default-w1", undefined, 2, 1],
    ];
    for (const [key, tenant] of cases) await select(key, tenant);
    for (const [key, tenant, cold, cached] of cases) {
      identities.clear();
      statements = 0;
      await select(key, tenant);
      const coldStatements = statements;
      statements = 0;
      await select(key, tenant);
      expect({ key, tenant, coldStatements, statements }).toEqual({
        key,
        tenant,
        coldStatements: cold,
        statements: cached,
      });
    }
  });

  it("keeps neither unknown keys nor refused ones, so a later grant or fix applies at once", async () => {
    const unknown = new Headers({ "x-api-key": generateApiKey("service") });
    for (let i = 0; i < 2; i++) {
      statements = 0;
      await expect(auth.authenticate(unknown)).rejects.toThrow("invalid API key");
      expect(statements).toBe(1);
    }
  });
});
