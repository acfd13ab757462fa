import { Code, ConnectError } from "@connectrpc/connect";
import type { CustomAuthSettings } from "../../config.js";
import type { Logger } from "../../logger.js";
import type { CustomAuthHandlers } from "../../runtime/custom-auth-module.js";
import type { AuthConfig } from "../../runtime/graph-config-auth.js";
import { RUN_TOKEN_PREFIX } from "../../runtime/loopback-client.js";
import type { Sql } from "../../store/db.js";
import type { WorkspaceRole } from "../../store/iam/member-store.js";
import { findFirstOrganization, type OrganizationRecord } from "../../store/iam/organization-store.js";
import { listGrantedWorkspaces, type WorkspaceRecord } from "../../store/iam/workspace-store.js";
import { httpExceptionError, isHttpException } from "./auth-http-exception.js";
import { authRequest } from "./auth-request.js";
import type { CustomAuthentication, RequestTarget } from "./authenticator.js";
import { createAuthRules } from "./custom-auth-rules.js";
import type { AuthRules, AuthUser, Principal } from "./principal.js";

/** Studio's user, as LangGraph's servers name it (`isStudioUser()` of the SDK recognises it). */
const STUDIO_USER: AuthUser = {
  kind: "StudioUser",
  identity: "langgraph-studio-user",
  display_name: "langgraph-studio-user",
  permissions: [],
  is_authenticated: true,
};

/** agentplane credentials in `Authorization: Bearer`: personal and service keys, run tokens. */
const AGENTPLANE_KEY_PATTERN = /^ap_(pt|sk|rt)_/;
/**
 * How long the custom users' workspace is kept once read: a deleted or renamed workspace is
 * noticed within seconds, and a busy server reads it once per interval, not per request.
 */
const WORKSPACE_TTL_MS = 5_000;

/** Options of {@link createCustomAuthentication}. */
export interface CustomAuthOptions {
  handlers: CustomAuthHandlers;
  config: AuthConfig;
  settings: CustomAuthSettings;
  sql: Sql;
  log: Logger;
}

/**
 * Custom auth of the graphs file (`auth.path`): every request's principal comes from the `Auth`
 * object's `authenticate(request)`, except run tokens, Studio (`x-auth-scheme: langsmith` with a
 * valid key, unless `auth.disable_studio_auth`) and, with `apiKeys: "allow"`, agentplane API keys.
 * Custom users act in one workspace with one role (see {@link CustomAuthSettings}); the user rides
 * in `Principal.authUser` and the `on()` handlers in `Principal.authRules`.
 *
 * `authenticate` sees a Fetch `Request` with the method, full URL and headers (no body: reading it
 * would cost every request a copy, and LangGraph's handlers read headers). An `HTTPException` answers
 * with its status and headers. Anything else it throws answers 401 (the JS server answers 500): a
 * JWT library throwing on a bad token is the common case, and refusing is the safe answer; the log
 * names the handler. A result that is no user (not a string, nor an object with a string `identity`)
 * answers 401 too, with a message saying so.
 */
export function createCustomAuthentication({
  handlers,
  config,
  settings,
  sql,
  log,
}: CustomAuthOptions): CustomAuthentication {
  const source = `${config.file}:${config.exportName}`;
  const rules = createAuthRules(handlers, log, source);
  let cached:
    | { at: number; value: Promise<{ organization: OrganizationRecord; workspace: WorkspaceRecord }> }
    | undefined;

  const place = () => {
    if (!cached || Date.now() - cached.at > WORKSPACE_TTL_MS) {
      const value = customUsersWorkspace(sql, settings);
      value.catch(() => {
        if (cached?.value === value) cached = undefined;
      });
      cached = { at: Date.now(), value };
    }
    return cached.value;
  };

  const refuse = (problem: string, error?: unknown): ConnectError => {
    log.error("the custom auth handler misbehaved; the request is refused", {
      handler: "authenticate",
      source,
      problem,
      ...(error === undefined ? {} : { error }),
    });
    return new ConnectError(`authentication failed: the auth handler ${problem}`, Code.Unauthenticated);
  };

  async function userOf(headers: Headers, target: RequestTarget): Promise<AuthUser> {
    const authenticate = handlers.authenticate;
    if (!authenticate)
      throw new ConnectError(
        "authentication failed: the server's Auth object registers no authenticate handler",
        Code.Unauthenticated,
      );
    let result: unknown;
    try {
      result = await authenticate(authRequest(headers, target));
    } catch (error) {
      if (isHttpException(error)) throw httpExceptionError(error);
      throw refuse("failed (the server log has its error)", error);
    }
    const normalized = normalizeUser(result);
    if (!normalized.ok) throw refuse(normalized.problem);
    return normalized.user;
  }

  return {
    async authenticate(headers, target, byApiKey) {
      const key = presentedKey(headers);
      if (key?.startsWith(RUN_TOKEN_PREFIX)) return byApiKey();
      if (key && !config.disableStudioAuth && headers.get("x-auth-scheme") === "langsmith")
        return { ...(await byApiKey()), authUser: STUDIO_USER };
      if (key && settings.apiKeys === "allow") return byApiKey();
      const user = await userOf(headers, target);
      const { organization, workspace } = await place();
      return customPrincipal(organization, workspace, settings.role, user, rules);
    },
  };
}

