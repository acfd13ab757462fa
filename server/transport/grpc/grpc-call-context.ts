import { constants } from "node:http2";
import type { DescMethod } from "@bufbuild/protobuf";
import { Code, ConnectError, type ContextValues, type HandlerContext } from "@connectrpc/connect";
import { createLazyCallSignal } from "../lazy-call-signal.js";
import { requestHeaders } from "../request-headers.js";
import type { NodeServerRequest, NodeServerResponse } from "../rest/node-types.js";

/**
 * The reason `ctx.signal` carries once a call has completed (connect-es aborts it then too). Shared
 * by every call, so that finishing one builds no DOMException, whose stack capture was a profile's
 * top entry; nothing inspects the reason of a completed call's signal, only that it is aborted.
 */
const callCompleted = new DOMException("the gRPC call completed", "AbortError");

/** One gRPC call's handler context, and what the fast path does with it. */
export interface GrpcCallContext {
  /** What the bound implementation receives. */
  readonly ctx: HandlerContext;
  /** The response headers the implementation set, if it touched them. */
  readonly setHeaders: () => Headers | undefined;
  /** The response trailers the implementation set, if it touched them. */
  readonly setTrailers: () => Headers | undefined;
  /** Ends the call: its signal, if anyone asked for it, is aborted and stops listening. */
  finish(): void;
}

/** What {@link createGrpcCallContext} builds a context from. */
export interface GrpcCallInit {
  method: DescMethod;
  req: NodeServerRequest;
  res: NodeServerResponse;
  /** The client's deadline (`grpc-timeout`) in ms from now, if it sent one. */
  timeoutMs: number | undefined;
  /** Aborts the call when the server shuts down. */
  shutdownSignal: AbortSignal | undefined;
  values: ContextValues;
}

/**
 * The HandlerContext of a unary gRPC call, with connect-es's semantics at a fraction of its cost:
 * connect-es makes three Headers, three AbortControllers and their listeners, a URL and, at the end,
 * a DOMException for every call. Here the request headers are copied once; the response headers,
 * trailers and URL exist only if the implementation reads them; and the signal, which aborts when
 * the client resets the stream, the deadline passes (DEADLINE_EXCEEDED) or the server shuts down, is
 * made the first time someone reads it: most unary calls never do.
 */
export function createGrpcCallContext(init: GrpcCallInit): GrpcCallContext {
  const { req, res, shutdownSignal } = init;
  const deadline = init.timeoutMs === undefined ? undefined : Date.now() + init.timeoutMs;
  let responseHeader: Headers | undefined;
  let responseTrailer: Headers | undefined;
  const call = createLazyCallSignal({
    res,
    shutdownSignal,
    clientGone: () => clientGoneError(req),
    completed: callCompleted,
    ...(deadline === undefined
      ? {}
      : {
          deadline: {
            at: deadline,
            reason: () => new ConnectError("the operation timed out", Code.DeadlineExceeded),
          },
        }),
  });

  let url: string | undefined;
  const ctx: HandlerContext = {
    service: init.method.parent,
    method: init.method,
    protocolName: "grpc",
    requestMethod: "POST",
    get url() {
      url ??= new URL(req.url ?? "/", `http://${req.headers[":authority"] ?? req.headers.host}`).toString();
      return url;
    },
    requestHeader: requestHeaders(req),
    get responseHeader() {
      responseHeader ??= new Headers();
      return responseHeader;
    },
    get responseTrailer() {
      responseTrailer ??= new Headers();
      return responseTrailer;
    },
    get signal() {
      return call.signal();
    },
    timeoutMs: () => (deadline === undefined ? undefined : deadline - Date.now()),
    values: init.values,
  };

  return {
    ctx,
    setHeaders: () => responseHeader,
    setTrailers: () => responseTrailer,
    finish: call.finish,
  };
}

/**
 * Why the stream closed early, as connect-node tells it from the HTTP/2 reset code: the client
 * cancelled, or the stream broke.
 */
function clientGoneError(req: NodeServerRequest): ConnectError {
  const code = "stream" in req ? req.stream.rstCode : undefined;
  switch (code) {
    case constants.NGHTTP2_REFUSED_STREAM:
      return new ConnectError("the client refused the stream", Code.Unavailable);
    case constants.NGHTTP2_ENHANCE_YOUR_CALM:
      return new ConnectError("the client asked to slow down", Code.ResourceExhausted);
    case constants.NGHTTP2_CANCEL:
    case constants.NGHTTP2_NO_ERROR:
    case undefined:
      return new ConnectError("the client cancelled the call", Code.Canceled);
    default:
      return new ConnectError(`the stream was reset (HTTP/2 code ${code})`, Code.Internal);
  }
}
