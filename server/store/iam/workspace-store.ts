import type { Queryable } from "../db.js";
import type { WorkspaceRole } from "./member-store.js";

/** A workspace row, with the role the reader holds in it. */
export interface WorkspaceRecord {
  id: string;
  organizationId: string;
  displayName: string;
  tenantHandle: string;
  isPersonal: boolean;
  createdAt: Date;
  role: WorkspaceRole;
}

/**
 * Which workspaces a caller reaches, and with which role: every workspace of the organization with
 * one role (organization admins, organization-wide service keys), the workspaces a user is a member
 * of, or the workspaces a service key is scoped to.
 */
export type WorkspaceGrant =
  | { kind: "organization"; organizationId: string; role: WorkspaceRole }
  | { kind: "user"; organizationId: string; userId: string }
  | { kind: "api-key"; organizationId: string; apiKeyId: string; role: WorkspaceRole }
  /** An agent run's token (the loopback client): the run's workspace only. */
  | { kind: "run"; organizationId: string; workspaceId: string; role: WorkspaceRole };

interface WorkspaceRow {
  id: string;
  organization_id: string;
  display_name: string;
  tenant_handle: string;
  is_personal: boolean;
  created_at: Date;
  role: WorkspaceRole;
}

function toRecord(row: WorkspaceRow): WorkspaceRecord {
  return {
    id: row.id,
    organizationId: row.organization_id,
    displayName: row.display_name,
    tenantHandle: row.tenant_handle,
    isPersonal: row.is_personal,
    createdAt: row.created_at,
    role: row.role,
  };
}

/**
 * A live workspace with the facts that decide whether a grant reaches it: the role a user holds as a
 * member, and whether a scoped service key names it. {@link grantedWorkspace} applies the grant.
 */
export interface WorkspaceCandidate extends Omit<WorkspaceRecord, "role"> {
  /** The `workspace_members` role of the key's user; null when there is none (or no user). */
  memberRole: WorkspaceRole | null;
  /** True when `api_key_workspaces` scopes the key to this workspace. */
  keyScoped: boolean;
}

/**
 * The candidate as the grant sees it, or undefined when the grant does not reach it: the same rules
 * as {@link listGrantedWorkspaces} (organization-wide role, `workspace_members` for users,
 * `api_key_workspaces` for scoped service keys), for a candidate read for the grant's own key.
 */
export function grantedWorkspace(
  candidate: WorkspaceCandidate,
  grant: WorkspaceGrant,
): WorkspaceRecord | undefined {
  if (candidate.organizationId !== grant.organizationId) return undefined;
  const { memberRole, keyScoped, ...workspace } = candidate;
  switch (grant.kind) {
    case "organization":
      return { ...workspace, role: grant.role };
    case "user":
      return memberRole === null ? undefined : { ...workspace, role: memberRole };
    case "api-key":
      return keyScoped ? { ...workspace, role: grant.role } : undefined;
    case "run":
      return workspace.id === grant.workspaceId ? { ...workspace, role: grant.role } : undefined;
  }
}

/** Inserts a workspace. A taken handle fails with a unique violation on `workspaces_handle_key`. */
export async function insertWorkspace(
  q: Queryable,
  ws: { id: string; organizationId: string; displayName: string; tenantHandle: string; isPersonal: boolean },
): Promise<void> {
  await q`
    insert into workspaces (id, organization_id, display_name, tenant_handle, is_personal)
    values (${ws.id}, ${ws.organizationId}, ${ws.displayName}, ${ws.tenantHandle}, ${ws.isPersonal})`;
}

/**
 * The live workspaces a grant reaches, oldest first; with `workspaceId`, at most that one. Scoped in
 * SQL by organization and grant, so a caller never sees another organization's or workspace's rows.
 */
export async function listGrantedWorkspaces(
  q: Queryable,
  grant: WorkspaceGrant,
  workspaceId?: string,
): Promise<WorkspaceRecord[]> {
  const only = workspaceId ?? null;
  let rows: WorkspaceRow[];
  switch (grant.kind) {
    case "organization":
      rows = await q<WorkspaceRow[]>`
        select w.id, w.organization_id, w.display_name, w.tenant_handle, w.is_personal, w.created_at,
               ${grant.role}::text as role
        from workspaces w
        where w.organization_id = ${grant.organizationId} and w.deleted_at is null
          and (${only}::uuid is null or w.id = ${only}::uuid)
        order by w.created_at, w.id`;
      break;
    case "user":
      rows = await q<WorkspaceRow[]>`
        select w.id, w.organization_id, w.display_name, w.tenant_handle, w.is_personal, w.created_at, m.role
        from workspaces w join workspace_members m on m.workspace_id = w.id
        where w.organization_id = ${grant.organizationId} and w.deleted_at is null and m.user_id = ${grant.userId}
          and (${only}::uuid is null or w.id = ${only}::uuid)
        order by w.created_at, w.id`;
      break;
    case "api-key":
      rows = await q<WorkspaceRow[]>`
        select w.id, w.organization_id, w.display_name, w.tenant_handle, w.is_personal, w.created_at,
               ${grant.role}::text as role
        from workspaces w join api_key_workspaces k on k.workspace_id = w.id
        where w.organization_id = ${grant.organizationId} and w.deleted_at is null and k.api_key_id = ${grant.apiKeyId}
          and (${only}::uuid is null or w.id = ${only}::uuid)
        order by w.created_at, w.id`;
      break;
    case "run":
      rows = await q<WorkspaceRow[]>`
        select w.id, w.organization_id, w.display_name, w.tenant_handle, w.is_personal, w.created_at,
               ${grant.role}::text as role
        from workspaces w
        where w.organization_id = ${grant.organizationId} and w.deleted_at is null and w.id = ${grant.workspaceId}
          and (${only}::uuid is null or w.id = ${only}::uuid)`;
      break;
  }
  return rows.map(toRecord);
}

/** Live workspaces of an organization among `ids`; used to check ids a caller sends. */
export async function findLiveWorkspaceIds(
  q: Queryable,
  organizationId: string,
  ids: string[],
): Promise<string[]> {
  const rows = await q<{ id: string }[]>`
    select id from workspaces
    where organization_id = ${organizationId} and deleted_at is null and id = any(${ids}::uuid[])`;
  return rows.map((r) => r.id);
}

/** Number of live workspaces of an organization. */
export async function countLiveWorkspaces(q: Queryable, organizationId: string): Promise<number> {
  const [row] = await q<{ n: number }[]>`
    select count(*)::int as n from workspaces where organization_id = ${organizationId} and deleted_at is null`;
  return row?.n ?? 0;
}

/** Marks a live workspace deleted; false when there was none with that id in the organization. */
export async function markWorkspaceDeleted(
  q: Queryable,
  organizationId: string,
  id: string,
): Promise<boolean> {
  const rows = await q`
    update workspaces set deleted_at = now()
    where organization_id = ${organizationId} and id = ${id} and deleted_at is null
    returning id`;
  return rows.length > 0;
}

/**
 * Removes a workspace marked deleted, and through `on delete cascade` everything it holds. Returns
 * false when there is nothing to purge (already purged, or never marked), so a retried job is a no-op.
 */
export async function purgeDeletedWorkspace(q: Queryable, id: string): Promise<boolean> {
  const rows = await q`delete from workspaces where id = ${id} and deleted_at is not null returning id`;
  return rows.length > 0;
}
