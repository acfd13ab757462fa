import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type {
  ApiKeyService,
  CreateApiKeyRequest,
} from "../../../gen/agentplane/iam/v1/api_key_service_pb.js";
import { isUuid, uuidv7 } from "../../ids.js";
import type { Sql } from "../../store/db.js";
import {
  type ApiKeyKind,
  getApiKey,
  insertApiKey,
  listApiKeys,
  type NewApiKey,
  revokeApiKey,
} from "../../store/iam/api-key-store.js";
import { findOrganizationRole } from "../../store/iam/member-store.js";
import {
  findLiveWorkspaceIds,
  listGrantedWorkspaces,
  type WorkspaceGrant,
} from "../../store/iam/workspace-store.js";
import { oneOf, requireUuid } from "../request-validation.js";
import { generateApiKey, hashApiKey, shortApiKey } from "./api-key-secret.js";
import { apiKeyMessage } from "./iam-messages.js";
import { ORGANIZATION_ROLES, organizationPermissions, WORKSPACE_ROLES } from "./permissions.js";
import { authorizeOrganization, type Principal, principalOf } from "./principal.js";

/** Longest description accepted. */
const MAX_DESCRIPTION = 500;
/** Most workspaces one service key may be scoped to; more is better expressed as organization-wide. */
const MAX_SCOPED_WORKSPACES = 100;

/** ApiKeyService: create, list and revoke API keys. */
export function createApiKeyService({ sql }: { sql: Sql }): ServiceImpl<typeof ApiKeyService> {
  return {
    async createApiKey(request, ctx) {
      const principal = principalOf(ctx);
      const kind = parseKind(request.kind);
      const description = request.description.trim();
      if (description.length > MAX_DESCRIPTION) {
        throw new ConnectError(
          `description must be at most ${MAX_DESCRIPTION} characters`,
          Code.InvalidArgument,
        );
      }
      const expiresAt = request.expiresAt ? timestampDate(request.expiresAt) : null;
      if (expiresAt && expiresAt.getTime() <= Date.now()) {
        throw new ConnectError("expires_at must be in the future", Code.InvalidArgument);
      }
      const secret = generateApiKey(kind);
      const base = {
        id: uuidv7(),
        organizationId: principal.organization.id,
        keyHash: hashApiKey(secret),
        shortKey: shortApiKey(secret),
        description,
        expiresAt,
      };
      if (kind === "service" && request.userId) {
        throw new ConnectError("user_id applies to personal keys only", Code.InvalidArgument);
      }
      const key: NewApiKey =
        kind === "personal"
          ? { ...base, ...(await personalKeyFields(sql, principal, request, ctx)) }
          : { ...base, ...(await serviceKeyFields(sql, principal, request, ctx)) };
      await sql.begin((tx) => insertApiKey(tx, key));
      const stored = await getApiKey(sql, principal.organization.id, key.id);
      if (!stored) throw new Error(`API key ${key.id} vanished right after creation`);
      return apiKeyMessage(stored, secret);
    },

    async listApiKeys(_request, ctx) {
      const principal = principalOf(ctx);
      const keys = await listApiKeys(sql, principal.organization.id, {
        userId: principal.user?.id ?? null,
        includeServiceKeys: mayManageServiceKeys(principal),
      });
      return { apiKeys: keys.map((k) => apiKeyMessage(k)) };
    },

    async revokeApiKey(request, ctx) {
      const principal = principalOf(ctx);
      if (!isUuid(request.apiKeyId))
        throw new ConnectError("api_key_id must be a UUID", Code.InvalidArgument);
      const key = await getApiKey(sql, principal.organization.id, request.apiKeyId);
      const own = key?.kind === "personal" && key.userId === principal.user?.id;
      // Keys the caller may not manage read as missing, so their ids cannot be probed.
      if (!key || (!own && !mayManageServiceKeys(principal))) {
        throw new ConnectError(`API key ${request.apiKeyId} not found`, Code.NotFound);
      }
      const revoked = await revokeApiKey(sql, principal.organization.id, key.id);
      if (!revoked) throw new ConnectError(`API key ${request.apiKeyId} not found`, Code.NotFound);
      return apiKeyMessage(revoked);
    },
  };
}

function mayManageServiceKeys(principal: Principal): boolean {
  return organizationPermissions(principal.organizationRole).includes("service-keys:manage");
}

function parseKind(kind: string): ApiKeyKind {
  if (kind === "" || kind === "personal") return "personal";
  if (kind === "service") return "service";
  throw new ConnectError(`kind must be "personal" or "service", not "${kind}"`, Code.InvalidArgument);
}

