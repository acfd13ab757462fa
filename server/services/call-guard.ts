import type { HandlerContext } from "@connectrpc/connect";

/**
 * Runs before every call of a bound service, on every protocol (gRPC, gRPC-Web, Connect, REST, SSE),
 * after the request message passed the input screen.
 * It authenticates the caller and puts what the handler needs into `ctx.values`; it throws a
 * `ConnectError` to refuse the call. Declared here, beside the services that implement it (the
 * authenticator), and used by the transport that runs it (transport/bound-service.ts).
 */
export type CallGuard = (ctx: HandlerContext) => Promise<void>;
