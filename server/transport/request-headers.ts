import { Code, ConnectError } from "@connectrpc/connect";
import type { NodeServerRequest, NodeServerResponse } from "./rest/node-types.js";

/** A Node request's headers as a `Headers` (HTTP/2 pseudo-headers left out), for the authenticator. */
export function requestHeaders(req: NodeServerRequest): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || name.startsWith(":")) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  return headers;
}

/** A host as a client may name one: a name or address, with an optional port. */
const HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/**
 * The origin the client reached this server at (`http://host:port`), for URLs the server hands out:
 * from `Host` (`:authority` over HTTP/2), `https` when a proxy says so in `X-Forwarded-Proto`.
 */
export function requestOrigin(req: NodeServerRequest): string {
  const raw = req.headers[":authority"] ?? req.headers.host;
  const host = Array.isArray(raw) ? raw[0] : raw;
  if (typeof host !== "string" || !HOST.test(host))
    throw new ConnectError("the request needs a valid Host header", Code.InvalidArgument);
  const forwarded = req.headers["x-forwarded-proto"];
  const proto = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(",")[0]?.trim();
  return `${proto === "https" ? "https" : "http"}://${host}`;
}

/** A signal that aborts when the response closes before it was completely written (the client left). */
export function clientGone(res: NodeServerResponse): AbortSignal {
  const controller = new AbortController();
  res.once("close", () => {
    if (!res.writableEnded) controller.abort(new ConnectError("the client went away", Code.Canceled));
  });
  return controller.signal;
}

/** A Node request's method and full URL, for the custom auth handler's `Request`. */
export function requestTarget(req: NodeServerRequest): { method: string; url: string } {
  const raw = req.headers[":authority"] ?? req.headers.host;
  const host = (Array.isArray(raw) ? raw[0] : raw) ?? "localhost";
  return { method: req.method ?? "GET", url: `http://${host}${req.url ?? "/"}` };
}
