import { createRegistry, type DescService, type Registry } from "@bufbuild/protobuf";
import type { ConnectRouter, ServiceImpl } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import type { BoundService } from "./bound-service.js";
import { createHealthService, type HealthRegistry } from "./health.js";
import type { NodeRequestHandler } from "./one-port-server.js";
import { collectFiles, registerReflection } from "./reflection.js";
import { applyCors } from "./rest/cors.js";
import type { NodeServerRequest, NodeServerResponse } from "./rest/node-types.js";
import { maxRequestBodyBytes } from "./rest/request-body.js";
import { createRestHandler } from "./rest/rest-handler.js";

/**
 * The largest message the Connect protocols write: responses are paged and stay far below 32 MiB, so
 * hitting it is a bug that fails with RESOURCE_EXHAUSTED instead of exhausting memory. Requests are
 * bounded by the REST body limit, so that every protocol accepts the same largest message.
 */
const WRITE_MAX_BYTES = 32 * 1024 * 1024;

/**
 * A REST-only route handler; resolves true when it answered the request. It must answer errors as
 * `{"detail": ...}` itself (see `writeRestError` in rest/http-status.ts).
 */
export type HttpAdapter = (req: NodeServerRequest, res: NodeServerResponse) => Promise<boolean>;

/** Options of {@link createHttpHandler}. */
export interface HttpHandlerOptions {
  /** The API's services, served over gRPC, gRPC-Web, Connect and their REST bindings. */
  services: readonly BoundService[];
  /**
   * The services that reflection lists and resolves (with their files and imports); default: every
   * bound service. Services left out are still served, just not discoverable.
   */
  publicServices?: readonly DescService[];
  /** The statuses grpc.health.v1.Health answers from. */
  health: HealthRegistry;
  /** Interval of SSE heartbeat comments on idle REST streams; the REST layer's default when omitted. */
  heartbeatMs?: number;
  /** Aborts when the server gives up waiting for streams at shutdown; ends every open stream. */
  shutdownSignal: AbortSignal;
  /**
   * REST-only routes that are not RPCs (multipart trace ingest, CSV downloads, web pages): each
   * answers a request it recognises and resolves true, or resolves false without touching it. They
   * are tried in order before the REST transcoder.
   */
  adapters?: readonly HttpAdapter[];
  /** Receives failures of the REST layer itself (bugs); default: `console.error`, as connect-node does. */
  onInternalError?: (error: unknown) => void;
}

/**
 * The one request handler of the server: CORS first (it answers preflights and adds headers to
 * everything, Connect and gRPC-Web included), then the Connect adapter with every bound service,
 * grpc.health.v1 and gRPC reflection (v1 and v1alpha); requests no RPC path matches go to the REST
 * transcoder, and what it does not route gets a JSON 404.
 */
export function createHttpHandler(options: HttpHandlerOptions): NodeRequestHandler {
  const { services, heartbeatMs, shutdownSignal } = options;
  const onInternalError = options.onInternalError ?? ((error: unknown) => console.error(error));
  const registry = createServiceRegistry(services.map((bound) => bound.service));
  const rest = createRestHandler({ services, registry, heartbeatMs, shutdownSignal, onInternalError });

  const adapters = options.adapters ?? [];
  const route = async (req: NodeServerRequest, res: NodeServerResponse): Promise<boolean> => {
    for (const adapter of adapters) if (await adapter(req, res)) return true;
    return rest(req, res);
  };

  const fallback = (req: NodeServerRequest, res: NodeServerResponse): void => {
    route(req, res).then(
      (handled) => {
        if (!handled) sendJson(res, 404, { detail: `no route for ${req.method} ${pathOf(req)}` });
      },
      (error: unknown) => {
        onInternalError(error);
        if (res.headersSent) res.destroy();
        else sendJson(res, 500, { detail: "internal error" });
      },
    );
  };

  const connect = connectNodeAdapter({
    routes: (router) => registerRoutes(router, options),
    fallback,
    shutdownSignal,
    readMaxBytes: maxRequestBodyBytes,
    writeMaxBytes: WRITE_MAX_BYTES,
    // Connect JSON resolves google.protobuf.Any from the same types as REST.
    jsonOptions: { registry },
  });

  return (req, res) => {
    if (applyCors(req, res)) return;
    connect(req, res);
  };
}

function registerRoutes(router: ConnectRouter, options: HttpHandlerOptions): void {
  for (const bound of options.services) {
    // A BoundService's impl is keyed by method localName like a ServiceImpl; its wrapped methods are
    // typed loosely because one wrapper serves every service.
    router.service(bound.service, bound.impl as unknown as ServiceImpl<DescService>);
  }
  router.service(Health, createHealthService(options.health));
  const reflected = options.publicServices ?? options.services.map((bound) => bound.service);
  registerReflection(router, [...reflected, Health]);
}

/**
 * A registry of every type the given services use: their files and everything those import,
 * well-known types included, so JSON can resolve google.protobuf.Any, Struct and Value.
 */
function createServiceRegistry(services: readonly DescService[]): Registry {
  return createRegistry(...collectFiles(services.map((service) => service.file)));
}

function pathOf(req: NodeServerRequest): string {
  const url = req.url ?? "/";
  const query = url.indexOf("?");
  return query === -1 ? url : url.slice(0, query);
}

function sendJson(res: NodeServerResponse, status: number, body: unknown): void {
  const json = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(json) });
  res.end(json);
}
