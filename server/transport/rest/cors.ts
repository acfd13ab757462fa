import { cors } from "@connectrpc/connect";
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
].join(", ");

/** Response headers browser scripts may read: Connect's and gRPC-Web's, pagination, locations. */
const exposedHeaders = [
  ...cors.exposedHeaders,
  "x-pagination-total",
  "x-pagination-next",
  "content-location",
  "location",
].join(", ");

/** How long browsers may cache a preflight: 2 hours, the most Chromium honours. */
const preflightMaxAgeSeconds = String(2 * 60 * 60);

/**
 * CORS for browser clients of every protocol on the port (REST, SSE, Connect, gRPC-Web). The HTTP
 * server calls it first for every request. A request with an `Origin` gets that origin echoed in
 * `Access-Control-Allow-Origin` (with `Vary: Origin`, so caches keep answers per origin) and the
 * exposed headers; a preflight (`OPTIONS` with `Access-Control-Request-Method`) is answered here
 * with 204. Credentials (cookies) are not allowed: callers authenticate with headers.
 *
 * Returns true when it fully answered the request (a preflight).
 */
export function applyCors(req: NodeServerRequest, res: NodeServerResponse): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return false;
  res.setHeader("access-control-allow-origin", origin);
  res.setHeader("vary", "Origin");
  if (req.method !== "OPTIONS" || req.headers["access-control-request-method"] === undefined) {
    res.setHeader("access-control-expose-headers", exposedHeaders);
    return false;
  }
  res.writeHead(204, {
    "access-control-allow-methods": allowedMethods,
    "access-control-allow-headers": allowedHeaders,
    "access-control-max-age": preflightMaxAgeSeconds,
  });
  res.end();
  return true;
}
