import { randomUUID } from "node:crypto";
import {
  MOST_NUMBER_BYTES,
  mostJsonStringBytes,
  writeAscii,
  writeBytes,
  writeHundredths,
  writeJsonString,
  writeNumber,
} from "../json-bytes.js";
import { type LogBytes, type Logger, writesAt } from "../logger.js";
import type { RequestScope } from "../request-scope.js";
import { type RequestObserver, type RequestSample, UNMATCHED_ROUTE } from "./request-sample.js";
import type { NodeServerRequest, NodeServerResponse } from "./rest/node-types.js";

/**
 * Request ids a client may choose: up to 128 characters of letters, digits and `._:-` (UUIDs,
 * ULIDs, trace ids, load balancers' ids all fit); anything else is replaced by a generated UUID so
 * that no header value can break a log line or a downstream system.
 */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

const scopes = new WeakMap<NodeServerRequest, RequestScope>();

/**
 * Gives `standIn` the scope of `original`: a custom app's middleware replaced the request, and the
 * workspace the built-in route selects for the replacement is the original's, whose line it is.
 */
export function shareScope(standIn: NodeServerRequest, original: NodeServerRequest): void {
  const scope = scopes.get(original);
  if (scope) scopes.set(standIn, scope);
}

/** The header that carries a request's id in and out. */
export const REQUEST_ID_HEADER = "x-request-id";

/**
 * The scope of a request that {@link createAccessLog}'s `begin` saw, for the layers that fill it in
 * (the workspace selected); undefined for a request it did not see.
 */
export function scopeOf(req: NodeServerRequest): RequestScope | undefined {
  return scopes.get(req);
}

/**
 * Starts a request's access record: takes its `x-request-id` (or makes one) and echoes it on the
 * response. When `log` is given and writes info lines when the request arrives (its level may change
 * while the process runs), returns the observer that writes its one info line once the response has
 * closed (the caller hands it to observeRequest, request-sample.ts): method, route template, status,
 * duration, workspace and request id. Never the path's values, the query, headers or bodies, so keys
 * and payloads stay out of the logs.
 */
export function createAccessLog(
  log: Logger | undefined,
): (req: NodeServerRequest, res: NodeServerResponse) => RequestObserver | undefined {
  const level = log?.level;
  return (req, res) => {
    const given = req.headers[REQUEST_ID_HEADER];
    const requestId = typeof given === "string" && REQUEST_ID.test(given) ? given : randomUUID();
    res.setHeader(REQUEST_ID_HEADER, requestId);
    const scope: RequestScope = { workspaceId: undefined };
    scopes.set(req, scope);
    if (!log || (level && !writesAt(level.current, "info"))) return undefined;
    const { bytes } = log;
    if (bytes) return (sample) => writeAccessLine(bytes, sample, res, scope, requestId);
    return (sample) => log.info("request", accessFields(sample, res, scope, requestId));
  };
}

/** The fields of an access line, as an object of one fixed shape (the logger encodes it as it is). */
type AccessFields = {
  method: string;
  route: string | null;
  status: number;
  durationMs: number;
  workspaceId: string | null;
  requestId: string;
  /** A response cut off before its end: the client went away, or the server gave up on it. */
  incomplete?: true;
};

/** Hundredths of a millisecond: the duration's precision in the line. */
const HUNDREDTHS = 100;

/** The line of a request whose response closed, from the sample metrics count it with. */
function accessFields(
  sample: RequestSample,
  res: NodeServerResponse,
  scope: RequestScope,
  requestId: string,
): AccessFields {
  const fields: AccessFields = {
    method: sample.method,
    route: sample.route === UNMATCHED_ROUTE ? null : sample.route,
    status: res.statusCode,
    durationMs: Math.round(sample.durationMs * HUNDREDTHS) / HUNDREDTHS,
    workspaceId: scope.workspaceId ?? null,
    requestId,
  };
  if (cutOff(res)) fields.incomplete = true;
  return fields;
}

/** Whether the response to `res` was cut off before its end (see {@link AccessFields.incomplete}). */
function cutOff(res: NodeServerResponse): boolean {
  // writableEnded too: Node's HTTP/2 compatibility layer reports a reset stream as finished.
  return !res.writableEnded || !res.writableFinished;
}

/** Methods whose line pieces are kept: the ones a server answers; other tokens are encoded per line. */
const KNOWN_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

/**
 * The bytes of an access line from its method to its status's key (`,"method":"GET","route":
 * "/threads/{thread_id}","status":`), by route and method: routes are the templates, declared paths
 * and RPC paths of the server, a set fixed when it starts, so each piece is encoded once.
 */
const methodRouteBytes = new Map<string, Map<string, Uint8Array>>();

function methodAndRoute(method: string, route: string): Uint8Array {
  let byMethod = methodRouteBytes.get(route);
  const known = byMethod?.get(method);
  if (known !== undefined) return known;
  const routeJson = route === UNMATCHED_ROUTE ? "null" : JSON.stringify(route);
  const bytes = Buffer.from(
    `${METHOD_KEY}${JSON.stringify(method)}${ROUTE_KEY}${routeJson}${STATUS_KEY}`,
    "utf8",
  );
  if (KNOWN_METHODS.has(method)) {
    if (byMethod === undefined) {
      byMethod = new Map();
      methodRouteBytes.set(route, byMethod);
    }
    byMethod.set(method, bytes);
  }
  return bytes;
}

/** The keys of an access line's fields, each with the comma before it, in the line's order. */
const METHOD_KEY = ',"method":';
const ROUTE_KEY = ',"route":';
const STATUS_KEY = ',"status":';
const DURATION_KEY = ',"durationMs":';
const WORKSPACE_KEY = ',"workspaceId":';
const REQUEST_ID_KEY = ',"requestId":';
const INCOMPLETE = ',"incomplete":true';
/** `null`, a workspace id's value when none was selected. */
const NULL = "null";
/** The keys' bytes after the status together: the room they take beyond their values. */
const KEYS_BYTES = DURATION_KEY.length + WORKSPACE_KEY.length + REQUEST_ID_KEY.length + INCOMPLETE.length;

/**
 * Writes the access line of {@link accessFields} straight as bytes (the same JSON, key for key):
 * it is written for every request, and building its object and strings first cost several times
 * what the bytes do.
 */
function writeAccessLine(
  bytes: LogBytes,
  sample: RequestSample,
  res: NodeServerResponse,
  scope: RequestScope,
  requestId: string,
): void {
  const head = methodAndRoute(sample.method, sample.route);
  const workspaceId = scope.workspaceId;
  const most =
    KEYS_BYTES +
    head.length +
    2 * MOST_NUMBER_BYTES +
    (workspaceId === undefined ? NULL.length : mostJsonStringBytes(workspaceId)) +
    mostJsonStringBytes(requestId);
  let end = bytes.open("info", "request", most);
  const buffer = bytes.buffer;
  end = writeBytes(buffer, end, head);
  end = writeNumber(buffer, end, res.statusCode);
  end = writeAscii(buffer, end, DURATION_KEY);
  end = writeHundredths(buffer, end, sample.durationMs);
  end = writeAscii(buffer, end, WORKSPACE_KEY);
  end = workspaceId === undefined ? writeAscii(buffer, end, NULL) : writeJsonString(buffer, end, workspaceId);
  end = writeAscii(buffer, end, REQUEST_ID_KEY);
  end = writeJsonString(buffer, end, requestId);
  if (cutOff(res)) end = writeAscii(buffer, end, INCOMPLETE);
  bytes.close(end);
}
