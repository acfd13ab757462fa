import type { Queryable } from "../db.js";

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

/** A user's membership of an organization. */
export interface OrganizationMemberRecord {
  user: UserRecord;
  role: OrganizationRole;
  createdAt: Date;
}

/** A user's membership of a workspace. */
export interface WorkspaceMemberRecord {
  user: UserRecord;
  role: WorkspaceRole;
}

interface MemberRow {
  user_id: string;
  email: string;
  full_name: string;
  role: string;
  created_at: Date;
}

function toUser(row: MemberRow): UserRecord {
  return { id: row.user_id, email: row.email, fullName: row.full_name };
}

/** An organization's members, oldest first; with `userId`, at most that one. */
export async function listOrganizationMembers(
  q: Queryable,
  organizationId: string,
  userId?: string,
): Promise<OrganizationMemberRecord[]> {
  const only = userId ?? null;
  const rows = await q<MemberRow[]>`
    select u.id as user_id, u.email, u.full_name, m.role, m.created_at
    from organization_members m join users u on u.id = m.user_id
    where m.organization_id = ${organizationId} and (${only}::uuid is null or m.user_id = ${only}::uuid)
    order by m.created_at, u.id`;
  return rows.map((r) => ({ user: toUser(r), role: r.role as OrganizationRole, createdAt: r.created_at }));
}

/** The user with an email (compared case-insensitively), inserting `user` when there is none. */
export async function findOrInsertUser(q: Queryable, user: UserRecord): Promise<UserRecord> {
  await q`
    insert into users (id, email, full_name) values (${user.id}, ${user.email}, ${user.fullName})
    on conflict ((lower(email))) do nothing`;
  const [row] = await q<{ id: string; email: string; full_name: string }[]>`
    select id, email, full_name from users where lower(email) = lower(${user.email})`;
  if (!row) throw new Error(`user ${user.email} vanished right after its upsert`);
  return { id: row.id, email: row.email, fullName: row.full_name };
}

/** Makes a user a member of an organization; false when it already is one. */
export async function insertOrganizationMember(
  q: Queryable,
  organizationId: string,
  userId: string,
  role: OrganizationRole,
): Promise<boolean> {
  const rows = await q`
    insert into organization_members (organization_id, user_id, role) values (${organizationId}, ${userId}, ${role})
    on conflict (organization_id, user_id) do nothing
    returning user_id`;
  return rows.length > 0;
}

/** Number of admins of an organization. */
export async function countOrganizationAdmins(q: Queryable, organizationId: string): Promise<number> {
  const [row] = await q<{ n: number }[]>`
    select count(*)::int as n from organization_members where organization_id = ${organizationId} and role = 'admin'`;
  return row?.n ?? 0;
}

/** Changes a member's organization role; false when the user is not a member. */
export async function updateOrganizationRole(
  q: Queryable,
  organizationId: string,
  userId: string,
  role: OrganizationRole,
): Promise<boolean> {
  const rows = await q`
    update organization_members set role = ${role}
    where organization_id = ${organizationId} and user_id = ${userId}
    returning user_id`;
  return rows.length > 0;
}

/**
 * Removes a user from an organization: its workspace memberships there, its personal keys there
 * (revoked, so that adding the user again never revives an old key) and the membership itself.
 * False when the user was not a member. Run it in a transaction.
 */
export async function removeOrganizationMember(
  q: Queryable,
  organizationId: string,
  userId: string,
): Promise<boolean> {
  await q`
    delete from workspace_members m using workspaces w
    where w.id = m.workspace_id and w.organization_id = ${organizationId} and m.user_id = ${userId}`;
  await q`
    update api_keys set revoked_at = now()
    where organization_id = ${organizationId} and kind = 'personal' and user_id = ${userId} and revoked_at is null`;
  const rows = await q`
    delete from organization_members where organization_id = ${organizationId} and user_id = ${userId}
    returning user_id`;
  return rows.length > 0;
}

/** A workspace's members, oldest first; with `userId`, at most that one. */
export async function listWorkspaceMembers(
  q: Queryable,
  workspaceId: string,
  userId?: string,
): Promise<WorkspaceMemberRecord[]> {
  const only = userId ?? null;
  const rows = await q<MemberRow[]>`
    select u.id as user_id, u.email, u.full_name, m.role, m.created_at
    from workspace_members m join users u on u.id = m.user_id
    where m.workspace_id = ${workspaceId} and (${only}::uuid is null or m.user_id = ${only}::uuid)
    order by m.created_at, u.id`;
  return rows.map((r) => ({ user: toUser(r), role: r.role as WorkspaceRole }));
}

/** Makes a user a member of a workspace; false when it already is one. */
export async function insertWorkspaceMember(
  q: Queryable,
  workspaceId: string,
  userId: string,
  role: WorkspaceRole,
): Promise<boolean> {
  const rows = await q`
    insert into workspace_members (workspace_id, user_id, role) values (${workspaceId}, ${userId}, ${role})
    on conflict (workspace_id, user_id) do nothing
    returning user_id`;
  return rows.length > 0;
}

/** Changes a member's workspace role; false when the user is not a member. */
export async function updateWorkspaceRole(
  q: Queryable,
  workspaceId: string,
  userId: string,
  role: WorkspaceRole,
): Promise<boolean> {
  const rows = await q`
    update workspace_members set role = ${role} where workspace_id = ${workspaceId} and user_id = ${userId}
    returning user_id`;
  return rows.length > 0;
}

/** Removes a user from a workspace; false when it was not a member. */
export async function deleteWorkspaceMember(
  q: Queryable,
  workspaceId: string,
  userId: string,
): Promise<boolean> {
  const rows = await q`
    delete from workspace_members where workspace_id = ${workspaceId} and user_id = ${userId}
    returning user_id`;
  return rows.length > 0;
}
