import type { OutgoingHttpHeaders } from "node:http";
import { create, type DescMessage, type DescMethod, type DescService } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ConnectRouterOptions,
  type ContextValues,
  createContextValues,
} from "@connectrpc/connect";
import {
  type Compression,
  compressedFlag,
  compressionNegotiate,
  createMethodSerializationLookup,
  validateUniversalHandlerOptions,
} from "@connectrpc/connect/protocol";
import {
  contentTypeProto,
  headerAcceptEncoding,
  parseContentType,
  parseTimeout,
  setTrailerStatus,
} from "@connectrpc/connect/protocol-grpc";
import { requestScopeKey } from "../../request-scope.js";
import { scopeOf } from "../access-log.js";
import type { OwnDecoders } from "../bound-service.js";
import { problemError } from "../input/input-problem.js";
import { findRpcBodyProblem } from "../input/rpc-body.js";
import type { NodeServerRequest, NodeServerResponse } from "../rest/node-types.js";
import { createGrpcCallContext, type GrpcCallContext } from "./grpc-call-context.js";
import { readRequestBody, unaryRequestMessage } from "./grpc-request-message.js";

/** A service and its implementation (methods keyed by `localName`), as the Connect router serves them. */
export interface ServedService {
  readonly service: DescService;
  readonly impl: object;
  /** Methods that decode their binary request themselves (bound-service.ts). */
  readonly decoders?: OwnDecoders;
}

/** Options of {@link createGrpcUnaryPaths}. */
export interface GrpcUnaryOptions {
  services: readonly ServedService[];
  /** The Connect router's options, so that both paths share limits, compression and serialization. */
  router: ConnectRouterOptions;
  /** The most bytes a request body may have, framing included. */
  bodyMaxBytes: number;
  /** Receives a failure to write an answer that is not the client going away. */
  onError(error: unknown, rpc: string): void;
}

/**
 * Serves one unary gRPC call if it is one the fast path takes (HTTP/2, POST, a binary gRPC content
 * type) and returns true; false leaves the request untouched for connect-es.
 */
export type GrpcUnaryPath = (req: NodeServerRequest, res: NodeServerResponse) => boolean;

type UnaryImpl = (request: unknown, ctx: GrpcCallContext["ctx"]) => unknown;

/** The trailer of a call that succeeded and whose implementation set no trailer of its own. */
const OK_TRAILER: OutgoingHttpHeaders = Object.freeze({ "grpc-status": "0" });

/**
 * Unary gRPC calls served without connect-es's streaming pipeline, by request path. connect-es
 * treats every gRPC call as a stream: async iterables per step, three AbortControllers and a
 * DOMException per call, which held gRPC to half of Connect JSON's req/s on the same RPC. Here the
 * body is read whole, screened as on every protocol (input/rpc-body.ts), its one message taken out
 * of its envelope with connect-es's limits, compression and parser, the same bound implementation
 * called with a lean HandlerContext, and the answer written at once: one framed message, then
 * `grpc-status`, `grpc-message` and `grpc-status-details-bin` as connect-es sets them. Streaming
 * methods, gRPC-Web, Connect and `application/grpc+json` stay on connect-es.
 */
export function createGrpcUnaryPaths(options: GrpcUnaryOptions): Map<string, GrpcUnaryPath> {
  const opt = validateUniversalHandlerOptions(options.router);
  const paths = new Map<string, GrpcUnaryPath>();
  // Interceptors run inside connect-es's pipeline only: with any, every call stays there.
  if (opt.interceptors.length > 0) return paths;
  for (const { service, impl, decoders } of options.services) {
    for (const method of service.methods) {
      const fn = (impl as Record<string, unknown>)[method.localName];
      if (method.methodKind !== "unary" || typeof fn !== "function") continue;
      const call = fn.bind(impl) as UnaryImpl;
      const decoder = decoders?.[method.localName];
      paths.set(`/${service.typeName}/${method.name}`, unaryPath(method, call, opt, options, decoder));
    }
  }
  return paths;
}

type HandlerOptions = ReturnType<typeof validateUniversalHandlerOptions>;

/**
 * The fast path of one method. With `decoder` (the method's own, bound-service.ts), the message is
 * decoded by it, which also judges it, instead of by the binary screen and connect-es's parser.
 */
