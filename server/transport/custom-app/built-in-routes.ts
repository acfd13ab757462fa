import type { DescService } from "@bufbuild/protobuf";
import { DOCS_PATH, OPENAPI_PATH } from "../docs/docs-adapter.js";
import type { HttpAdapter } from "../http-adapter.js";
import { parsePathTemplate, splitPath } from "../rest/path-template.js";
import { createRouteTable } from "../rest/route-table.js";
import { METRICS_PATH } from "../system-adapter.js";
import { USAGE_PAGE_PATH } from "../usage-page-adapter.js";

/**
 * Whether a path belongs to a built-in route (a REST binding of a served RPC or a REST-only
 * adapter), whatever its method: what the custom app does not serve itself falls through to these.
 * The custom-app handler asks before running the user's app, to know whether a request is for a
 * custom route (which `http.enable_custom_route_auth` guards) or a built-in one.
 */
export type BuiltInPathMatcher = (method: string, path: string) => boolean;

/** The matcher for the REST bindings of `services` and the routes of `adapters`. */
export function createBuiltInPathMatcher(
  services: readonly DescService[],
  adapters: readonly HttpAdapter[],
): BuiltInPathMatcher {
  const table = createRouteTable(services);
  const templates = adapters.flat().map((endpoint) => parsePathTemplate(endpoint.path));
  return (method, path) => {
    if (table.lookup(method, path) !== undefined) return true;
    const trimmed = path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
    const segments = splitPath(trimmed);
    return segments !== undefined && templates.some((template) => template.match(segments) !== undefined);
  };
}

/**
 * Built-in paths that answer without credentials (health and server info, the index, the API docs,
 * metrics, the usage page's shell): `http.middleware_order: auth_first` does not demand a key for
 * them, as their handlers do not.
 */
const PUBLIC_EXACT = new Set(["/", "/ok", "/info", METRICS_PATH, OPENAPI_PATH]);
const PUBLIC_PREFIXES = [`${DOCS_PATH}`, `${USAGE_PAGE_PATH}`];

/** Whether a built-in path answers without credentials (see {@link PUBLIC_EXACT}). */
export function isPublicBuiltInPath(path: string): boolean {
  if (PUBLIC_EXACT.has(path)) return true;
  return PUBLIC_PREFIXES.some((prefix) => path === prefix || path.startsWith(`${prefix}/`));
}
