import { pathToFileURL } from "node:url";
import type { AuthConfig } from "./graph-config-auth.js";

/** The handlers an `Auth` object of `@langchain/langgraph-sdk/auth` registered. */
export interface CustomAuthHandlers {
  /** `auth.authenticate(...)`; undefined when the object registers none (every request is refused). */
  readonly authenticate: ((request: Request) => unknown) | undefined;
  /** `auth.on(event, ...)` callbacks by event key (`threads:create`, `threads`, `*:read`, `*`). */
  readonly callbacks: Readonly<Record<string, (parameter: unknown) => unknown>>;
}

/** Resources an `on()` key may name, with their actions (the events of `@langchain/langgraph-sdk/auth`). */
const RESOURCE_ACTIONS: Readonly<Record<string, readonly string[]>> = {
  threads: ["create", "read", "update", "delete", "search", "create_run"],
  assistants: ["create", "read", "update", "delete", "search"],
  crons: ["create", "read", "update", "delete", "search"],
  store: ["put", "get", "search", "list_namespaces", "delete"],
};

/** Whether `key` is one `Auth.on()` accepts: `*`, a resource, `*:action` or `resource:action`. */
function isEventKey(key: string): boolean {
  if (key === "*" || key in RESOURCE_ACTIONS) return true;
  const [resource = "", action = "", extra] = key.split(":");
  if (extra !== undefined) return false;
  if (resource === "*") return Object.values(RESOURCE_ACTIONS).some((actions) => actions.includes(action));
  return RESOURCE_ACTIONS[resource]?.includes(action) ?? false;
}

/** Thrown when the `auth.path` module cannot be used; stops start-up. */
export class AuthModuleError extends Error {
  constructor(config: AuthConfig, reason: string, cause?: unknown) {
    super(`auth.path (${config.file}, export "${config.exportName}") cannot be used: ${reason}`, { cause });
    this.name = "AuthModuleError";
  }
}

/**
 * Imports the module of `auth.path` (tsx runs the process, so `.ts` loads) and reads the handlers
 * its `Auth` object registered. The object is recognised by the handler cache every `Auth` keeps,
 * so a copy of `@langchain/langgraph-sdk` in the user's own project works as well as ours.
 */
export async function loadCustomAuth(config: AuthConfig): Promise<CustomAuthHandlers> {
  let module: Record<string, unknown>;
  try {
    module = (await import(pathToFileURL(config.file).href)) as Record<string, unknown>;
  } catch (error) {
    throw new AuthModuleError(config, `importing the module failed: ${(error as Error).message}`, error);
  }
  const exported = module[config.exportName];
  if (exported === undefined)
    throw new AuthModuleError(
      config,
      `the module has no export "${config.exportName}" (its exports: ${Object.keys(module).join(", ") || "none"})`,
    );
  const cache =
    typeof exported === "object" && exported !== null
      ? (exported as { "~handlerCache"?: unknown })["~handlerCache"]
      : undefined;
  if (typeof cache !== "object" || cache === null)
    throw new AuthModuleError(
      config,
      'the export is not an Auth object: create it with `new Auth()` from "@langchain/langgraph-sdk/auth"',
    );
  const { authenticate, callbacks } = cache as { authenticate?: unknown; callbacks?: unknown };
  if (authenticate !== undefined && typeof authenticate !== "function")
    throw new AuthModuleError(config, "its authenticate handler is not a function");
  const handlers: Record<string, (parameter: unknown) => unknown> = {};
  for (const [event, callback] of Object.entries((callbacks ?? {}) as Record<string, unknown>)) {
    if (!isEventKey(event))
      throw new AuthModuleError(
        config,
        `it has a handler for "${event}", which is no event: use "*", a resource (${Object.keys(RESOURCE_ACTIONS).join(", ")}), "*:action" or "resource:action"`,
      );
    if (typeof callback !== "function")
      throw new AuthModuleError(config, `its handler for "${event}" is not a function`);
    handlers[event] = callback as (parameter: unknown) => unknown;
  }
  return {
    authenticate: authenticate as ((request: Request) => unknown) | undefined,
    callbacks: handlers,
  };
}
