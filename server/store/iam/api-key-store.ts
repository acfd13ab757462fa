import type { Queryable } from "../db.js";
import type { OrganizationRole, WorkspaceRole } from "./member-store.js";
import type { WorkspaceCandidate } from "./workspace-store.js";

/** Personal keys act as their user; service keys act with their own roles. */
export type ApiKeyKind = "personal" | "service";

/** An API key row (never the key itself, only what identifies and limits it). */
export interface ApiKeyRecord {
  id: string;
  organizationId: string;
  kind: ApiKeyKind;
  userId: string | null;
  shortKey: string;
  description: string;
  role: WorkspaceRole | null;
  organizationRole: OrganizationRole | null;
  allWorkspaces: boolean;
  workspaceIds: string[];
  defaultWorkspaceId: string | null;
  expiresAt: Date | null;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
  createdAt: Date;
}

/** What authentication needs about a key: the key, its organization, its user and a workspace. */
export interface AuthenticatedKey extends ApiKeyRecord {
  organization: { displayName: string; plan: "developer" | "plus" | "enterprise"; createdAt: Date };
  user: { email: string; fullName: string; organizationRole: OrganizationRole | null } | null;
  /**
   * The live workspace of the key's organization that the lookup asked for (else the key's default),
   * with what decides whether the key reaches it; null when there is no such workspace.
   */
  workspace: WorkspaceCandidate | null;
}

interface ApiKeyRow {
  id: string;
  organization_id: string;
  kind: ApiKeyKind;
  user_id: string | null;
  short_key: string;
  description: string;
  role: WorkspaceRole | null;
  organization_role: OrganizationRole | null;
  all_workspaces: boolean;
  workspace_ids: string[];
  default_workspace_id: string | null;
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
  created_at: Date;
}

function toRecord(row: ApiKeyRow): ApiKeyRecord {
  return {
    id: row.id,
    organizationId: row.organization_id,
    kind: row.kind,
    userId: row.user_id,
    shortKey: row.short_key,
    description: row.description,
    role: row.role,
    organizationRole: row.organization_role,
    allWorkspaces: row.all_workspaces,
    workspaceIds: row.workspace_ids,
    defaultWorkspaceId: row.default_workspace_id,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
    lastUsedAt: row.last_used_at,
    createdAt: row.created_at,
  };
}

/** A new key: its record fields plus the SHA-256 of the secret. */
export interface NewApiKey {
  id: string;
  organizationId: string;
  kind: ApiKeyKind;
  userId: string | null;
  keyHash: Buffer;
  shortKey: string;
  description: string;
  role: WorkspaceRole | null;
  organizationRole: OrganizationRole | null;
  allWorkspaces: boolean;
  workspaceIds: string[];
  defaultWorkspaceId: string | null;
  expiresAt: Date | null;
}

/** Inserts a key and its workspace scope. Run inside a transaction so both land or neither does. */
export async function insertApiKey(q: Queryable, key: NewApiKey): Promise<void> {
  await q`
    insert into api_keys (id, organization_id, kind, user_id, key_hash, short_key, description, role,
                          organization_role, all_workspaces, default_workspace_id, expires_at)
    values (${key.id}, ${key.organizationId}, ${key.kind}, ${key.userId}, ${key.keyHash}, ${key.shortKey},
            ${key.description}, ${key.role}, ${key.organizationRole}, ${key.allWorkspaces},
            ${key.defaultWorkspaceId}, ${key.expiresAt})`;
  if (key.workspaceIds.length > 0) {
    await q`
      insert into api_key_workspaces (api_key_id, workspace_id)
      select ${key.id}, unnest(${key.workspaceIds}::uuid[])`;
  }
}

/** The `workspace_ids` column of a key row aliased `k`: its scoped workspaces, sorted. */
function workspaceIdsColumn(q: Queryable) {
  return q`coalesce((select array_agg(s.workspace_id order by s.workspace_id) from api_key_workspaces s
                     where s.api_key_id = k.id), '{}') as workspace_ids`;
}

/**
 * The key with this hash, with its organization and user, when it is neither revoked nor expired.
 * Returns undefined for unknown, revoked and expired keys alike, so callers cannot tell them apart.
 *
 * In the same statement it reads the workspace `workspaceId` names (when omitted or null, the key's
 * default workspace), so a request that names its workspace costs one round trip, not two.
 */
