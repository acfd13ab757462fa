import { Code, ConnectError } from "@connectrpc/connect";
import type { AuthMode } from "../../config.js";
import { isUuid } from "../../ids.js";
import type { Logger } from "../../logger.js";
import { type RequestScope, requestScopeKey } from "../../request-scope.js";
import { RUN_TOKEN_PREFIX } from "../../runtime/loopback-client.js";
import type { Sql } from "../../store/db.js";
import { type AuthenticatedKey, findUsableKeyByHash, touchApiKey } from "../../store/iam/api-key-store.js";
import { findFirstAdmin } from "../../store/iam/member-store.js";
import { findFirstOrganization } from "../../store/iam/organization-store.js";
import {
  grantedWorkspace,
  listGrantedWorkspaces,
  type WorkspaceGrant,
  type WorkspaceRecord,
} from "../../store/iam/workspace-store.js";
import type { CallGuard } from "../call-guard.js";
import { hashApiKey } from "./api-key-secret.js";
import type { Identity } from "./identity.js";
import type { CacheableIdentity, IdentityCache } from "./identity-cache.js";
import { type Principal, principalKey } from "./principal.js";
import { runTokenIdentity } from "./run-token-identity.js";

/** last_used_at is kept to the minute (the store only writes once a minute anyway). */
const TOUCH_INTERVAL_MS = 60_000;
/** Bounds the memo of touched keys; clearing it only costs one extra UPDATE per key. */
const MAX_TOUCHED_KEYS = 10_000;
/** The cache key of AGENTPLANE_AUTH=none's local admin; API keys are cached under their hash (hex). */
const LOCAL_ADMIN_CACHE_KEY = "local-admin";

/** Options of {@link createAuthenticator}. */
export interface AuthenticatorOptions {
  sql: Sql;
  mode: AuthMode;
  log: Logger;
  /** Where resolved credentials are kept between requests (cleared on every identity change). */
  identities: IdentityCache<Identity>;
  /** The graphs file's custom auth, which decides who sends each request; absent: API keys only. */
  custom?: CustomAuthentication;
  /** Runs after each successful authentication (custom encryption's context, encryption-context.ts). */
  onAuthenticated?: (principal: Principal) => Promise<void>;
}

/** The HTTP method and full URL of a request, for custom auth's `Request`. */
export interface RequestTarget {
  readonly method: string;
  readonly url: string;
}

/** Custom auth (services/iam/custom-authenticator.ts), as the authenticator runs it. */
export interface CustomAuthentication {
  /**
   * The principal of a request; `byApiKey` authenticates it the usual way (for operator keys,
   * run tokens and Studio).
   */
  authenticate(
    headers: Headers,
    target: RequestTarget,
    byApiKey: () => Promise<Principal>,
  ): Promise<Principal>;
}

/** The target of a request that did not say (REST-only adapters pass theirs). */
const UNKNOWN_TARGET: RequestTarget = { method: "GET", url: "http://localhost/" };

/** Authentication for RPCs (the guard) and for REST-only adapters (`authenticate`). */
export interface Authenticator {
  /** The guard of every authenticated service: leaves the {@link Principal} in `ctx.values`. */
  readonly guard: CallGuard;
  /**
   * The principal of a request's headers (and, for custom auth, its method and URL); throws
   * `ConnectError` UNAUTHENTICATED like the guard.
   */
  authenticate(headers: Headers, target?: RequestTarget): Promise<Principal>;
}

/**
 * Turns `x-api-key` (or `Authorization: Bearer`) and `x-tenant-id` into a {@link Principal}.
 * Unknown, revoked and expired keys all answer the same 401. A key resolved once is kept in
 * `identities` for a few seconds, so most requests authenticate without a query; any change to keys,
 * memberships or workspaces clears it (server/store/iam/identity-changes.ts).
 */
