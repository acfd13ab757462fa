import type { Queryable } from "./db.js";

/** Roles a user can hold in an organization. */
export type OrganizationRole = "admin" | "operator" | "user" | "viewer";

/** Roles a user or service key can hold in a workspace. */
export type WorkspaceRole = "admin" | "editor" | "viewer";

/** A user row. */
export interface UserRecord {
  id: string;
  email: string;
  fullName: string;
}

/** Inserts a user. */
export async function insertUser(q: Queryable, user: UserRecord): Promise<void> {
  await q`insert into users (id, email, full_name) values (${user.id}, ${user.email}, ${user.fullName})`;
}

/** Makes a user a member of an organization with a role (replacing an earlier role). */
export async function upsertOrganizationMember(
  q: Queryable,
  organizationId: string,
  userId: string,
  role: OrganizationRole,
): Promise<void> {
  await q`
    insert into organization_members (organization_id, user_id, role) values (${organizationId}, ${userId}, ${role})
    on conflict (organization_id, user_id) do update set role = excluded.role`;
}

/** Makes a user a member of a workspace with a role (replacing an earlier role). */
export async function upsertWorkspaceMember(
  q: Queryable,
  workspaceId: string,
  userId: string,
  role: WorkspaceRole,
): Promise<void> {
  await q`
    insert into workspace_members (workspace_id, user_id, role) values (${workspaceId}, ${userId}, ${role})
    on conflict (workspace_id, user_id) do update set role = excluded.role`;
}

/** The oldest admin of an organization: who AGENTPLANE_AUTH=none acts as. */
export async function findFirstAdmin(q: Queryable, organizationId: string): Promise<UserRecord | undefined> {
  const [row] = await q<{ id: string; email: string; full_name: string }[]>`
    select u.id, u.email, u.full_name
    from organization_members m join users u on u.id = m.user_id
    where m.organization_id = ${organizationId} and m.role = 'admin'
    order by m.created_at, u.id limit 1`;
  return row && { id: row.id, email: row.email, fullName: row.full_name };
}

/** A user's role in an organization, or undefined when not a member. */
export async function findOrganizationRole(
  q: Queryable,
  organizationId: string,
  userId: string,
): Promise<OrganizationRole | undefined> {
  const [row] = await q<{ role: OrganizationRole }[]>`
    select role from organization_members where organization_id = ${organizationId} and user_id = ${userId}`;
  return row?.role;
}
