import type { OrganizationRole, WorkspaceRole } from "../../store/member-store.js";

/**
 * Every permission agentplane checks. Organization permissions come from the caller's organization
 * role; workspace permissions from its role in the workspace the request selected.
 */
export type Permission = OrganizationPermission | WorkspacePermission;

/** Permissions held across the organization. */
export type OrganizationPermission =
  | "organization:read"
  | "organization:manage"
  | "workspaces:manage"
  | "service-keys:manage";

/** Permissions held in one workspace. */
export type WorkspacePermission =
  | "workspaces:read"
  | "projects:read"
  | "projects:create"
  | "runs:read"
  | "runs:create"
  | "bulk-exports:read"
  | "bulk-exports:manage";

/** The organization roles and the workspace roles, as accepted on the wire. */
export const ORGANIZATION_ROLES: readonly OrganizationRole[] = ["admin", "operator", "user", "viewer"];
/** See {@link ORGANIZATION_ROLES}. */
export const WORKSPACE_ROLES: readonly WorkspaceRole[] = ["admin", "editor", "viewer"];

/**
 * Organization role → permissions. Every role may read the organization (usage included); operators
 * run workspaces day to day; only admins change billing and service keys.
 */
const ORGANIZATION_GRANTS: Record<OrganizationRole, readonly OrganizationPermission[]> = {
  admin: ["organization:read", "organization:manage", "workspaces:manage", "service-keys:manage"],
  operator: ["organization:read", "workspaces:manage"],
  user: ["organization:read"],
  viewer: ["organization:read"],
};

const READ: readonly WorkspacePermission[] = [
  "workspaces:read",
  "projects:read",
  "runs:read",
  "bulk-exports:read",
];

/**
 * Workspace role → permissions. Viewers read; editors also write traces and projects; admins also
 * manage bulk exports (which write to the customer's bucket).
 */
const WORKSPACE_GRANTS: Record<WorkspaceRole, readonly WorkspacePermission[]> = {
  admin: [...READ, "projects:create", "runs:create", "bulk-exports:manage"],
  editor: [...READ, "projects:create", "runs:create"],
  viewer: READ,
};

/** The organization permissions of a role. */
export function organizationPermissions(role: OrganizationRole): readonly OrganizationPermission[] {
  return ORGANIZATION_GRANTS[role];
}

/** The workspace permissions of a role. */
export function workspacePermissions(role: WorkspaceRole): readonly WorkspacePermission[] {
  return WORKSPACE_GRANTS[role];
}
