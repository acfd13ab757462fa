import { Code, ConnectError } from "@connectrpc/connect";
import type { Logger } from "../../logger.js";
import type { UserHttpApp } from "../../runtime/http-app-loader.js";
import { shareScope } from "../access-log.js";
import type { NodeRequestHandler } from "../one-port-server.js";
import { labelAsOriginal } from "../request-sample.js";
import { writeConnectError, writeRestError } from "../rest/http-status.js";
import type { NodeServerRequest, NodeServerResponse } from "../rest/node-types.js";
import { type BuiltInPathMatcher, isPublicBuiltInPath } from "./built-in-routes.js";
import type { CustomRouteUser } from "./custom-route-auth.js";
import { BridgeResponse, toFetchRequest, toNodeRequest, writeFetchResponse } from "./fetch-bridge.js";

/** Options of {@link createCustomAppMount}. */
export interface CustomAppOptions {
  /** The user's app (`http.app`). */
  readonly app: UserHttpApp;
  /** `http.middleware_order`: `auth_first` authenticates before the user's middleware runs. */
  readonly order: "middleware_first" | "auth_first";
  /** `http.enable_custom_route_auth`: the user's own routes need credentials too. */
  readonly enableCustomRouteAuth: boolean;
  /** Authenticates a request (custom-route-auth.ts); throws a `ConnectError` to refuse it. */
  readonly authenticate: (request: Request) => Promise<CustomRouteUser>;
  /** Where failures of the user's app go. */
  readonly log: Logger;
  /**
   * Runs the user's app serving a request, so that its loopback clients (`new Client()` without a
   * URL) reach this server as the request's caller; the app runs as it is when absent.
   */
  readonly aroundRequest?: <T>(request: Request, fn: () => Promise<T>) => Promise<T>;
}

/** The custom app, ready to be put in front of the built-in routes by the HTTP handler. */
export interface CustomAppMount {
  /**
   * The handler that runs the user's app for every request no RPC path matched, and hands what the
   * app passes on to `builtIn` (with what its middleware changed).
   */
  bind(builtIn: NodeRequestHandler, isBuiltIn: BuiltInPathMatcher): NodeRequestHandler;
}

/** What the fall-through needs of the request being served; Hono passes it as the app's `env`. */
interface Passage {
  readonly req: NodeServerRequest;
  readonly res: NodeServerResponse;
  readonly builtIn: NodeRequestHandler;
  readonly user: CustomRouteUser | undefined;
}

/**
 * Mounts the user's app in front of the built-in routes, the way the LangGraph servers do:
 *
 * - A Hono app is copied into an app of ours (`route("/", app)`) whose not-found handler is the
 *   fall-through to the built-in routes: the user's middleware runs for every request (built-in
 *   routes included) and may rewrite its headers and body (`c.req.raw = new Request(…)`, or edit
 *   `c.req.raw.headers`) and the response after `await next()`; a path neither knows answers the
 *   built-in JSON 404. With an authenticated caller, `c.get("auth")` holds `{user, scopes}` as in
 *   the LangGraph JS server.
 * - A Fetch-style handler (a function, or an object with `fetch`) answers first; a 404 from it
 *   means "not mine" and the request goes on to the built-in routes.
 *
 * Authentication (one call, custom-route-auth.ts): a custom route needs credentials only with
 * `enableCustomRouteAuth`, checked before the user's app runs; with `auth_first` a built-in route
 * that needs credentials is refused before the user's middleware sees it, and the middleware sees
 * the caller in `c.get("auth")`. Built-in routes always authenticate themselves too, after the
 * middleware, so a middleware that sets a key header is honoured.
 */
export async function createCustomAppMount(options: CustomAppOptions): Promise<CustomAppMount> {
  const { app, log } = options;
  const report = (error: unknown, req: NodeServerRequest) =>
    log.error("custom HTTP app failed", { error, route: `${req.method} ${pathOf(req.url)}` });
  let serveUser: (request: Request, passage: Passage) => Promise<Response>;
  if (app.kind === "hono") {
    const { Hono } = await import("hono");
    const outer = new Hono<{ Bindings: Passage; Variables: { auth: unknown } }>();
    outer.use("*", async (c, next) => {
      const user = c.env.user;
      if (user) c.set("auth", { user, scopes: [...user.permissions] });
      keepParsedJson(c.req);
      await next();
    });
    outer.route("/", app.app as unknown as Parameters<typeof outer.route>[1]);
    outer.notFound(async (c) => fallThrough(await withBodyRead(c.req), c.env));
    outer.onError((error, c) => {
      const answer = (error as { getResponse?: () => Response }).getResponse;
      if (typeof answer === "function") return answer.call(error);
      report(error, c.env.req);
      return Response.json({ detail: "internal error" }, { status: 500 });
    });
    serveUser = (request, passage) => Promise.resolve(outer.fetch(request, passage));
  } else {
    const handle = app.fetch;
    serveUser = async (request, passage) => {
      // The handler may read the body before it answers 404; the built-in routes then read the copy.
      const forBuiltIn = request.body ? request.clone() : request;
      const response = await handle(request);
      if (!(response instanceof Response))
        throw new TypeError(`the http.app handler returned ${typeof response}, not a Response`);
      if (response.status !== 404) return response;
      await response.body?.cancel();
      return fallThrough(forBuiltIn, passage);
    };
  }

  const checksAuth = options.enableCustomRouteAuth || options.order === "auth_first";
  return {
    bind: (builtIn, isBuiltIn) => (req, res) => {
      // Without custom-route auth or auth_first nothing is authenticated here: no route lookup needed.
      const needsAuth = checksAuth && needsAuthentication(req, isBuiltIn, options);
      const request = toFetchRequest(req);
      const around = options.aroundRequest ?? ((_request, fn) => fn());
      const serve = async () => {
        const user = needsAuth ? await options.authenticate(request) : undefined;
        const response = await around(request, () => serveUser(request, { req, res, builtIn, user }));
        if (!res.destroyed) await writeFetchResponse(response, res);
      };
      serve().catch((error: unknown) => {
        if (!(error instanceof ConnectError)) report(error, req);
        if (res.headersSent) res.destroy();
        else if (error instanceof ConnectError) writeConnectError(res, error);
        else writeRestError(res, 500, "internal error");
      });
    },
  };
}