function customPrincipal(
  organization: OrganizationRecord,
  workspace: WorkspaceRecord,
  role: WorkspaceRole,
  user: AuthUser,
  rules: AuthRules,
): Principal {
  return {
    organization,
    user: null,
    apiKey: null,
    organizationRole: "viewer",
    grant: { kind: "run", organizationId: organization.id, workspaceId: workspace.id, role },
    authUser: user,
    authRules: rules,
    workspace: () => Promise.resolve(workspace),
  };
}

/** The workspace custom users act in, with their role; UNAVAILABLE when there is none. */
async function customUsersWorkspace(
  sql: Sql,
  settings: CustomAuthSettings,
): Promise<{ organization: OrganizationRecord; workspace: WorkspaceRecord }> {
  const organization = await findFirstOrganization(sql);
  if (!organization) throw new ConnectError("the server has no organization yet", Code.Unavailable);
  const [workspace] = await listGrantedWorkspaces(
    sql,
    { kind: "organization", organizationId: organization.id, role: settings.role },
    settings.workspaceId,
  );
  if (!workspace)
    throw new ConnectError(
      settings.workspaceId
        ? `AGENTPLANE_CUSTOM_AUTH_WORKSPACE names workspace ${settings.workspaceId}, which the organization does not have`
        : "the organization has no workspace for custom-auth users",
      Code.Unavailable,
    );
  return { organization, workspace };
}

/** An agentplane credential the request carries: `x-api-key`, or a Bearer token shaped like one. */
function presentedKey(headers: Headers): string | undefined {
  const key = headers.get("x-api-key")?.trim();
  if (key) return key;
  const bearer = /^Bearer\s+(\S+)$/i.exec(headers.get("authorization") ?? "")?.[1];
  return bearer && AGENTPLANE_KEY_PATTERN.test(bearer) ? bearer : undefined;
}

/** The user of `authenticate`'s result, as LangGraph's servers normalise it; or what is wrong. */
export function normalizeUser(
  result: unknown,
): { ok: true; user: AuthUser } | { ok: false; problem: string } {
  if (typeof result === "string") {
    if (result === "") return { ok: false, problem: "returned an empty identity" };
    return {
      ok: true,
      user: { identity: result, permissions: [], display_name: result, is_authenticated: true },
    };
  }
  if (typeof result !== "object" || result === null || Array.isArray(result))
    return {
      ok: false,
      problem: `returned ${result === null ? "null" : Array.isArray(result) ? "an array" : typeof result}; expected a string or an object with a string identity`,
    };
  const user = result as Record<string, unknown>;
  if (typeof user.identity !== "string" || user.identity === "")
    return { ok: false, problem: "returned an object without a string identity" };
  const permissions = user.permissions ?? [];
  if (!Array.isArray(permissions) || !permissions.every((p) => typeof p === "string"))
    return { ok: false, problem: "returned permissions that are not an array of strings" };
  if (user.display_name !== undefined && typeof user.display_name !== "string")
    return { ok: false, problem: "returned a display_name that is not a string" };
  if (user.is_authenticated !== undefined && typeof user.is_authenticated !== "boolean")
    return { ok: false, problem: "returned an is_authenticated that is not a boolean" };
  return {
    ok: true,
    user: {
      ...user,
      identity: user.identity,
      permissions,
      display_name: user.display_name ?? user.identity,
      is_authenticated: user.is_authenticated ?? true,
    },
  };
}
