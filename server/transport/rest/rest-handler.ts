import {
  create,
  type DescMessage,
  isMessage,
  type JsonObject,
  type JsonValue,
  type JsonWriteOptions,
  type Message,
  type Registry,
  toJson,
} from "@bufbuild/protobuf";
import { requestScopeKey } from "../../request-scope.js";
import { restFieldSelectionKey, restSuccessStatusKey } from "../../services/response-status.js";
import { ignoredFieldsKey } from "../../services/unknown-fields.js";
import { scopeOf } from "../access-log.js";
import {
  type BoundMethod,
  type BoundService,
  type InternalErrorReporter,
  toPublicError,
} from "../bound-service.js";
import { type IgnoredFieldsSink, ignoresUnknownFields } from "../field-leniency.js";
import { labelRoute } from "../request-sample.js";
import { writeConnectError, writeRestError } from "./http-status.js";
import type { NodeServerRequest, NodeServerResponse } from "./node-types.js";
import { createRequestDecoder, type RequestDecoder } from "./request-decoder.js";
import { createRestCallContext } from "./rest-call-context.js";
import { createRouteTable, type Route, withHead } from "./route-table.js";
import { createSseFramer, defaultHeartbeatMs, type SseFramer, writeSse } from "./sse-writer.js";

/** Options of {@link createRestHandler}. */
export interface RestHandlerOptions {
  /** The services to serve; every method with a google.api.http option gets its routes. */
  readonly services: readonly BoundService[];
  /** Resolves `google.protobuf.Any` and extensions in JSON. */
  readonly registry: Registry;
  /** Idle time between SSE heartbeat comments; defaults to {@link defaultHeartbeatMs}. */
  readonly heartbeatMs?: number;
  /** Aborts every call in flight and ends SSE streams cleanly when the server shuts down. */
  readonly shutdownSignal?: AbortSignal;
  /**
   * Receives errors the REST layer itself did not expect (for example a response that cannot be
   * written as JSON); the client sees a generic internal error.
   */
  readonly onInternalError: InternalErrorReporter;
  /**
   * Receives the request members and query parameters a lenient service ignored (see
   * field-leniency.ts), once per request that had any.
   */
  readonly onIgnoredFields?: IgnoredFieldsSink;
}

/**
 * Serves one request if a REST route's path matches it. Resolves true when it answered, false
 * when no route path matches (the caller answers 404).
 */
export type RestHandler = (req: NodeServerRequest, res: NodeServerResponse) => Promise<boolean>;

/**
 * Packages whose REST JSON leaves out fields at their default value (`""`, `0`, `false`, `[]`), as
 * Connect JSON does, so that REST and Connect answer the same shape: agentplane's own APIs, which no
 * other system's wire contract shapes. The LangGraph- and LangSmith-compatible APIs (agents, tracing,
 * export) keep every field, defaults included, as their clients read them.
 */
const CONNECT_SHAPED_PACKAGES: readonly string[] = ["agentplane.iam.", "agentplane.system."];

/** Everything one route needs per request, computed at start-up. */
interface Endpoint {
  readonly route: Route;
  readonly call: BoundMethod;
  readonly decode: RequestDecoder;
  /** Whether the service ignores request members it does not know (field-leniency.ts). */
  readonly lenient: boolean;
  /** The unary response (or the stream message) as the JSON REST answers with. */
  readonly encode: (message: unknown) => JsonValue;
  readonly frame: SseFramer;
}

/**
 * The REST transcoder: maps HTTP requests to the RPCs of `services` through their google.api.http
 * options and calls the bound implementations directly (no serialisation round trip), so the
 * guard and the error policy of {@link BoundService} apply exactly as on Connect and gRPC.
 *
 * JSON uses proto field names and emits every field, defaults included, except for agentplane's own
 * APIs (see {@link CONNECT_SHAPED_PACKAGES}), whose fields at their default are left out exactly as
 * Connect JSON leaves them out. Unary RPCs answer 200;
 * server-streaming RPCs answer Server-Sent Events. Errors answer `{"detail": ...}` with the status
 * from http-status.ts; a path that matches with another HTTP method answers 405 with `Allow`.
 * Throws at start-up when a google.api.http option is invalid (see {@link createRouteTable}).
 */
