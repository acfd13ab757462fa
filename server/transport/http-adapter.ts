import type { NodeServerRequest, NodeServerResponse } from "./rest/node-types.js";

/**
 * REST-only routes: what is not an RPC (multipart trace uploads, CSV downloads, web pages). An
 * adapter declares its routes as data; the HTTP handler matches them, decodes their path variables
 * and query the same strict way as the REST transcoder's, and applies one error policy to all of
 * them (see adapter-router.ts). Their bodies go through the same readers and input screen
 * (body/json-body.ts, input/).
 */

/** A REST-only route, as data: what the HTTP handler matches, and what the fuzz test enumerates. */
export interface AdapterRoute {
  /** Its HTTP methods; any other method on its path answers 405 with Allow. */
  readonly methods: readonly string[];
  /**
   * Its path: literal segments and `{name}` variables of one segment each (google.api.http syntax).
   * A trailing `/` on a request is accepted too.
   */
  readonly path: string;
}

/** What an adapter's handler gets besides the request: the route's decoded path variables and raw query. */
export interface AdapterCall {
  /** Path variables by name, percent-decoded and screened (no NUL). */
  readonly vars: Readonly<Record<string, string>>;
  /** The query string without `?`; parse it with rest/query-string.ts. */
  readonly query: string;
}

/**
 * Serves one request to its route. It answers success itself and throws a `ConnectError` to refuse
 * (answered as `{"detail"}` with the REST status of its code); any other error is a bug, logged and
 * answered 500.
 */
export type AdapterServe = (
  req: NodeServerRequest,
  res: NodeServerResponse,
  call: AdapterCall,
) => Promise<void>;

/** A route with the function that serves it. */
export interface AdapterEndpoint extends AdapterRoute {
  readonly serve: AdapterServe;
}

/** A REST-only adapter: its endpoints. */
export type HttpAdapter = readonly AdapterEndpoint[];

/**
 * Joins an adapter's declared routes with their handlers, keyed by path, so that every declared
 * route is served (the type makes a missing handler a compile error).
 */
export function bindAdapter<const Routes extends readonly AdapterRoute[]>(
  routes: Routes,
  serves: { readonly [Path in Routes[number]["path"]]: AdapterServe },
): HttpAdapter {
  return routes.map((route) => ({ ...route, serve: serves[route.path as Routes[number]["path"]] }));
}
