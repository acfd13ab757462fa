import { Code, ConnectError } from "@connectrpc/connect";
import type { Logger } from "../../logger.js";
import type { CustomAuthHandlers } from "../../runtime/custom-auth-module.js";
import { type AuthFilter, parseAuthFilter } from "../../store/filters/auth-filter-sql.js";
import { httpExceptionError, isHttpException } from "./auth-http-exception.js";
import type { AuthRules, AuthUser } from "./principal.js";

/** An event's handler, as {@link createAuthRules} resolves it by the documented priority. */
interface Route {
  readonly resource: string;
  readonly action: string;
  /** The key the handler was registered under; undefined when none applies. */
  readonly handlerKey: string | undefined;
  readonly handler: CustomAuthHandlers["callbacks"][string] | undefined;
}

/**
 * The `Auth.on()` handlers as {@link AuthRules}. The handler of an event is the first registered of
 * `resource:action`, `resource`, `*:action`, `*` (the SDK's documented priority); none allows all.
 * A handler answers `undefined`, `null` or `true` (allowed, no filter), `false` (403) or a filter
 * object on the resource's metadata (a store item's: its value with its namespace and key, as on
 * the LangGraph JS server). An `HTTPException` answers with its status and headers. A
 * handler that throws anything else, or returns anything else, answers 403 naming the handler, and
 * the log says what it did: the request is refused, never let through or answered 500.
 */
export function createAuthRules(handlers: CustomAuthHandlers, log: Logger, source: string): AuthRules {
  const { callbacks } = handlers;
  const misbehaved = (event: string, handlerKey: string, problem: string, error?: unknown) => {
    log.error("a custom auth handler misbehaved; the request is refused", {
      handler: `on("${handlerKey}")`,
      event,
      source,
      problem,
      ...(error === undefined ? {} : { error }),
    });
    return new ConnectError(`the auth handler for ${event} ${problem}`, Code.PermissionDenied);
  };
  // Which handler an event has never changes (the Auth object is loaded once), so each event's is
  // looked up once: the events are a few dozen `resource:action` names of ours.
  const routes = new Map<string, Route>();
  const routeOf = (event: string): Route => {
    let route = routes.get(event);
    if (!route) {
      const [resource = "", action = ""] = event.split(":");
      const handlerKey = [event, resource, `*:${action}`, "*"].find((key) => key in callbacks);
      route = {
        resource,
        action,
        handlerKey,
        handler: handlerKey === undefined ? undefined : callbacks[handlerKey],
      };
      routes.set(event, route);
    }
    return route;
  };
  return {
    async authorize(
      event: string,
      value: Record<string, unknown>,
      user: AuthUser,
    ): Promise<AuthFilter | undefined> {
      const { resource, action, handlerKey, handler } = routeOf(event);
      if (handlerKey === undefined || !handler) return undefined;
      let result: unknown;
      try {
        result = await handler({ event, resource, action, value, user, permissions: [...user.permissions] });
      } catch (error) {
        if (isHttpException(error)) throw httpExceptionError(error);
        throw misbehaved(event, handlerKey, "failed (the server log has its error)", error);
      }
      if (result === undefined || result === null || result === true) return undefined;
      if (result === false)
        throw new ConnectError(
          `permission denied: the auth handler for ${event} refused this request`,
          Code.PermissionDenied,
        );
      const filter = parseAuthFilter(result);
      if ("problem" in filter)
        throw misbehaved(event, handlerKey, `returned an invalid filter: ${filter.problem}`);
      return filter;
    },
  };
}
