import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type ApiKey, ApiKeySchema } from "../../../gen/agentplane/iam/v1/api_key_service_pb.js";
import {
  type Organization,
  OrganizationSchema,
  type User,
  UserSchema,
  type Workspace,
  WorkspaceSchema,
} from "../../../gen/agentplane/iam/v1/iam_pb.js";
import type { ApiKeyRecord } from "../../store/iam/api-key-store.js";
import type { UserRecord } from "../../store/iam/member-store.js";
import type { OrganizationRecord } from "../../store/iam/organization-store.js";
import type { WorkspaceRecord } from "../../store/iam/workspace-store.js";

/** The wire form of an organization. */
export function organizationMessage(org: OrganizationRecord): Organization {
  return create(OrganizationSchema, {
    id: org.id,
    displayName: org.displayName,
    plan: org.plan,
    createdAt: timestampFromDate(org.createdAt),
  });
}

/** The wire form of a user. */
export function userMessage(user: UserRecord): User {
  return create(UserSchema, { id: user.id, email: user.email, fullName: user.fullName });
}

/** The wire form of a workspace, with the reader's role in it. */
export function workspaceMessage(ws: WorkspaceRecord): Workspace {
  return create(WorkspaceSchema, {
    id: ws.id,
    organizationId: ws.organizationId,
    displayName: ws.displayName,
    tenantHandle: ws.tenantHandle,
    isPersonal: ws.isPersonal,
    createdAt: timestampFromDate(ws.createdAt),
    role: ws.role,
  });
}

/** The wire form of an API key; `key` is set only by the create call. */
export function apiKeyMessage(key: ApiKeyRecord, secret = ""): ApiKey {
  const ts = (d: Date | null) => (d ? timestampFromDate(d) : undefined);
  return create(ApiKeySchema, {
    id: key.id,
    shortKey: key.shortKey,
    description: key.description,
    kind: key.kind,
    createdAt: timestampFromDate(key.createdAt),
    lastUsedAt: ts(key.lastUsedAt),
    expiresAt: ts(key.expiresAt),
    revokedAt: ts(key.revokedAt),
    workspaceIds: key.workspaceIds,
    defaultWorkspaceId: key.defaultWorkspaceId ?? "",
    role: key.role ?? "",
    organizationRole: key.organizationRole ?? "",
    userId: key.userId ?? "",
    key: secret,
  });
}
