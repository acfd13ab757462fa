import type { DescService } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ConnectRouter,
  type ConnectRouterOptions,
  createConnectRouter,
  createContextValues,
  type ServiceImpl,
} from "@connectrpc/connect";
import {
  compressionBrotli,
  compressionGzip,
  universalRequestFromNodeRequest,
  universalResponseToNodeResponse,
} from "@connectrpc/connect-node";
import { requestScopeKey } from "../request-scope.js";
import { scopeOf } from "./access-log.js";
import { createGrpcUnaryPaths, type GrpcUnaryPath, type ServedService } from "./grpc/grpc-unary.js";
import { screenedRpcBody } from "./input/rpc-body.js";
import { labelRoute } from "./request-sample.js";
import { writeRestError } from "./rest/http-status.js";
import type { NodeServerRequest, NodeServerResponse } from "./rest/node-types.js";

/** Options of {@link createConnectAdapter}. */
export interface ConnectAdapterOptions extends ConnectRouterOptions {
  /** The services, served on every protocol; their unary methods take the gRPC fast path too. */
  services: readonly ServedService[];
  /**
   * Serve unary gRPC calls on the fast path (grpc/grpc-unary.ts); default true. Off, connect-es
   * serves them: the reference the fast path's tests compare its answers with.
   */
  grpcUnaryFastPath?: boolean;
  /** Registers what else the router serves (gRPC reflection). */
  routes(router: ConnectRouter): void;
  /** Serves requests whose path is no RPC's. */
  fallback(req: NodeServerRequest, res: NodeServerResponse): void;
  /** The most bytes a request body may have (messages, plus envelope framing on gRPC and streams). */
  readonly bodyMaxBytes: number;
  /** Receives a failure to serve an RPC that is not the client going away; logged once by the caller. */
  onError(error: unknown, rpc: string): void;
}

/**
 * Serves the RPCs of a Connect router (gRPC, gRPC-Web, Connect) on Node's request and response, in
 * place of connect-node's `connectNodeAdapter`, which (2.1.2) throws inside the request listener
 * when an HTTP/1.0 request has no Host, destroys the request when it stops reading a body over the
 * limit (the client sees a reset instead of RESOURCE_EXHAUSTED), and prints failures with
 * `console.error`. Here the body is read through {@link screenedRpcBody}: it refuses an oversized
 * body without destroying anything (what is left of it is settled after the answer, unread-body.ts)
 * and screens the request message before protobuf-es decodes it. Unary gRPC calls take a fast path
 * (grpc/grpc-unary.ts) that serves the same implementations with the same answers.
 */
export function createConnectAdapter(
  options: ConnectAdapterOptions,
): (req: NodeServerRequest, res: NodeServerResponse) => void {
  const routerOptions = { acceptCompression: [compressionGzip, compressionBrotli], ...options };
  const router = createConnectRouter(routerOptions);
  for (const { service, impl } of options.services)
    router.service(service, impl as unknown as ServiceImpl<DescService>);
  options.routes(router);
  const fastPaths =
    options.grpcUnaryFastPath === false
      ? new Map<string, GrpcUnaryPath>()
      : createGrpcUnaryPaths({ ...options, router: routerOptions });
  const handlers = new Map(router.handlers.map((handler) => [handler.requestPath, handler]));
  return (req, res) => {
    const url = req.url ?? "/";
    const query = url.indexOf("?");
    const handler = handlers.get(query < 0 ? url : url.slice(0, query));
    if (!handler) {
      options.fallback(req, res);
      return;
    }
    labelRoute(req, handler.requestPath);
    if (fastPaths.get(handler.requestPath)?.(req, res)) return;
    let request: ReturnType<typeof universalRequestFromNodeRequest>;
    try {
      request = universalRequestFromNodeRequest(req, res, undefined, undefined);
    } catch {
      // connect-node builds the request URL from the authority: it is missing (only HTTP/1.0 may
      // omit it) or not a host.
      writeRestError(res, 400, "the request's Host header is missing or is not a valid host");
      return;
    }
    const rpc = `${handler.service.typeName}/${handler.method.name}`;
    const scope = scopeOf(req);
    if (scope) request.contextValues = createContextValues().set(requestScopeKey, scope);
    handler({ ...request, body: screenedRpcBody(req, handler.method, options.bodyMaxBytes) })
      .then((response) => universalResponseToNodeResponse(response, res))
      .catch((reason: unknown) => {
        // Writing failed because the client went away: nobody to answer, nothing to report.
        if (ConnectError.from(reason).code === Code.Aborted) return;
        options.onError(reason, rpc);
      });
  };
}