export function createRestHandler(options: RestHandlerOptions): RestHandler {
  const { registry, shutdownSignal } = options;
  const heartbeatMs = options.heartbeatMs ?? defaultHeartbeatMs;
  const report = options.onInternalError;
  const impls = new Map(options.services.map((s) => [s.service.typeName, s.impl]));
  const table = createRouteTable(options.services.map((s) => s.service));
  const writeOptions: Partial<JsonWriteOptions> = {
    registry,
    useProtoFieldName: true,
    alwaysEmitImplicit: true,
  };
  const connectShapedOptions: Partial<JsonWriteOptions> = { ...writeOptions, alwaysEmitImplicit: false };

  const endpoints = new Map<Route, Endpoint>();
  for (const route of table.routes) {
    const { method } = route;
    const call = impls.get(route.service.typeName)?.[method.localName];
    if (!call) throw new Error(`${route.service.typeName} has no bound implementation of ${method.name}`);
    const narrow = route.responseBody?.name;
    const options = CONNECT_SHAPED_PACKAGES.some((prefix) => route.service.typeName.startsWith(prefix))
      ? connectShapedOptions
      : writeOptions;
    const encode = (message: unknown): JsonValue => {
      const json = toJson(method.output, normalize(method.output, message), options) as JsonObject;
      return narrow === undefined ? json : (json[narrow] ?? null);
    };
    const frame = createSseFramer(method.output, encode);
    const normalizedFrame: SseFramer = (message, sequence) =>
      frame(normalize(method.output, message), sequence);
    const lenient = ignoresUnknownFields(route.service);
    endpoints.set(route, {
      route,
      call,
      lenient,
      decode: createRequestDecoder(route, registry, { lenient }),
      encode,
      frame: normalizedFrame,
    });
  }

  const serve = async (
    endpoint: Endpoint,
    captures: string[],
    query: string,
    req: NodeServerRequest,
    res: NodeServerResponse,
  ): Promise<void> => {
    const { route } = endpoint;
    labelRoute(req, route.template.text);
    const call = createRestCallContext({
      service: route.service,
      method: route.method,
      httpMethod: route.httpMethod,
      req,
      res,
      shutdownSignal,
    });
    const { ctx } = call;
    const scope = scopeOf(req);
    if (scope) ctx.values.set(requestScopeKey, scope);
    const ignored: string[] | undefined = endpoint.lenient ? [] : undefined;
    try {
      const request = await endpoint.decode(req, captures, query, ignored);
      if (ignored && ignored.length > 0) reportIgnored(route, ignored);
      if (route.method.methodKind === "server_streaming") {
        await writeSse(res, endpoint.call(request, ctx) as AsyncIterable<unknown>, endpoint.frame, {
          heartbeatMs,
          stop: ctx.signal,
          headers: () => call.handlerHeaders(),
          toError: (error) => toPublicError(error, ctx, report),
        });
        return;
      }
      const response = await endpoint.call(request, ctx);
      const noted = ctx.values.get(ignoredFieldsKey);
      if (noted) reportIgnored(route, noted);
      if (res.destroyed) return;
      if (endpoint.lenient && route.httpMethod === "PATCH" && prefersMinimalReturn(req)) {
        // RFC 7240: the client asked for no representation of the updated resource.
        res.writeHead(204, { ...call.handlerHeaders(), "preference-applied": "return=minimal" });
        res.end();
        return;
      }
      const body = JSON.stringify(selected(endpoint.encode(response), ctx.values.get(restFieldSelectionKey)));
      res.writeHead(ctx.values.get(restSuccessStatusKey), {
        ...call.handlerHeaders(),
        "content-type": "application/json",
        "content-length": Buffer.byteLength(body),
      });
      res.end(body);
    } catch (error) {
      writeConnectError(res, toPublicError(error, ctx, report));
    } finally {
      call.finish();
    }
  };

  const reportIgnored = (route: Route, names: readonly string[]): void => {
    options.onIgnoredFields?.(route.service.typeName, names);
  };

  return async (req, res) => {
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const path = q < 0 ? url : url.slice(0, q);
    // HEAD is answered wherever GET is: the same handler, and Node leaves out the body.
    const method = req.method === "HEAD" ? "GET" : (req.method ?? "GET");
    const found = table.lookup(method, path);
    if (found === undefined) return false;
    if (found.kind === "method-not-allowed") {
      const allow = withHead(found.allowed).join(", ");
      writeRestError(res, 405, `method not allowed; this path accepts ${allow}`, { allow });
      return true;
    }
    await serve(endpoints.get(found.route)!, found.captures, q < 0 ? "" : url.slice(q + 1), req, res);
    return true;
  };
}

/**
 * Whether the request's `Prefer` header asks for `return=minimal` (RFC 7240), as
 * `@langchain/langgraph-sdk`'s `threads.update(..., {returnMinimal: true})` sends it.
 */
function prefersMinimalReturn(req: NodeServerRequest): boolean {
  const prefer = req.headers.prefer;
  if (prefer === undefined) return false;
  const values = Array.isArray(prefer) ? prefer : [prefer];
  return values.some((value) =>
    value.split(",").some((preference) => {
      const [token] = preference.split(";", 1);
      return (
        token
          ?.trim()
          .toLowerCase()
          .replace(/\s*=\s*/, "=") === "return=minimal"
      );
    }),
  );
}

/** A handler returns an init object or a message; protobuf-es's JSON needs a message. */
function normalize(schema: DescMessage, value: unknown): Message {
  return isMessage(value, schema) ? value : create(schema, value as never);
}

/** `json` with only the `fields` a handler selected (of an object, or of each object of a list). */
function selected(json: JsonValue, fields: ReadonlySet<string> | undefined): JsonValue {
  if (!fields) return json;
  const keep = (value: JsonValue): JsonValue =>
    typeof value === "object" && value !== null && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value).filter(([key]) => fields.has(key)))
      : value;
  return Array.isArray(json) ? json.map(keep) : keep(json);
}
