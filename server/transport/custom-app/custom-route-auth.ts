import type { Authenticator } from "../../services/iam/authenticator.js";
import { permissionsOf } from "../../services/iam/principal.js";

/**
 * The caller as the custom app sees it (`c.get("auth").user`), in the shape of the LangGraph SDK's
 * authenticated user: an identity, a display name, permissions.
 */
export interface CustomRouteUser {
  readonly identity: string;
  readonly display_name: string;
  readonly permissions: readonly string[];
  readonly is_authenticated: true;
}

/**
 * The one place the custom app's requests are authenticated (custom routes with
 * `http.enable_custom_route_auth`, and built-in routes before the middleware with
 * `http.middleware_order: auth_first`): the server's own authenticator, whose `ConnectError`
 * (401 with what to send) refuses the request.
 */
export function createCustomRouteAuth(auth: Pick<Authenticator, "authenticate">) {
  return async (request: Request): Promise<CustomRouteUser> => {
    const principal = await auth.authenticate(request.headers);
    const name = principal.user?.email ?? principal.apiKey?.shortKey ?? "local admin";
    return {
      identity: principal.user?.id ?? principal.apiKey?.id ?? "local-admin",
      display_name: name,
      permissions: permissionsOf(principal),
      is_authenticated: true,
    };
  };
}