export function createAuthenticator({
  sql,
  mode,
  log,
  identities,
  custom,
  onAuthenticated,
}: AuthenticatorOptions): Authenticator {
  /** When this process last recorded each key's use, so a busy key costs no UPDATE per request. */
  const touched = new Map<string, number>();

  /** Records that the key was used, at most once a minute per key and process, without waiting. */
  function touch(apiKeyId: string): void {
    const now = Date.now();
    if (now - (touched.get(apiKeyId) ?? 0) < TOUCH_INTERVAL_MS) return;
    if (touched.size >= MAX_TOUCHED_KEYS) touched.clear();
    touched.set(apiKeyId, now);
    touchApiKey(sql, apiKeyId).catch((error: unknown) => log.warn("could not record API key use", { error }));
  }

  /**
   * The key's identity. The lookup also reads the workspace `wanted` names (else the key's default),
   * in the same statement.
   */
  async function byApiKey(keyHash: Buffer, wanted: string | null): Promise<CacheableIdentity<Identity>> {
    const found = await findUsableKeyByHash(sql, keyHash, wanted);
    if (!found)
      throw new ConnectError("invalid API key: it is unknown, revoked or expired", Code.Unauthenticated);
    const identity = principalOfKey(found);
    const validUntil = found.expiresAt?.getTime() ?? null;
    const workspaceId = wanted ?? found.defaultWorkspaceId;
    if (workspaceId === null) return { value: identity, validUntil };
    const workspace = found.workspace ? grantedWorkspace(found.workspace, identity.grant) : undefined;
    return { value: { ...identity, prefetched: { workspaceId, workspace } }, validUntil };
  }

  /**
   * Who sent `headers`, from the cache when this process resolved the same credential (for the same
   * workspace) recently. A `requested` workspace that is no UUID is left for selectWorkspace to reject.
   */
  function identify(headers: Headers, requested: string | undefined): Promise<Identity> {
    if (mode === "none")
      return identities.resolve(LOCAL_ADMIN_CACHE_KEY, async () => ({
        value: await localAdmin(sql),
        validUntil: null,
      }));
    const key = readApiKey(headers);
    const keyHash = hashApiKey(key);
    // Run tokens are not cached: one stops working the moment its run ends.
    if (key.startsWith(RUN_TOKEN_PREFIX)) return runTokenIdentity(sql, keyHash);
    const wanted = requested !== undefined && isUuid(requested) ? requested : null;
    return identities.resolve(`${keyHash.toString("hex")}:${wanted ?? ""}`, () => byApiKey(keyHash, wanted));
  }

  async function authenticateKey(headers: Headers): Promise<Principal> {
    const requested = headers.get("x-tenant-id")?.trim() || undefined;
    const base = await identify(headers, requested);
    if (base.apiKey) touch(base.apiKey.id);
    let selected: Promise<WorkspaceRecord> | undefined;
    return {
      ...base,
      authUser: null,
      authRules: null,
      workspace: () => {
        selected ??= selectWorkspace(sql, base, requested);
        return selected;
      },
    };
  }

  function authenticateCaller(headers: Headers, target: RequestTarget): Promise<Principal> {
    if (!custom) return authenticateKey(headers);
    return custom.authenticate(headers, target, () => authenticateKey(headers));
  }

  function authenticate(headers: Headers, target: RequestTarget = UNKNOWN_TARGET): Promise<Principal> {
    const principal = authenticateCaller(headers, target);
    if (!onAuthenticated) return principal;
    return principal.then(async (p) => {
      await onAuthenticated(p);
      return p;
    });
  }

  return {
    authenticate,
    guard: async (ctx) => {
      const principal = await authenticate(ctx.requestHeader, { method: ctx.requestMethod, url: ctx.url });
      const scope = ctx.values.get(requestScopeKey);
      ctx.values.set(principalKey, scope ? noteWorkspaceIn(scope, principal) : principal);
    },
  };
}

/** The principal, whose selected workspace is also noted in the request's scope for the access log. */
function noteWorkspaceIn(scope: RequestScope, principal: Principal): Principal {
  return {
    ...principal,
    workspace: () =>
      principal.workspace().then((workspace) => {
        scope.workspaceId = workspace.id;
        return workspace;
      }),
  };
}

/** The key from `x-api-key`, or from `Authorization: Bearer <key>`. */
function readApiKey(headers: Headers): string {
  const key = headers.get("x-api-key")?.trim();
  if (key) return key;
  const bearer = /^Bearer\s+(\S+)$/i.exec(headers.get("authorization") ?? "");
  if (bearer?.[1]) return bearer[1];
  throw new ConnectError("missing API key: send it in the x-api-key header", Code.Unauthenticated);
}

