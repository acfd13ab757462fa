import type { ConnectNodeAdapterOptions } from "@connectrpc/connect-node";

/** connect-node's request handler type, which it does not export by name. */
type NodeHandlerFn = NonNullable<ConnectNodeAdapterOptions["fallback"]>;

/** A Node.js server request: `http.IncomingMessage` or `http2.Http2ServerRequest`. */
export type NodeServerRequest = Parameters<NodeHandlerFn>[0];

/**
 * A Node.js server response: `http.ServerResponse` or `http2.Http2ServerResponse`, with the
 * `write`/`writeHead` signatures connect-node unifies so both can be called through one type.
 */
export type NodeServerResponse = Parameters<NodeHandlerFn>[1];
