import { createContextKey } from "@connectrpc/connect";

/**
 * What one request's access-log line reports beyond what HTTP shows, filled in while the request is
 * served: the transport notes the route it matched, the authenticator the workspace it selected.
 * It lives here, below every layer, because the transport creates it and the services write to it.
 */
export interface RequestScope {
  /** The route template that matched (`/threads/{thread_id}`, an RPC path); undefined when none did. */
  route: string | undefined;
  /** The workspace the request acted in, once the authenticator selected one. */
  workspaceId: string | undefined;
}

/** Where a call's handler context carries the {@link RequestScope} of its request. */
export const requestScopeKey = createContextKey<RequestScope | undefined>(undefined, {
  description: "the request's access-log scope",
});