function unaryPath(
  method: DescMethod,
  call: UnaryImpl,
  opt: HandlerOptions,
  options: GrpcUnaryOptions,
  decoder: ((bytes: Uint8Array) => unknown) | undefined,
): GrpcUnaryPath {
  const serialization = createMethodSerializationLookup(method, opt.binaryOptions, opt.jsonOptions, opt);
  const input = serialization.getI(true);
  const parse = decoder ?? ((data: Uint8Array) => input.parse(data));
  const output = serialization.getO(true);
  const rpc = `${method.parent.typeName}/${method.name}`;
  return (req, res) => {
    if (!("stream" in req) || req.method !== "POST") return false;
    const type = parseContentType(req.headers["content-type"] ?? null);
    if (!type?.binary) return false;
    const timeout = parseTimeout(header(req, "grpc-timeout"), opt.maxTimeoutMs);
    const compression = compressionNegotiate(
      opt.acceptCompression,
      header(req, "grpc-encoding"),
      header(req, "grpc-accept-encoding"),
      headerAcceptEncoding,
    );
    const scope = scopeOf(req);
    const values: ContextValues = createContextValues();
    if (scope) values.set(requestScopeKey, scope);
    const call$ = createGrpcCallContext({
      method,
      req,
      res,
      timeoutMs: timeout.timeoutMs,
      shutdownSignal: opt.shutdownSignal,
      values,
    });
    const answer = async (): Promise<Uint8Array> => {
      if (compression.error) throw compression.error;
      if (timeout.error) throw timeout.error;
      const body = await readRequestBody(req, options.bodyMaxBytes);
      if (decoder === undefined) {
        const problem = await findRpcBodyProblem(method.input, req.headers, body, options.bodyMaxBytes);
        if (problem) throw problemError(problem);
      }
      const message = await unaryRequestMessage(body, {
        readMaxBytes: opt.readMaxBytes,
        compression: compression.request,
        parse,
      });
      const result = await call(message, call$.ctx);
      const bytes = output.serialize(create(method.output as DescMessage, result as never));
      return frame(bytes, compression.response, opt.compressMinBytes);
    };
    answer()
      .then(
        (bytes) => respond(res, call$, compression.response, bytes, undefined),
        (error: unknown) => respond(res, call$, compression.response, undefined, error),
      )
      .catch((error: unknown) => {
        if (!res.destroyed) options.onError(error, rpc);
      });
    return true;
  };
}

/** A request header as connect-es reads one (repeated fields joined); `name` in lower case, as Node keeps them. */
function header(req: NodeServerRequest, name: string): string | null {
  const value = req.headers[name];
  return value === undefined ? null : Array.isArray(value) ? value.join(", ") : value;
}

/** A message in its gRPC envelope, compressed when the client accepts it and it is big enough. */
async function frame(
  bytes: Uint8Array,
  compression: Compression | null,
  compressMinBytes: number,
): Promise<Uint8Array> {
  let data = bytes;
  let flags = 0;
  if (compression && data.byteLength >= compressMinBytes) {
    data = await compression.compress(data);
    flags = compressedFlag;
  }
  const out = Buffer.allocUnsafe(data.byteLength + 5);
  out[0] = flags;
  out.writeUInt32BE(data.byteLength, 1);
  out.set(data, 5);
  return out;
}

/** Writes the answer (a framed message, or none after an error), its status trailer, and ends the call. */
function respond(
  res: NodeServerResponse,
  call: GrpcCallContext,
  compression: Compression | null,
  message: Uint8Array | undefined,
  error: unknown,
): void {
  call.finish();
  if (res.destroyed) return;
  const headers: OutgoingHttpHeaders = { "content-type": contentTypeProto };
  if (compression) headers["grpc-encoding"] = compression.name;
  copyInto(headers, call.setHeaders());
  let trailer = OK_TRAILER;
  const set = call.setTrailers();
  if (error !== undefined || set) {
    const status = new Headers(set);
    if (error !== undefined) {
      const failure =
        error instanceof ConnectError
          ? error
          : new ConnectError("internal error", Code.Internal, undefined, undefined, error);
      setTrailerStatus(status, failure);
    } else status.set("grpc-status", "0");
    trailer = copyInto({}, status);
  }
  res.writeHead(200, headers);
  res.addTrailers(trailer);
  if (message) res.end(message);
  else res.end();
}

function copyInto(target: OutgoingHttpHeaders, source: Headers | undefined): OutgoingHttpHeaders {
  source?.forEach((value, name) => {
    target[name] = name === "set-cookie" ? source.getSetCookie() : value;
  });
  return target;
}