function principalOfKey(key: AuthenticatedKey): Identity {
  const organization = {
    id: key.organizationId,
    displayName: key.organization.displayName,
    plan: key.organization.plan,
    createdAt: key.organization.createdAt,
  };
  const apiKey = { id: key.id, shortKey: key.shortKey, kind: key.kind };
  if (key.kind === "personal") {
    if (!key.user || !key.userId || !key.user.organizationRole) {
      // The key's user left the organization: personal keys stop working with their user's membership.
      throw new ConnectError(
        "invalid API key: its user is no longer a member of the organization",
        Code.Unauthenticated,
      );
    }
    const organizationRole = key.user.organizationRole;
    return {
      organization,
      user: { id: key.userId, email: key.user.email, fullName: key.user.fullName },
      apiKey,
      organizationRole,
      grant:
        organizationRole === "admin"
          ? { kind: "organization", organizationId: key.organizationId, role: "admin" }
          : { kind: "user", organizationId: key.organizationId, userId: key.userId },
      defaultWorkspaceId: key.defaultWorkspaceId,
      prefetched: null,
    };
  }
  const organizationRole = key.organizationRole ?? "viewer";
  const role = key.role ?? "viewer";
  let grant: WorkspaceGrant;
  if (organizationRole === "admin")
    grant = { kind: "organization", organizationId: key.organizationId, role: "admin" };
  else if (key.allWorkspaces) grant = { kind: "organization", organizationId: key.organizationId, role };
  else grant = { kind: "api-key", organizationId: key.organizationId, apiKeyId: key.id, role };
  return {
    organization,
    user: null,
    apiKey,
    organizationRole,
    grant,
    defaultWorkspaceId: key.defaultWorkspaceId,
    prefetched: null,
  };
}

/** With AGENTPLANE_AUTH=none every request acts as the first organization's first admin. */
async function localAdmin(sql: Sql): Promise<Identity> {
  const organization = await findFirstOrganization(sql);
  const user = organization && (await findFirstAdmin(sql, organization.id));
  if (!organization || !user) throw new ConnectError("the server has no organization yet", Code.Unavailable);
  return {
    organization,
    user,
    apiKey: null,
    organizationRole: "admin",
    grant: { kind: "organization", organizationId: organization.id, role: "admin" },
    defaultWorkspaceId: null,
    prefetched: null,
  };
}

/**
 * Picks the request's workspace: the one named by `x-tenant-id` when the caller reaches it, else the
 * key's default, else the caller's only (or, for users, oldest) workspace. A service key that
 * reaches several workspaces and has no default must name one. A workspace read with the key
 * answers without a query when it is the one asked for; otherwise the grant's workspaces are listed.
 */
async function selectWorkspace(
  sql: Sql,
  base: Identity,
  requested: string | undefined,
): Promise<WorkspaceRecord> {
  const { prefetched } = base;
  if (requested !== undefined) {
    if (!isUuid(requested))
      throw new ConnectError("x-tenant-id must be a workspace UUID", Code.InvalidArgument);
    const ws =
      prefetched?.workspaceId === requested
        ? prefetched.workspace
        : (await listGrantedWorkspaces(sql, base.grant, requested))[0];
    if (!ws) {
      throw new ConnectError(
        `permission denied: this API key has no access to workspace ${requested}`,
        Code.PermissionDenied,
      );
    }
    return ws;
  }
  if (prefetched?.workspace && prefetched.workspaceId === base.defaultWorkspaceId)
    return prefetched.workspace;
  const reachable = await listGrantedWorkspaces(sql, base.grant);
  const preferred = reachable.find((w) => w.id === base.defaultWorkspaceId);
  if (preferred) return preferred;
  if (base.user === null && reachable.length > 1) {
    throw new ConnectError(
      "this service key can act in several workspaces: send the x-tenant-id header naming one of them",
      Code.PermissionDenied,
    );
  }
  const first = reachable[0];
  if (!first) {
    throw new ConnectError(
      "permission denied: this API key has no access to any workspace",
      Code.PermissionDenied,
    );
  }
  return first;
}
