import { createRegistry, type DescService, type Registry } from "@bufbuild/protobuf";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import { DEFAULT_CORS_ORIGINS } from "../config.js";
import type { Logger } from "../logger.js";
import { createAccessLog } from "./access-log.js";
import { createAdapterRouter } from "./adapter-router.js";
import { bodyTooLargeError, declaresTooLargeBody, maxRequestBodyBytes } from "./body/body-limit.js";
import { settleUnreadBody } from "./body/unread-body.js";
import type { BoundService } from "./bound-service.js";
import { createConnectAdapter } from "./connect-adapter.js";
import { createBuiltInPathMatcher } from "./custom-app/built-in-routes.js";
import type { CustomAppMount } from "./custom-app/custom-app-handler.js";
import type { IgnoredFieldsSink } from "./field-leniency.js";
import { createHealthService, type HealthRegistry } from "./health.js";
import type { HttpAdapter } from "./http-adapter.js";
import { PROTOBUF_BINARY_RECURSION_LIMIT, PROTOBUF_JSON_RECURSION_LIMIT } from "./input/input-limits.js";
import { createMountPrefix } from "./mount-prefix.js";
import type { NodeRequestHandler } from "./one-port-server.js";
import { collectFiles, registerReflection } from "./reflection.js";
import { observeRequest, type RequestObserver } from "./request-sample.js";
import { checkRequestTarget } from "./request-target.js";
import { type CorsPolicy, createCors } from "./rest/cors.js";
import { writeConnectError, writeRestError } from "./rest/http-status.js";
import type { NodeServerRequest, NodeServerResponse } from "./rest/node-types.js";
import { createRestHandler } from "./rest/rest-handler.js";

/**
 * The largest message the Connect protocols write: responses are paged and stay far below 32 MiB, so
 * hitting it is a bug that fails with RESOURCE_EXHAUSTED instead of exhausting memory. Requests are
 * bounded by the REST body limit, so that every protocol accepts the same largest message.
 */
const WRITE_MAX_BYTES = 32 * 1024 * 1024;

/**
 * Room in a Connect or gRPC request body beyond its message: the 5-byte envelope of each message
 * and a Connect streaming request's end-of-stream message, which carries a few metadata entries.
 */
const ENVELOPE_ALLOWANCE_BYTES = 64 * 1024;

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
   * REST-only routes that are not RPCs (multipart trace ingest, CSV downloads, web pages), matched
   * by their declared routes before the REST transcoder.
   */
  adapters?: readonly HttpAdapter[];
  /**
   * Where failures of the transport itself go (a bug in an adapter, a response that cannot be
   * written): one JSON line each, never a raw stack on stderr.
   */
  log: Logger;
  /** Called once per request when it has been answered (or abandoned): HTTP metrics count these. */
  onRequest?: RequestObserver;
  /**
   * Which origins' browser pages may call; default: {@link DEFAULT_CORS_POLICY}.
   */
  cors?: CorsPolicy;
  /**
   * Write one info line per request to `log` (see access-log.ts) while it writes info lines (its
   * level may change at run time); off by default. Request ids are taken or made, and echoed,
   * either way.
   */
  accessLog?: boolean;
  /**
   * The user's app (`http.app`), run in front of the REST-only adapters and the REST transcoder;
   * RPC paths (gRPC, gRPC-Web, Connect) do not pass through it.
   */
  customApp?: CustomAppMount;
  /** `http.mount_prefix`: serve everything under this path (see mount-prefix.ts). */
  mountPrefix?: string;
  /** Receives what the lenient REST routes ignored (field-leniency.ts): logged and counted. */
  onIgnoredFields?: IgnoredFieldsSink;
}

/** The CORS policy of a handler built without one: the default origins, refusing only preflights. */
export const DEFAULT_CORS_POLICY: CorsPolicy = { origins: DEFAULT_CORS_ORIGINS, refuseUnlisted: false };

/**
 * The one request handler of the server. Every request's target is checked first (400 for one that
 * is not a path or has a bad escape), and taken off the mount prefix when there is one, then CORS (it answers preflights and adds headers to
 * everything, Connect and gRPC-Web included), then the Connect adapter with every bound service,
 * grpc.health.v1 and gRPC reflection (v1 and v1alpha); requests no RPC path matches go to the
 * custom app when there is one (custom-app/), which hands what it does not answer on to the
 * REST-only adapters, then the REST transcoder, and what neither routes gets a JSON 404. A body the
 * server answers before reading to the end is drained or its connection closed (unread-body.ts).
 */
