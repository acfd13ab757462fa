import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  type MemberService,
  type OrganizationMember,
  OrganizationMemberSchema,
  type WorkspaceMember,
  WorkspaceMemberSchema,
} from "../../../gen/agentplane/iam/v1/member_service_pb.js";
import { uuidv7 } from "../../ids.js";
import type { Queryable, Sql } from "../../store/db.js";
import {
  countOrganizationAdmins,
  deleteWorkspaceMember,
  findOrganizationRole,
  findOrInsertUser,
  insertOrganizationMember,
  insertWorkspaceMember,
  listOrganizationMembers,
  listWorkspaceMembers,
  type OrganizationMemberRecord,
  removeOrganizationMember,
  updateOrganizationRole,
  updateWorkspaceRole,
  type WorkspaceMemberRecord,
} from "../../store/iam/member-store.js";
import { lockOrganization } from "../../store/iam/organization-store.js";
import { oneOf, requireUuid } from "../request-validation.js";
import { ORGANIZATION_ROLES, WORKSPACE_ROLES } from "./permissions.js";
import { authorizeOrganization, authorizeWorkspace } from "./principal.js";

/** Longest email accepted: the RFC 5321 path limit (64 local + @ + 255 domain). */
const MAX_EMAIL = 320;
/** Longest full name accepted: fits every UI this product has. */
const MAX_FULL_NAME = 200;
/** One `@`, no whitespace, a dot in the domain: catches typos without pretending to parse RFC 5322. */
const EMAIL_PATTERN = /^[^\s@]+@[^\s@.]+(?:\.[^\s@.]+)+$/;

/** MemberService: the members of the caller's organization and of the request's workspace. */
export function createMemberService({ sql }: { sql: Sql }): ServiceImpl<typeof MemberService> {
  return {
    async listOrganizationMembers(_request, ctx) {
      const principal = authorizeOrganization(ctx, "organization:read");
      const members = await listOrganizationMembers(sql, principal.organization.id);
      return { members: members.map(organizationMemberMessage) };
    },

    async addOrganizationMember(request, ctx) {
      const principal = authorizeOrganization(ctx, "organization:manage");
      const email = parseEmail(request.email);
      const fullName = request.fullName.trim();
      if (fullName.length > MAX_FULL_NAME) {
        throw new ConnectError(`full_name must be at most ${MAX_FULL_NAME} characters`, Code.InvalidArgument);
      }
      const role = oneOf(
        request.organizationRole || undefined,
        ORGANIZATION_ROLES,
        "organization_role",
        "user",
      );
      const organizationId = principal.organization.id;
      const member = await sql.begin(async (tx) => {
        const user = await findOrInsertUser(tx, { id: uuidv7(), email, fullName });
        if (!(await insertOrganizationMember(tx, organizationId, user.id, role))) {
          throw new ConnectError(`${email} is already a member of the organization`, Code.AlreadyExists);
        }
        return organizationMember(tx, organizationId, user.id);
      });
      return organizationMemberMessage(member);
    },

    async updateOrganizationMember(request, ctx) {
      const principal = authorizeOrganization(ctx, "organization:manage");
      const userId = requireUuid(request.userId, "user_id");
      const role = oneOf(request.organizationRole, ORGANIZATION_ROLES, "organization_role");
      const organizationId = principal.organization.id;
      const member = await sql.begin(async (tx) => {
        await lockOrganization(tx, organizationId);
        const current = await organizationMember(tx, organizationId, userId);
        if (current.role === "admin" && role !== "admin")
          await requireAnotherAdmin(tx, organizationId, "demoted");
        await updateOrganizationRole(tx, organizationId, userId, role);
        return organizationMember(tx, organizationId, userId);
      });
      return organizationMemberMessage(member);
    },

    async removeOrganizationMember(request, ctx) {
      const principal = authorizeOrganization(ctx, "organization:manage");
      const userId = requireUuid(request.userId, "user_id");
      const organizationId = principal.organization.id;
      await sql.begin(async (tx) => {
        await lockOrganization(tx, organizationId);
        const current = await organizationMember(tx, organizationId, userId);
        if (current.role === "admin") await requireAnotherAdmin(tx, organizationId, "removed");
        await removeOrganizationMember(tx, organizationId, userId);
      });
      return {};
    },

    async listWorkspaceMembers(_request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "workspaces:read");
      const members = await listWorkspaceMembers(sql, workspace.id);
      return { members: members.map(workspaceMemberMessage) };
    },

    async addWorkspaceMember(request, ctx) {
      const { principal, workspace } = await authorizeWorkspace(ctx, "workspace-members:manage");
      const userId = requireUuid(request.userId, "user_id");
      const role = oneOf(request.role || undefined, WORKSPACE_ROLES, "role", "viewer");
      const member = await sql.begin(async (tx) => {
        // Serializes with RemoveOrganizationMember, so no workspace membership outlives its user's
        // organization membership.
        await lockOrganization(tx, principal.organization.id);
        if (!(await findOrganizationRole(tx, principal.organization.id, userId))) {
          throw new ConnectError(`user ${userId} is not a member of the organization`, Code.NotFound);
        }
        if (!(await insertWorkspaceMember(tx, workspace.id, userId, role))) {
          throw new ConnectError(`user ${userId} is already a member of the workspace`, Code.AlreadyExists);
        }
        return workspaceMember(tx, workspace.id, userId);
      });
      return workspaceMemberMessage(member);
    },

    async updateWorkspaceMember(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "workspace-members:manage");
      const userId = requireUuid(request.userId, "user_id");
      const role = oneOf(request.role, WORKSPACE_ROLES, "role");
      if (!(await updateWorkspaceRole(sql, workspace.id, userId, role)))
        throw workspaceMemberNotFound(userId);
      return workspaceMemberMessage(await workspaceMember(sql, workspace.id, userId));
    },

    async removeWorkspaceMember(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "workspace-members:manage");
      const userId = requireUuid(request.userId, "user_id");
      if (!(await deleteWorkspaceMember(sql, workspace.id, userId))) throw workspaceMemberNotFound(userId);
      return {};
    },
  };
}

