import { Code, ConnectError, createContextKey, type HandlerContext } from "@connectrpc/connect";
import type { ApiKeyKind } from "../../store/api-key-store.js";
import type { OrganizationRole, UserRecord } from "../../store/member-store.js";
import type { OrganizationRecord } from "../../store/organization-store.js";
import type { WorkspaceGrant, WorkspaceRecord } from "../../store/workspace-store.js";
import {
  type OrganizationPermission,
  organizationPermissions,
  type Permission,
  type WorkspacePermission,
  workspacePermissions,
} from "./permissions.js";

/** The authenticated caller of one request. */
export interface Principal {
  /** The caller's organization. */
  readonly organization: OrganizationRecord;
  /** The user behind a personal key (or the admin with AGENTPLANE_AUTH=none); null for service keys. */
  readonly user: UserRecord | null;
  /** The key that authenticated the request; null with AGENTPLANE_AUTH=none. */
  readonly apiKey: { readonly id: string; readonly shortKey: string; readonly kind: ApiKeyKind } | null;
  /** Organization role the caller acts with. */
  readonly organizationRole: OrganizationRole;
  /** Which workspaces the caller reaches. */
  readonly grant: WorkspaceGrant;
  /**
   * The workspace the request selected (`x-tenant-id`, else the key's default). Resolved on first
   * use, since organization-level calls never need it. Rejects with the reason none applies.
   */
  readonly workspace: () => Promise<WorkspaceRecord>;
}

/** Where the guard leaves the principal for the handler. */
export const principalKey = createContextKey<Principal | undefined>(undefined);

/** The principal of an authenticated call; a handler of a public service has none. */
export function principalOf(ctx: HandlerContext): Principal {
  const principal = ctx.values.get(principalKey);
  if (!principal)
    throw new ConnectError("this call needs an API key in the x-api-key header", Code.Unauthenticated);
  return principal;
}

/** Every permission the principal holds in the organization and, when given, in a workspace. */
export function permissionsOf(principal: Principal, workspace?: WorkspaceRecord): Permission[] {
  const all: Permission[] = [...organizationPermissions(principal.organizationRole)];
  if (workspace) all.push(...workspacePermissions(workspace.role));
  return [...new Set(all)].sort();
}

function denied(permission: Permission): ConnectError {
  return new ConnectError(
    `permission denied: this call needs the ${permission} permission`,
    Code.PermissionDenied,
  );
}

/** The principal, when it holds an organization permission; PERMISSION_DENIED otherwise. */
export function authorizeOrganization(ctx: HandlerContext, permission: OrganizationPermission): Principal {
  const principal = principalOf(ctx);
  if (!organizationPermissions(principal.organizationRole).includes(permission)) throw denied(permission);
  return principal;
}

/**
 * The principal and its selected workspace, when it holds a workspace permission there. Every
 * workspace resource query then filters on `workspace.id`.
 */
export async function authorizeWorkspace(
  ctx: HandlerContext,
  permission: WorkspacePermission,
): Promise<{ principal: Principal; workspace: WorkspaceRecord }> {
  const principal = principalOf(ctx);
  return { principal, workspace: await authorizedWorkspace(principal, permission) };
}

/**
 * The principal's selected workspace, when it holds a workspace permission there; PERMISSION_DENIED
 * otherwise. For REST-only adapters, which authenticate without a call context.
 */
export async function authorizedWorkspace(
  principal: Principal,
  permission: WorkspacePermission,
): Promise<WorkspaceRecord> {
  const workspace = await principal.workspace();
  if (!workspacePermissions(workspace.role).includes(permission)) throw denied(permission);
  return workspace;
}
