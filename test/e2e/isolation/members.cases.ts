import { createClient } from "@connectrpc/connect";
import { expect } from "vitest";
import { MemberService } from "../../../gen/agentplane/iam/v1/member_service_pb.js";
import type { AgentplaneClient } from "../../../sdk/index.js";
import { DENIED, isolationSuite } from "./isolation-suite.js";

const members = (client: AgentplaneClient) => createClient(MemberService, client.transport);

/** Members: the members of workspace A and of the organization. */
export const suite = isolationSuite({
  service: "members",
  async setup({ adminA, workspaceA }) {
    const member = await members(adminA).addOrganizationMember({ email: "isolation-member@example.com" });
    await members(adminA).addWorkspaceMember({ userId: member.userId, role: "viewer" });
    // A member of the organization but not of workspace A: what B would try to add to A.
    const outsider = await members(adminA).addOrganizationMember({ email: "isolation-outsider@example.com" });
    return { workspaceA, memberId: member.userId, outsiderId: outsider.userId };
  },
  cases: [
    {
      ...DENIED,
      name: "MemberService.ListWorkspaceMembers with x-tenant-id of A",
      rest: (f) => ({ method: "GET", path: "/api/v1/workspaces/current/members", tenantId: f.workspaceA }),
      connect: (c) => members(c).listWorkspaceMembers({}),
    },
    {
      ...DENIED,
      name: "MemberService.AddWorkspaceMember with x-tenant-id of A",
      rest: (f) => ({
        method: "POST",
        path: "/api/v1/workspaces/current/members",
        body: { user_id: f.outsiderId, role: "viewer" },
        tenantId: f.workspaceA,
      }),
      connect: (c, f) => members(c).addWorkspaceMember({ userId: f.outsiderId, role: "viewer" }),
    },
    {
      ...DENIED,
      name: "MemberService.UpdateWorkspaceMember with x-tenant-id of A",
      rest: (f) => ({
        method: "PATCH",
        path: `/api/v1/workspaces/current/members/${f.memberId}`,
        body: { role: "admin" },
        tenantId: f.workspaceA,
      }),
      connect: (c, f) => members(c).updateWorkspaceMember({ userId: f.memberId, role: "admin" }),
    },
    {
      ...DENIED,
      name: "MemberService.RemoveWorkspaceMember with x-tenant-id of A",
      rest: (f) => ({
        method: "DELETE",
        path: `/api/v1/workspaces/current/members/${f.memberId}`,
        tenantId: f.workspaceA,
      }),
      connect: (c, f) => members(c).removeWorkspaceMember({ userId: f.memberId }),
    },
    {
      ...DENIED,
      name: "MemberService.AddOrganizationMember",
      rest: () => ({
        method: "POST",
        path: "/api/v1/orgs/current/members",
        body: { email: "intruder@example.com", organization_role: "admin" },
      }),
      connect: (c) =>
        members(c).addOrganizationMember({ email: "intruder@example.com", organizationRole: "admin" }),
    },
    {
      ...DENIED,
      name: "MemberService.RemoveOrganizationMember of A's member",
      rest: (f) => ({ method: "DELETE", path: `/api/v1/orgs/current/members/${f.memberId}` }),
      connect: (c, f) => members(c).removeOrganizationMember({ userId: f.memberId }),
    },
  ],
  async verify({ adminA }, f) {
    const inWorkspace = await members(adminA).listWorkspaceMembers({});
    expect(inWorkspace.members.find((m) => m.userId === f.memberId)?.role).toBe("viewer");
    expect(inWorkspace.members.some((m) => m.userId === f.outsiderId)).toBe(false);
    const inOrganization = await members(adminA).listOrganizationMembers({});
    expect(inOrganization.members.map((m) => m.email)).not.toContain("intruder@example.com");
    expect(inOrganization.members.find((m) => m.userId === f.memberId)?.organizationRole).toBe("user");
  },
});