/** A member of the organization; NOT_FOUND when the user is none. */
async function organizationMember(
  q: Queryable,
  organizationId: string,
  userId: string,
): Promise<OrganizationMemberRecord> {
  const [member] = await listOrganizationMembers(q, organizationId, userId);
  if (!member) throw new ConnectError(`user ${userId} is not a member of the organization`, Code.NotFound);
  return member;
}

/** A member of the workspace; NOT_FOUND when the user is none. */
async function workspaceMember(
  q: Queryable,
  workspaceId: string,
  userId: string,
): Promise<WorkspaceMemberRecord> {
  const [member] = await listWorkspaceMembers(q, workspaceId, userId);
  if (!member) throw workspaceMemberNotFound(userId);
  return member;
}

function workspaceMemberNotFound(userId: string): ConnectError {
  return new ConnectError(`user ${userId} is not a member of the workspace`, Code.NotFound);
}

/** Refuses to leave an organization without an admin: nobody could manage it any more. */
async function requireAnotherAdmin(tx: Queryable, organizationId: string, action: string): Promise<void> {
  if ((await countOrganizationAdmins(tx, organizationId)) <= 1) {
    throw new ConnectError(
      `the last admin of the organization cannot be ${action}: make another member admin first`,
      Code.FailedPrecondition,
    );
  }
}

function parseEmail(value: string): string {
  const email = value.trim();
  if (email.length === 0) throw new ConnectError("email is required", Code.InvalidArgument);
  if (email.length > MAX_EMAIL) {
    throw new ConnectError(`email must be at most ${MAX_EMAIL} characters`, Code.InvalidArgument);
  }
  if (!EMAIL_PATTERN.test(email)) {
    throw new ConnectError(`email "${email}" is not an email address`, Code.InvalidArgument);
  }
  return email;
}

function organizationMemberMessage(member: OrganizationMemberRecord): OrganizationMember {
  return create(OrganizationMemberSchema, {
    userId: member.user.id,
    email: member.user.email,
    fullName: member.user.fullName,
    organizationRole: member.role,
    createdAt: timestampFromDate(member.createdAt),
  });
}

function workspaceMemberMessage(member: WorkspaceMemberRecord): WorkspaceMember {
  return create(WorkspaceMemberSchema, {
    userId: member.user.id,
    email: member.user.email,
    fullName: member.user.fullName,
    role: member.role,
  });
}