export function createHttpHandler(options: HttpHandlerOptions): NodeRequestHandler {
  const { services, heartbeatMs, shutdownSignal, log } = options;
  const applyCors = createCors(options.cors ?? DEFAULT_CORS_POLICY);
  const beginAccess = createAccessLog(options.accessLog ? log : undefined);
  const registry = createServiceRegistry(services.map((bound) => bound.service));
  const onInternalError = (error: unknown, ctx: { service: DescService; method: { name: string } }) =>
    log.error("request failed", { error, rpc: `${ctx.service.typeName}/${ctx.method.name}` });
  const rest = createRestHandler({
    services,
    registry,
    heartbeatMs,
    shutdownSignal,
    onInternalError,
    ...(options.onIgnoredFields ? { onIgnoredFields: options.onIgnoredFields } : {}),
  });
  const adapters = createAdapterRouter(options.adapters ?? [], (error, route) =>
    log.error("request failed", { error, route }),
  );

  const route = async (req: NodeServerRequest, res: NodeServerResponse): Promise<boolean> => {
    const adapted = await adapters(req, res);
    if (adapted === true || (await rest(req, res))) return true;
    if (adapted === false) return false;
    const allow = adapted.join(", ");
    writeRestError(res, 405, `${req.method} is not allowed here; use ${allow}`, { allow });
    return true;
  };

  const builtIn = (req: NodeServerRequest, res: NodeServerResponse): void => {
    if (declaresTooLargeBody(req)) {
      writeConnectError(res, bodyTooLargeError());
      return;
    }
    route(req, res).then(
      (handled) => {
        if (!handled) writeRestError(res, 404, `no route for ${req.method} ${pathOf(req)}`);
      },
      (error: unknown) => {
        log.error("request failed", { error, route: `${req.method} ${pathOf(req)}` });
        if (res.headersSent) res.destroy();
        else writeRestError(res, 500, "internal error");
      },
    );
  };

  const fallback = options.customApp
    ? options.customApp.bind(
        builtIn,
        createBuiltInPathMatcher(
          services.map((bound) => bound.service),
          options.adapters ?? [],
        ),
      )
    : builtIn;

  const connect = createConnectAdapter({
    // A BoundService's impl is keyed by method localName like a ServiceImpl.
    services: [...services, { service: Health, impl: createHealthService(options.health) }],
    routes: (router) =>
      registerReflection(router, [...(options.publicServices ?? services.map((b) => b.service)), Health]),
    fallback,
    shutdownSignal,
    readMaxBytes: maxRequestBodyBytes,
    bodyMaxBytes: maxRequestBodyBytes + ENVELOPE_ALLOWANCE_BYTES,
    writeMaxBytes: WRITE_MAX_BYTES,
    // Connect JSON resolves google.protobuf.Any from the same types as REST. The recursion limits let
    // every message within MAX_JSON_DEPTH decode, so that the input screen is what refuses deeper ones.
    jsonOptions: { registry, recursionLimit: PROTOBUF_JSON_RECURSION_LIMIT },
    binaryOptions: { recursionLimit: PROTOBUF_BINARY_RECURSION_LIMIT },
    onError: (error, rpc) => log.error("request failed", { error, rpc }),
  });

  const { onRequest, mountPrefix } = options;
  const mounted = mountPrefix === undefined ? undefined : createMountPrefix(mountPrefix);
  return (req, res) => {
    const access = beginAccess(req, res);
    if (onRequest) observeRequest(req, res, onRequest, access);
    else if (access) observeRequest(req, res, access);
    settleUnreadBody(req, res);
    const badTarget = checkRequestTarget(req);
    if (badTarget !== undefined) {
      writeRestError(res, 400, badTarget);
      return;
    }
    if (mounted && !mounted(req)) {
      writeRestError(
        res,
        404,
        `no route for ${req.method} ${pathOf(req)}: this server is served under ${mountPrefix}`,
      );
      return;
    }
    if (applyCors(req, res)) return;
    connect(req, res);
  };
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
