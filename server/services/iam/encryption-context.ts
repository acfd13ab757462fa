import { Code, ConnectError } from "@connectrpc/connect";
import type { Logger } from "../../logger.js";
import type { EncryptionContextHandler } from "../../runtime/custom-encryption-module.js";
import { type EncryptionContextValue, setEncryptionContext } from "../../store/crypto/encryption-scope.js";
import type { Principal } from "./principal.js";

/**
 * The user the `context` handler of custom encryption sees: custom auth's user as its handler
 * returned it, or, for an API key, the key's user (a service key is its own identity).
 */
function userOf(principal: Principal): Record<string, unknown> {
  if (principal.authUser) return { ...principal.authUser };
  const identity = principal.user?.id ?? `api-key:${principal.apiKey?.id ?? "local"}`;
  return {
    identity,
    display_name: principal.user?.fullName ?? identity,
    is_authenticated: true,
    permissions: [],
    organization_id: principal.organization.id,
  };
}

/**
 * Runs after every successful authentication: derives the request's encryption context with the
 * module's `context` handler (async allowed) and sets it in the request's encryption scope, where
 * every write of the request, and the runs and crons it creates, take it from. A handler that fails
 * refuses the request (nothing could be stored under the right context).
 */
export function createEncryptionContextHook(
  handler: EncryptionContextHandler,
  source: string,
  log: Logger,
): (principal: Principal) => Promise<void> {
  return async (principal) => {
    let context: unknown;
    try {
      context = await handler(userOf(principal), { model: null, field: null, metadata: {} });
    } catch (error) {
      log.error("custom encryption context handler failed", { module: source, error });
      throw new ConnectError(
        `${source}: the context handler threw: ${(error as Error)?.message}`,
        Code.Internal,
      );
    }
    if (context === undefined || context === null) return setEncryptionContext(undefined);
    if (typeof context !== "object" || Array.isArray(context)) {
      log.error("custom encryption context handler returned a non-object", { module: source });
      throw new ConnectError(`${source}: the context handler must return an object`, Code.Internal);
    }
    setEncryptionContext(JSON.parse(JSON.stringify(context)) as EncryptionContextValue);
  };
}
