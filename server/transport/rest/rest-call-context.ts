import type { OutgoingHttpHeaders } from "node:http";
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { createContextValues, type HandlerContext } from "@connectrpc/connect";
import type { NodeServerRequest, NodeServerResponse } from "./node-types.js";

/**
 * The reason `ctx.signal` carries once a call has completed. Shared by every call, so finishing one
 * builds no DOMException (whose stack capture showed up in profiles); nothing inspects the reason
 * of a completed call's signal, only that it is aborted.
 */
const callCompleted = new DOMException("the REST call completed", "AbortError");

/**
 * Response headers a handler may not pass through: HTTP/1 framing and connection management
 * (forbidden on HTTP/2), and the content type and length the REST layer sets itself.
 */
const reservedHeaders = new Set([
  "connection",
  "keep-alive",
  "transfer-encoding",
  "upgrade",
  "proxy-connection",
  "content-length",
  "content-type",
]);

/** One REST call's handler context, and what the REST layer does with it. */
export interface RestCallContext {
  /** What the bound implementation receives. */
  readonly ctx: HandlerContext;
  /** The headers the handler set that may pass through to the response. */
  handlerHeaders(): OutgoingHttpHeaders;
  /** Ends the call: its signal, if anyone asked for it, is aborted and stops listening. */
  finish(): void;
}

/** What {@link createRestCallContext} builds a context from. */
export interface RestCallInit {
  service: DescService;
  method: DescMethod;
  /** The HTTP method of the route, for a request that lacks one. */
  httpMethod: string;
  req: NodeServerRequest;
  res: NodeServerResponse;
  /** Aborts the call when the server shuts down. */
  shutdownSignal: AbortSignal | undefined;
}

/**
 * The HandlerContext of a REST call, built for the hot path: Connect's `createHandlerContext` makes
 * three Headers, two AbortControllers and their listeners for every call, which was a tenth of a
 * single-row call's CPU. Here the request headers are copied once, the response headers and the
 * trailer exist only if the handler touches them, and the signal (aborted when the client goes
 * away before the response is finished, or the server shuts down; REST calls have no deadline) is
 * made the first time someone reads it: most unary calls never do.
 */
export function createRestCallContext(init: RestCallInit): RestCallContext {
  const { req, res, shutdownSignal } = init;
  let controller: AbortController | undefined;
  let responseHeader: Headers | undefined;
  let responseTrailer: Headers | undefined;
  let finished = false;
  const onClose = () => {
    // A response that finished closes too; only a close before the end means the client went away.
    // Not writableFinished: Node's HTTP/2 compatibility layer reports a reset stream as finished.
    if (!res.writableEnded) controller?.abort(new DOMException("the client went away", "AbortError"));
  };
  const onShutdown = () => controller?.abort(shutdownSignal?.reason);

  const signal = (): AbortSignal => {
    if (controller) return controller.signal;
    controller = new AbortController();
    if (finished) controller.abort(callCompleted);
    else if (shutdownSignal?.aborted) controller.abort(shutdownSignal.reason);
    else if (res.destroyed && !res.writableEnded) onClose();
    else {
      res.once("close", onClose);
      shutdownSignal?.addEventListener("abort", onShutdown, { once: true });
    }
    return controller.signal;
  };

  const ctx: HandlerContext = {
    service: init.service,
    method: init.method,
    protocolName: "rest",
    requestMethod: req.method ?? init.httpMethod,
    url: `http://${req.headers.host ?? req.headers[":authority"] ?? "localhost"}${req.url ?? "/"}`,
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
      return signal();
    },
    timeoutMs: () => undefined,
    values: createContextValues(),
  };

  return {
    ctx,
    handlerHeaders() {
      const headers: OutgoingHttpHeaders = {};
      responseHeader?.forEach((value, name) => {
        if (!reservedHeaders.has(name)) headers[name] = value;
      });
      return headers;
    },
    finish() {
      finished = true;
      if (!controller) return;
      res.off("close", onClose);
      shutdownSignal?.removeEventListener("abort", onShutdown);
      controller.abort(callCompleted);
    },
  };
}

/** The request headers; HTTP/2 pseudo-headers (`:path`...) are left out. */
function requestHeaders(req: NodeServerRequest): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || name.startsWith(":")) continue;
    if (Array.isArray(value)) for (const v of value) headers.append(name, v);
    else headers.append(name, value);
  }
  return headers;
}
