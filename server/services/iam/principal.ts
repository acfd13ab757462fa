import { Code, ConnectError, createContextKey, type HandlerContext } from "@connectrpc/connect";
import type { RunCreator } from "../../store/agents/agent-run-store.js";
import type { AuthFilter } from "../../store/filters/auth-filter-sql.js";
import type { ApiKeyKind } from "../../store/iam/api-key-store.js";
import type { OrganizationRole, UserRecord } from "../../store/iam/member-store.js";
import type { OrganizationRecord } from "../../store/iam/organization-store.js";
import type { WorkspaceGrant, WorkspaceRecord } from "../../store/iam/workspace-store.js";
import {
  type OrganizationPermission,
  organizationPermissions,
  type Permission,
  type WorkspacePermission,
  workspacePermissions,
} from "./permissions.js";

/**
 * A user a custom auth handler (`auth.path` of the graphs file) authenticated: the handler's object
 * with `permissions`, `display_name` and `is_authenticated` filled in, extra fields kept.
 */
export interface AuthUser {
  readonly identity: string;
  readonly permissions: readonly string[];
  readonly display_name: string;
  readonly is_authenticated: boolean;
  readonly [extra: string]: unknown;
}

/** The `Auth.on()` handlers of the graphs file, as services ask them (services/iam/custom-auth-rules.ts). */
export interface AuthRules {
  /**
   * Runs the handler of `event` (`threads:create`, ...) for `user` with `value`, which it may change
   * in place. Resolves to the filter rows must match, or undefined for none; rejects with a
   * `ConnectError` when the handler refuses or misbehaves.
   */
  authorize(event: string, value: Record<string, unknown>, user: AuthUser): Promise<AuthFilter | undefined>;
}

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
  /** The user of the custom auth handler (or Studio's user); null for API keys and run tokens. */
  readonly authUser: AuthUser | null;
  /** The handlers that authorize `authUser`'s actions; null when none apply (API keys, Studio). */
  readonly authRules: AuthRules | null;
  /**
   * For a run token (the loopback client inside a graph, a relative webhook): who created its run.
   * The runs it creates count in usage under them, as the run itself does. Absent otherwise.
   */
  readonly runCreator?: RunCreator;
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

/**
 * Whom the runs and crons `principal` creates count under in usage: its key and that key's user,
 * or, for a run token, whoever created the token's run.
 */
export function creatorOf(principal: Principal): RunCreator {
  return (
    principal.runCreator ?? { apiKeyId: principal.apiKey?.id ?? null, userId: principal.user?.id ?? null }
  );
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

/**
 * What the custom auth handler of `event` allows `principal` with `value` (changed in place when
 * the handler changes it): the filter on the resource's metadata, or undefined when every row is
 * allowed, as for every principal without handlers. Rejects like the handler's refusal.
 */
export function authorizeEvent(
  principal: Principal,
  event: string,
  value: Record<string, unknown>,
): Promise<AuthFilter | undefined> {
  if (!principal.authRules || !principal.authUser) return Promise.resolve(undefined);
  return principal.authRules.authorize(event, value, principal.authUser);
}
