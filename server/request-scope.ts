import { createContextKey } from "@connectrpc/connect";

/**
 * What one request's access-log line reports beyond what HTTP shows, filled in while the request is
 * served: the authenticator notes the workspace it selected (the route comes from the label the
 * transport gives each request for metrics too, see transport/request-sample.ts).
 * It lives here, below every layer, because the transport creates it and the services write to it.
 */
export interface RequestScope {
  /** The workspace the request acted in, once the authenticator selected one. */
  workspaceId: string | undefined;
}

/** Where a call's handler context carries the {@link RequestScope} of its request. */
export const requestScopeKey = createContextKey<RequestScope | undefined>(undefined, {
  description: "the request's access-log scope",
});
