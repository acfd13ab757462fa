/**
 * Relative ("/…") webhooks: delivered to this server's own routes (a custom `http.app` route, or a
 * built-in one) at the API's address, as the LangGraph servers do, with the run's credentials: a
 * run token minted for the call, acting in the run's workspace only, deleted when the call ends.
 * The call never leaves the server's own address, so the SSRF policy does not apply to it.
 */
import type { EndpointPolicy } from "../net/endpoint-policy.js";
import { mintRunToken } from "../runtime/loopback-client.js";
import type { Sql } from "../store/db.js";
import { deleteRunToken } from "../store/tracing/run-token-store.js";

/** Where a process reaches its own API, and the database its tokens live in. */
export interface WebhookLoopback {
  sql: Sql;
  /** The API's base URL; undefined while the process does not know it. */
  url: () => string | undefined;
}

/** The API's own address is loopback or private: the call may go there, and only there. */
const OWN_ADDRESS_POLICY: EndpointPolicy = { allowPrivate: true, allowSetting: "AGENTPLANE_LOOPBACK_URL" };
/** Credentials the call sets itself: configured ones meant for outside receivers are not sent. */
const CREDENTIAL_HEADERS = new Set(["authorization", "x-api-key", "x-tenant-id", "cookie"]);

/** A relative webhook call, ready to send: its absolute URL, headers, policy, and the token's cleanup. */
export interface LoopbackCall {
  url: string;
  headers: Record<string, string>;
  policy: EndpointPolicy;
  /** Deletes the call's token; never throws. */
  release: () => Promise<void>;
}

/**
 * Prepares the call of relative webhook `path` for the run: answers a sentence instead when this
 * process does not know its API's address (a `worker` without AGENTPLANE_LOOPBACK_URL).
 */
export async function prepareLoopbackCall(
  loopback: WebhookLoopback,
  run: { workspaceId: string; runId: string },
  path: string,
  configured: Readonly<Record<string, string>>,
  ttlSeconds: number,
): Promise<LoopbackCall | string> {
  const base = loopback.url();
  if (base === undefined)
    return "this process does not know the API's address for a relative webhook: set AGENTPLANE_LOOPBACK_URL on worker processes";
  const target = new URL(path, base);
  // The path was checked when the run was created; this guards a base or path that would leave it.
  if (target.origin !== new URL(base).origin) return "the relative webhook resolves off this server";
  const { token, tokenHash } = await mintRunToken(loopback.sql, run, ttlSeconds, "webhook");
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(configured))
    if (!CREDENTIAL_HEADERS.has(name.toLowerCase())) headers[name] = value;
  headers["x-api-key"] = token;
  headers["x-tenant-id"] = run.workspaceId;
  return {
    url: target.href,
    headers,
    policy: OWN_ADDRESS_POLICY,
    release: () => deleteRunToken(loopback.sql, tokenHash).catch(() => {}),
  };
}
