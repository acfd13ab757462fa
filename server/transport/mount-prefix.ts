import type { NodeServerRequest } from "./rest/node-types.js";

/**
 * `http.mount_prefix`: the whole server answers under a path prefix, as the LangGraph servers do.
 * The prefix is taken off a request's target before anything routes it, so every route (built-in
 * and custom) sees the path it declares. gRPC has no notion of a path prefix (its clients call
 * `/package.Service/Method`), so gRPC and gRPC-Web calls are also served without it.
 *
 * Returns a function that rewrites `req.url` and answers true, or answers false for a request
 * outside the prefix (the caller answers 404).
 */
export function createMountPrefix(prefix: string): (req: NodeServerRequest) => boolean {
  return (req) => {
    const url = req.url ?? "/";
    if (url.startsWith(prefix)) {
      const rest = url.slice(prefix.length);
      if (rest === "" || rest[0] === "/" || rest[0] === "?") {
        req.url = rest === "" || rest[0] === "?" ? `/${rest}` : rest;
        return true;
      }
    }
    return req.headers["content-type"]?.startsWith("application/grpc") === true;
  };
}
