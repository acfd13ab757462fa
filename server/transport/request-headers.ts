import type { NodeServerRequest } from "./rest/node-types.js";

/** A request's headers as a fetch `Headers` (what the authenticator reads); HTTP/2 pseudo-headers left out. */
export function headersOf(req: NodeServerRequest): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || name.startsWith(":")) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  return headers;
}
