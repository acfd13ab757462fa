import type { OrganizationRole, WorkspaceRole } from "../../store/iam/member-store.js";

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
  | "projects:update"
  | "projects:delete"
  | "runs:read"
  | "runs:create"
  | "assistants:read"
  | "assistants:write"
  | "threads:read"
  | "threads:write"
  | "store:read"
  | "store:write"
  | "bulk-exports:read"
  | "bulk-exports:manage"
  | "workspace-members:manage";

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

/** What every workspace role may do: read. */
const READ: readonly WorkspacePermission[] = [
  "workspaces:read",
  "projects:read",
  "runs:read",
  "assistants:read",
  "threads:read",
  "store:read",
  "bulk-exports:read",
];

/** What editors and admins may do besides reading. */
const WRITE: readonly WorkspacePermission[] = [
  "projects:create",
  "projects:update",
  "projects:delete",
  "runs:create",
  "assistants:write",
  "threads:write",
  "store:write",
];

/**
 * Workspace role → permissions. Viewers read; editors also write (traces, projects, assistants, threads, store); admins also
 * manage bulk exports (which write to the customer's bucket) and the workspace's members.
 */
const WORKSPACE_GRANTS: Record<WorkspaceRole, readonly WorkspacePermission[]> = {
  admin: [...READ, ...WRITE, "bulk-exports:manage", "workspace-members:manage"],
  editor: [...READ, ...WRITE],
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
