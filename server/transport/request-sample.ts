import type { NodeServerRequest, NodeServerResponse } from "./rest/node-types.js";

/**
 * One finished request, as HTTP metrics count it: the route that served it as a template (never the
 * raw path, so that ids do not multiply series), its method, its status and how long it took.
 */
export interface RequestSample {
  /**
   * What served it: a REST path template (`/threads/{thread_id}/runs`), an adapter's declared path,
   * an RPC's procedure path (`/agentplane.agents.v1.RunService/CreateRun`), or `unmatched`.
   */
  readonly route: string;
  /** The HTTP method as sent. */
  readonly method: string;
  /**
   * The status answered; 499 when the client went away before an answer started (the status the
   * REST mapping uses for a cancelled call).
   */
  readonly status: number;
  /** From the request's arrival to the end of its answer (for a stream, its whole life). */
  readonly durationMs: number;
}

/** Receives each request once it has been answered or abandoned. */
export type RequestObserver = (sample: RequestSample) => void;

/** The route label of requests that no route served (404s, bad targets, CORS preflights). */
export const UNMATCHED_ROUTE = "unmatched";

/** The status of a request whose client left before an answer started. */
const CLIENT_CLOSED_STATUS = 499;

const routes = new WeakMap<object, string>();
/** Stand-in requests (see {@link labelAsOriginal}) and the requests they stand for. */
const originals = new WeakMap<object, NodeServerRequest>();

/** Records which route serves `req`: called by the layer that matched it (RPC, REST or adapter). */
export function labelRoute(req: NodeServerRequest, route: string): void {
  routes.set(originals.get(req) ?? req, route);
}

/**
 * Makes the label a layer gives `standIn` the label of `original`: a custom app's middleware
 * replaced the request, and the built-in route that serves the replacement serves the original,
 * whose metrics and access line are written when its response closes.
 */
export function labelAsOriginal(standIn: NodeServerRequest, original: NodeServerRequest): void {
  originals.set(standIn, original);
}

/** The route a layer labelled `req` with; undefined when none matched it. */
export function routeOf(req: NodeServerRequest): string | undefined {
  return routes.get(req);
}

/**
 * Calls `observe`, then `also` when given, once when the response to `req` has closed (after its end
 * was written, or when its connection went first), with the route a layer labelled it with
 * ({@link labelRoute}) or {@link UNMATCHED_ROUTE}. Metrics and the access log share this one
 * listener, clock reading and sample: one per request rather than one each.
 */
export function observeRequest(
  req: NodeServerRequest,
  res: NodeServerResponse,
  observe: RequestObserver,
  also?: RequestObserver,
): void {
  const started = performance.now();
  // A response closes exactly once, finished or not (HTTP/1.1 and HTTP/2 alike): one listener, with
  // `on` rather than `once`, whose wrapper would be one more allocation per request.
  res.on("close", () => {
    const sample: RequestSample = {
      route: routeOf(req) ?? UNMATCHED_ROUTE,
      method: req.method ?? "GET",
      status: res.headersSent ? res.statusCode : CLIENT_CLOSED_STATUS,
      durationMs: performance.now() - started,
    };
    observe(sample);
    also?.(sample);
  });
}
