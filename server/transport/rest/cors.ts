import { cors } from "@connectrpc/connect";
import { writeRestError } from "./http-status.js";
import type { NodeServerRequest, NodeServerResponse } from "./node-types.js";

/** Methods browsers may use: the REST verbs, plus Connect's (GET, POST). */
const allowedMethods = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"].join(", ");

/**
 * Request headers browsers may send: Connect's and gRPC-Web's (Content-Encoding among them, which
 * gzip request bodies need), our authentication and tenancy headers, and SSE resumption.
 */
const allowedHeaders = [
  ...cors.allowedHeaders,
  "x-api-key",
  "x-tenant-id",
  "last-event-id",
  "authorization",
  "x-request-id",
].join(", ");

/** Response headers browser scripts may read: Connect's and gRPC-Web's, pagination, locations. */
const exposedHeaders = [
  ...cors.exposedHeaders,
  "x-pagination-total",
  "x-pagination-next",
  "content-location",
  "location",
  "x-request-id",
].join(", ");

/** How long browsers may cache a preflight: 2 hours, the most Chromium honours. */
const preflightMaxAgeSeconds = String(2 * 60 * 60);

/** Who may call the server from a browser page of another origin. */
export interface CorsPolicy {
  /** Origins (`scheme://host[:port]`) whose pages may call; `*` allows every origin. */
  readonly origins: readonly string[];
  /**
   * Refuse (403) every request from an origin that may not call, not only its preflight: set when
   * authentication is off, where a page's plain form POST (sent without a preflight) would otherwise
   * act as admin. It also stops counting a page as same-origin unless it was loaded from a loopback
   * name, which defeats DNS rebinding (a hostile name resolving to 127.0.0.1).
   */
  readonly refuseUnlisted: boolean;
  /** Methods allowed beyond the built-in ones (the graphs file's `http.cors.allow_methods`). */
  readonly extraMethods?: readonly string[];
  /** Request headers allowed beyond the built-in ones (`http.cors.allow_headers`). */
  readonly extraHeaders?: readonly string[];
  /** Response headers exposed beyond the built-in ones (`http.cors.expose_headers`). */
  readonly extraExposedHeaders?: readonly string[];
  /** Answer `Access-Control-Allow-Credentials: true`, so pages may send cookies (`http.cors.allow_credentials`). */
  readonly allowCredentials?: boolean;
  /** Seconds a preflight may be cached (`http.cors.max_age`); 2 hours by default. */
  readonly maxAgeSeconds?: number;
}

/**
 * CORS for browser clients of every protocol on the port (REST, SSE, Connect, gRPC-Web), built for a
 * {@link CorsPolicy}. The HTTP server calls it first for every request. A request whose `Origin` is
 * allowed (listed, or the server's own origin) gets that origin echoed in
 * `Access-Control-Allow-Origin` (with `Vary: Origin`, so caches keep answers per origin) and the
 * exposed headers; its preflight (`OPTIONS` with `Access-Control-Request-Method`) is answered here
 * with 204. A preflight from any other origin is answered 403 without CORS headers, so the browser
 * stops there; its other requests get no CORS headers (the page cannot read the answer) or, with
 * `refuseUnlisted`, a 403. Credentials (cookies) are not allowed unless the policy says so: callers
 * authenticate with headers. The policy's extra methods and headers add to the built-in lists.
 *
 * The returned function returns true when it fully answered the request (a preflight, a refusal).
 */
export function createCors(policy: CorsPolicy): (req: NodeServerRequest, res: NodeServerResponse) => boolean {
  const anyOrigin = policy.origins.includes("*");
  const listed = new Set(policy.origins);
  const union = (base: string, extra: readonly string[] | undefined) =>
    extra === undefined ? base : [...new Set([...base.split(", "), ...extra])].join(", ");
  const methods = union(allowedMethods, policy.extraMethods);
  const headers = union(allowedHeaders, policy.extraHeaders);
  const exposed = union(exposedHeaders, policy.extraExposedHeaders);
  const maxAge = policy.maxAgeSeconds === undefined ? preflightMaxAgeSeconds : String(policy.maxAgeSeconds);
  return (req, res) => {
    const origin = req.headers.origin;
    if (origin === undefined) return false;
    res.setHeader("vary", "Origin");
    const preflight = req.method === "OPTIONS" && req.headers["access-control-request-method"] !== undefined;
    if (!(anyOrigin || listed.has(origin) || isSameOrigin(req, origin, policy.refuseUnlisted))) {
      if (!preflight && !policy.refuseUnlisted) return false;
      writeRestError(
        res,
        403,
        `cross-origin requests from ${origin} are not allowed: add the origin to AGENTPLANE_CORS_ORIGINS`,
      );
      return true;
    }
    res.setHeader("access-control-allow-origin", origin);
    if (policy.allowCredentials) res.setHeader("access-control-allow-credentials", "true");
    if (!preflight) {
      res.setHeader("access-control-expose-headers", exposed);
      return false;
    }
    res.writeHead(204, {
      "access-control-allow-methods": methods,
      "access-control-allow-headers": headers,
      "access-control-max-age": maxAge,
    });
    res.end();
    return true;
  };
}

/**
 * Whether a page of `origin` may call the server under `policy` (listed, `*`, or this server's own
 * origin): what a WebSocket upgrade, which CORS does not cover, is checked against.
 */
export function corsAllows(policy: CorsPolicy): (req: NodeServerRequest, origin: string) => boolean {
  const listed = new Set(policy.origins);
  const anyOrigin = listed.has("*");
  return (req, origin) => anyOrigin || listed.has(origin) || isSameOrigin(req, origin, policy.refuseUnlisted);
}

/**
 * Whether the page was loaded from this server (browsers send `Origin` on same-origin POSTs too):
 * the origin's host and port are the request's `Host`. With `loopbackOnly`, only when that host is a
 * loopback name, so a rebound DNS name does not pass as this server.
 */
function isSameOrigin(req: NodeServerRequest, origin: string, loopbackOnly: boolean): boolean {
  const host = req.headers.host ?? (req.headers[":authority"] as string | undefined);
  if (host === undefined) return false;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (url.host !== host.toLowerCase()) return false;
  return !loopbackOnly || isLoopbackName(url.hostname);
}

function isLoopbackName(hostname: string): boolean {
  return hostname === "localhost" || hostname === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}