type KindFields = Pick<
  NewApiKey,
  "kind" | "userId" | "role" | "organizationRole" | "allWorkspaces" | "workspaceIds" | "defaultWorkspaceId"
>;

async function personalKeyFields(
  sql: Sql,
  principal: Principal,
  request: CreateApiKeyRequest,
  ctx: Parameters<typeof authorizeOrganization>[0],
): Promise<KindFields> {
  const forSelf = !request.userId || request.userId.toLowerCase() === principal.user?.id;
  const owner = forSelf ? selfOwner(principal) : await memberOwner(sql, principal, request.userId, ctx);
  if (request.workspaceIds.length > 0 || request.role || request.organizationRole) {
    throw new ConnectError(
      "workspace_ids, role and organization_role apply to service keys only: a personal key acts with its user's roles",
      Code.InvalidArgument,
    );
  }
  let defaultWorkspaceId: string | null = null;
  if (request.defaultWorkspaceId) {
    const id = requireUuid(request.defaultWorkspaceId, "default_workspace_id");
    const [ws] = await listGrantedWorkspaces(sql, owner.grant, id);
    if (!ws) throw new ConnectError(`default_workspace_id: workspace ${id} not found`, Code.InvalidArgument);
    defaultWorkspaceId = ws.id;
  }
  return {
    kind: "personal",
    userId: owner.userId,
    role: null,
    organizationRole: null,
    allWorkspaces: false,
    workspaceIds: [],
    defaultWorkspaceId,
  };
}

/** The user a personal key is for, and the workspaces that user reaches. */
interface KeyOwner {
  userId: string;
  grant: WorkspaceGrant;
}

function selfOwner(principal: Principal): KeyOwner {
  if (!principal.user) {
    throw new ConnectError(
      "a personal key belongs to a user, and this caller is a service key: create a service key instead, or name the member in user_id",
      Code.PermissionDenied,
    );
  }
  return { userId: principal.user.id, grant: principal.grant };
}

/** Another member of the caller's organization, for whom an organization admin issues a key. */
async function memberOwner(
  sql: Sql,
  principal: Principal,
  value: string,
  ctx: Parameters<typeof authorizeOrganization>[0],
): Promise<KeyOwner> {
  authorizeOrganization(ctx, "organization:manage");
  const userId = requireUuid(value, "user_id");
  const organizationId = principal.organization.id;
  const role = await findOrganizationRole(sql, organizationId, userId);
  if (!role) throw new ConnectError(`user ${userId} is not a member of the organization`, Code.NotFound);
  // The same grant the authenticator gives the member's keys.
  const grant: WorkspaceGrant =
    role === "admin"
      ? { kind: "organization", organizationId, role: "admin" }
      : { kind: "user", organizationId, userId };
  return { userId, grant };
}

async function serviceKeyFields(
  sql: Sql,
  principal: Principal,
  request: CreateApiKeyRequest,
  ctx: Parameters<typeof authorizeOrganization>[0],
): Promise<KindFields> {
  authorizeOrganization(ctx, "service-keys:manage");
  const role = oneOf(request.role || undefined, WORKSPACE_ROLES, "role", "editor");
  const organizationRole = oneOf(
    request.organizationRole || undefined,
    ORGANIZATION_ROLES,
    "organization_role",
    "viewer",
  );
  const requested = [...new Set(request.workspaceIds.map((id) => requireUuid(id, "workspace_ids")))];
  if (requested.length > MAX_SCOPED_WORKSPACES) {
    throw new ConnectError(
      `workspace_ids may name at most ${MAX_SCOPED_WORKSPACES} workspaces; leave it empty for an organization-wide key`,
      Code.InvalidArgument,
    );
  }
  const live = new Set(await findLiveWorkspaceIds(sql, principal.organization.id, requested));
  const missing = requested.filter((id) => !live.has(id));
  if (missing.length > 0) {
    throw new ConnectError(`workspace_ids: workspace ${missing.join(", ")} not found`, Code.InvalidArgument);
  }
  let defaultWorkspaceId: string | null = requested.length === 1 ? (requested[0] ?? null) : null;
  if (request.defaultWorkspaceId) {
    const id = requireUuid(request.defaultWorkspaceId, "default_workspace_id");
    const inScope =
      requested.length > 0
        ? live.has(id)
        : (await findLiveWorkspaceIds(sql, principal.organization.id, [id])).length > 0;
    if (!inScope) {
      throw new ConnectError(
        "default_workspace_id must be one of the key's workspaces",
        Code.InvalidArgument,
      );
    }
    defaultWorkspaceId = id;
  }
  return {
    kind: "service",
    userId: null,
    role,
    organizationRole,
    allWorkspaces: requested.length === 0,
    workspaceIds: requested,
    defaultWorkspaceId,
  };
}
