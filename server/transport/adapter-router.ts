import { Code, ConnectError } from "@connectrpc/connect";
import type { AdapterEndpoint, HttpAdapter } from "./http-adapter.js";
import { textProblem } from "./input/input-problem.js";
import { labelRoute } from "./request-sample.js";
import { malformedRequestError, writeConnectError, writeRestError } from "./rest/http-status.js";
import type { NodeServerRequest, NodeServerResponse } from "./rest/node-types.js";
import { decodeVariable, type PathTemplate, parsePathTemplate, splitPath } from "./rest/path-template.js";
import { withHead } from "./rest/route-table.js";

/**
 * Serves a request when an adapter route matches its path and method, and resolves true. Resolves
 * false when no route's path matches, and the methods the matching routes allow when only the
 * method differs: the caller answers 405 with them unless another layer (the REST transcoder, whose
 * routes may share the path) serves the request.
 */
export type AdapterRouter = (req: NodeServerRequest, res: NodeServerResponse) => Promise<boolean | string[]>;

/** Receives an adapter's failure that is not a `ConnectError` (a bug), with the route it happened on. */
export type AdapterErrorReporter = (error: unknown, route: string) => void;

interface CompiledEndpoint {
  readonly endpoint: AdapterEndpoint;
  readonly template: PathTemplate;
  /** `METHODS path`, for logs. */
  readonly name: string;
}

/**
 * Routes requests to the REST-only adapters by their declared routes, in order: the path variables
 * are decoded strictly (400 for a bad escape, 422 for NUL), and every adapter shares one error policy: a `ConnectError` is answered
 * with its REST status and `{"detail"}`; anything else is reported once and answered 500 (or the
 * connection is cut when the answer had already started). Throws at start-up on a malformed path.
 */
export function createAdapterRouter(
  adapters: readonly HttpAdapter[],
  report: AdapterErrorReporter,
): AdapterRouter {
  const endpoints: CompiledEndpoint[] = adapters.flat().map((endpoint) => ({
    endpoint,
    template: parsePathTemplate(endpoint.path),
    name: `${endpoint.methods.join("|")} ${endpoint.path}`,
  }));

  const serve = async (
    { endpoint, template, name }: CompiledEndpoint,
    captures: readonly string[],
    query: string,
    req: NodeServerRequest,
    res: NodeServerResponse,
  ): Promise<void> => {
    labelRoute(req, endpoint.path);
    try {
      const vars: Record<string, string> = {};
      template.variables.forEach((variable, i) => {
        vars[variable.fieldPath] = decodeCapture(variable.fieldPath, captures[i]!);
      });
      await endpoint.serve(req, res, { vars, query });
    } catch (error) {
      if (!(error instanceof ConnectError)) report(error, name);
      if (res.headersSent) res.destroy();
      else if (error instanceof ConnectError) writeConnectError(res, error);
      else writeRestError(res, 500, "internal error");
    }
  };

  return async (req, res) => {
    if (endpoints.length === 0) return false;
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    let path = q < 0 ? url : url.slice(0, q);
    if (path.length > 1 && path.endsWith("/")) path = path.slice(0, -1);
    const segments = splitPath(path);
    if (segments === undefined) return false;
    // HEAD is answered wherever GET is: the same handler, and Node leaves out the body.
    const method = req.method === "HEAD" ? "GET" : (req.method ?? "GET");
    const allowed = new Set<string>();
    for (const compiled of endpoints) {
      const captures = compiled.template.match(segments);
      if (!captures) continue;
      if (compiled.endpoint.methods.includes(method)) {
        await serve(compiled, captures, q < 0 ? "" : url.slice(q + 1), req, res);
        return true;
      }
      for (const m of compiled.endpoint.methods) allowed.add(m);
    }
    return allowed.size === 0 ? false : withHead([...allowed]);
  };
}

function decodeCapture(name: string, raw: string): string {
  const value = decodeVariable(raw, false);
  if (value === undefined)
    throw malformedRequestError(`path parameter "${name}" is not validly percent-encoded`);
  const problem = textProblem(value);
  if (problem) throw new ConnectError(`path parameter "${name}" ${problem}`, Code.InvalidArgument);
  return value;
}