export async function findUsableKeyByHash(
  q: Queryable,
  keyHash: Buffer,
  workspaceId: string | null = null,
): Promise<AuthenticatedKey | undefined> {
  const [row] = await q<
    (ApiKeyRow & {
      org_display_name: string;
      org_plan: "developer" | "plus" | "enterprise";
      org_created_at: Date;
      user_email: string | null;
      user_full_name: string | null;
      user_org_role: OrganizationRole | null;
      ws_id: string | null;
      ws_display_name: string;
      ws_tenant_handle: string;
      ws_is_personal: boolean;
      ws_created_at: Date;
      ws_member_role: WorkspaceRole | null;
      ws_key_scoped: boolean;
    })[]
  >`
    select k.id, k.organization_id, k.kind, k.user_id, k.short_key, k.description, k.role, k.organization_role,
           k.all_workspaces, ${workspaceIdsColumn(q)}, k.default_workspace_id, k.expires_at, k.revoked_at,
           k.last_used_at, k.created_at,
           o.display_name as org_display_name, o.plan as org_plan, o.created_at as org_created_at,
           u.email as user_email, u.full_name as user_full_name, m.role as user_org_role,
           w.id as ws_id, w.display_name as ws_display_name, w.tenant_handle as ws_tenant_handle,
           w.is_personal as ws_is_personal, w.created_at as ws_created_at, w.member_role as ws_member_role,
           w.key_scoped as ws_key_scoped
    from api_keys k
    join organizations o on o.id = k.organization_id
    left join users u on u.id = k.user_id
    left join organization_members m on m.organization_id = k.organization_id and m.user_id = k.user_id
    left join lateral (
      select w.id, w.display_name, w.tenant_handle, w.is_personal, w.created_at,
             (select wm.role from workspace_members wm
              where wm.workspace_id = w.id and wm.user_id = k.user_id) as member_role,
             exists (select 1 from api_key_workspaces s
                     where s.api_key_id = k.id and s.workspace_id = w.id) as key_scoped
      from workspaces w
      where w.id = coalesce(${workspaceId}::uuid, k.default_workspace_id)
        and w.organization_id = k.organization_id and w.deleted_at is null
    ) w on true
    where k.key_hash = ${keyHash} and k.revoked_at is null and (k.expires_at is null or k.expires_at > now())`;
  if (!row) return undefined;
  return {
    ...toRecord(row),
    organization: { displayName: row.org_display_name, plan: row.org_plan, createdAt: row.org_created_at },
    user:
      row.user_email === null
        ? null
        : { email: row.user_email, fullName: row.user_full_name ?? "", organizationRole: row.user_org_role },
    workspace:
      row.ws_id === null
        ? null
        : {
            id: row.ws_id,
            organizationId: row.organization_id,
            displayName: row.ws_display_name,
            tenantHandle: row.ws_tenant_handle,
            isPersonal: row.ws_is_personal,
            createdAt: row.ws_created_at,
            memberRole: row.ws_member_role,
            keyScoped: row.ws_key_scoped,
          },
  };
}

/** True when a key with this hash exists, usable or not. */
export async function keyHashExists(q: Queryable, keyHash: Buffer): Promise<boolean> {
  const rows = await q`select 1 from api_keys where key_hash = ${keyHash}`;
  return rows.length > 0;
}

/** One key of an organization by id, revoked or not. */
export async function getApiKey(
  q: Queryable,
  organizationId: string,
  id: string,
): Promise<ApiKeyRecord | undefined> {
  const [row] = await q<ApiKeyRow[]>`
    select k.id, k.organization_id, k.kind, k.user_id, k.short_key, k.description, k.role, k.organization_role,
           k.all_workspaces, ${workspaceIdsColumn(q)}, k.default_workspace_id, k.expires_at, k.revoked_at,
           k.last_used_at, k.created_at
    from api_keys k where k.organization_id = ${organizationId} and k.id = ${id}`;
  return row && toRecord(row);
}

/**
 * The unrevoked keys of an organization, newest first: the personal keys of `userId` (when given)
 * and, when `includeServiceKeys`, every service key.
 */
export async function listApiKeys(
  q: Queryable,
  organizationId: string,
  options: { userId: string | null; includeServiceKeys: boolean },
): Promise<ApiKeyRecord[]> {
  const rows = await q<ApiKeyRow[]>`
    select k.id, k.organization_id, k.kind, k.user_id, k.short_key, k.description, k.role, k.organization_role,
           k.all_workspaces, ${workspaceIdsColumn(q)}, k.default_workspace_id, k.expires_at, k.revoked_at,
           k.last_used_at, k.created_at
    from api_keys k
    where k.organization_id = ${organizationId} and k.revoked_at is null
      and ((k.kind = 'personal' and k.user_id = ${options.userId}::uuid)
           or (k.kind = 'service' and ${options.includeServiceKeys}))
    order by k.created_at desc, k.id desc`;
  return rows.map(toRecord);
}

/** Revokes a key of an organization; returns the revoked record, or undefined when there is none. */
export async function revokeApiKey(
  q: Queryable,
  organizationId: string,
  id: string,
): Promise<ApiKeyRecord | undefined> {
  await q`
    update api_keys set revoked_at = coalesce(revoked_at, now())
    where organization_id = ${organizationId} and id = ${id}`;
  return getApiKey(q, organizationId, id);
}

/**
 * Records that a key was used. Writes at most once a minute per key, so a busy key costs one UPDATE a
 * minute rather than one per request.
 */
export async function touchApiKey(q: Queryable, id: string): Promise<void> {
  await q`
    update api_keys set last_used_at = now()
    where id = ${id} and (last_used_at is null or last_used_at < now() - interval '1 minute')`;
}

/** Widens a scoped service key to one more workspace. */
export async function addApiKeyWorkspace(q: Queryable, apiKeyId: string, workspaceId: string): Promise<void> {
  await q`insert into api_key_workspaces (api_key_id, workspace_id) values (${apiKeyId}, ${workspaceId})`;
}