/** The parts of Hono's request this handler relies on: the raw request, and what was read of it. */
interface HonoBodies {
  readonly raw: Request;
  json: () => Promise<unknown>;
  /** What Hono read of the raw body, by kind (`c.req.text()`, `.arrayBuffer()`, …). */
  readonly bodyCache: Partial<Record<"text" | "arrayBuffer" | "blob", unknown>>;
}

/** The JSON body a request's handlers parsed, by request: one object for all of them. */
const parsedJson = new WeakMap<HonoBodies, Promise<unknown>>();

/**
 * Makes `c.req.json()` answer one object per request, parsed once: Hono keeps the body's text and
 * parses it again at each call, so a middleware that reads the body and changes it
 * (`(await c.req.json()).config = …`, as LangGraph projects write them) would change a copy
 * nobody reads.
 */
function keepParsedJson(req: HonoBodies): void {
  const parse = req.json.bind(req);
  req.json = () => {
    let parsed = parsedJson.get(req);
    if (!parsed) {
      parsed = parse();
      parsedJson.set(req, parsed);
    }
    return parsed;
  };
}

/**
 * The request a middleware hands on, with the body it read: once the middleware read the body
 * (`await c.req.json()`, `.text()`, …), the built-in routes get what it read, with the changes it
 * made to the parsed JSON. A body nobody read, or that the middleware replaced (a new
 * `c.req.raw`), is handed on as it is.
 */
async function withBodyRead(req: HonoBodies): Promise<Request> {
  const { raw, bodyCache } = req;
  if (!raw.bodyUsed) return raw;
  const json = parsedJson.get(req);
  let body: BodyInit | undefined;
  if (json) body = JSON.stringify(await json);
  else if (bodyCache.text !== undefined) body = (await bodyCache.text) as string;
  else if (bodyCache.arrayBuffer !== undefined) body = (await bodyCache.arrayBuffer) as ArrayBuffer;
  else if (bodyCache.blob !== undefined) body = (await bodyCache.blob) as Blob;
  if (body === undefined) return raw;
  return new Request(raw.url, { method: raw.method, headers: raw.headers, body });
}

/**
 * Serves `request` (the user's middleware may have replaced it) with the built-in routes, and
 * answers their response as a Fetch `Response` for the middleware chain to see on its way back.
 */
function fallThrough(request: Request, passage: Passage): Promise<Response> {
  const bridge = new BridgeResponse(request.method);
  const res: NodeJS.EventEmitter & { writableFinished: boolean } = passage.res;
  res.once("close", () => {
    if (!res.writableFinished) bridge.destroy();
  });
  const req = toNodeRequest(request, passage.req);
  if (req !== passage.req) {
    labelAsOriginal(req, passage.req);
    shareScope(req, passage.req);
  }
  passage.builtIn(req, bridge as unknown as Parameters<NodeRequestHandler>[1]);
  return bridge.response.catch((error: unknown) => {
    if (passage.res.destroyed) return new Response(null, { status: 499 });
    throw error instanceof Error ? error : new ConnectError(String(error), Code.Internal);
  });
}

/**
 * Whether a request is authenticated before the user's app runs: a custom route (no built-in route
 * has its path) with `enableCustomRouteAuth`, a built-in route that is not public with `auth_first`.
 */
function needsAuthentication(
  req: NodeServerRequest,
  isBuiltIn: BuiltInPathMatcher,
  options: Pick<CustomAppOptions, "enableCustomRouteAuth" | "order">,
): boolean {
  const path = pathOf(req.url);
  if (!isBuiltIn(req.method ?? "GET", path)) return options.enableCustomRouteAuth;
  return options.order === "auth_first" && !isPublicBuiltInPath(path);
}

function pathOf(url: string | undefined): string {
  const target = url ?? "/";
  const query = target.indexOf("?");
  return query === -1 ? target : target.slice(0, query);
}
