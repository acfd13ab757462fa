import { Code, ConnectError } from "@connectrpc/connect";
import { HttpExceptionStatus } from "../../services/iam/auth-http-exception.js";
import type { NodeServerResponse } from "./node-types.js";

/**
 * The one map from a Connect `Code` to the HTTP status REST answers with (design decision 4).
 * InvalidArgument is 422 because a body that parsed but does not fit the schema is well-formed
 * JSON; malformed JSON is 400 (see {@link malformedRequestError}).
 */
const statusByCode: Readonly<Record<Code, number>> = {
  [Code.Canceled]: 499, // nginx's "client closed request", as Connect and gRPC-Gateway use
  [Code.Unknown]: 500,
  [Code.InvalidArgument]: 422,
  [Code.DeadlineExceeded]: 504,
  [Code.NotFound]: 404,
  [Code.AlreadyExists]: 409,
  [Code.PermissionDenied]: 403,
  [Code.ResourceExhausted]: 429,
  [Code.FailedPrecondition]: 409,
  [Code.Aborted]: 409,
  [Code.OutOfRange]: 422,
  [Code.Unimplemented]: 501,
  [Code.Internal]: 500,
  [Code.Unavailable]: 503,
  [Code.DataLoss]: 500,
  [Code.Unauthenticated]: 401,
};

/**
 * Marks a `ConnectError` raised by the REST layer itself for a request HTTP has a more precise
 * status for than the code's (unparsable JSON, an oversized body). The mark rides in `cause`,
 * which never reaches a client.
 */
const problemStatus = Symbol("REST request problem status");

interface RequestProblem {
  readonly [problemStatus]: number;
}

function isRequestProblem(value: unknown): value is RequestProblem {
  return typeof value === "object" && value !== null && problemStatus in value;
}

function requestProblemError(message: string, code: Code, status: number): ConnectError {
  const cause: RequestProblem = { [problemStatus]: status };
  return new ConnectError(message, code, undefined, undefined, cause);
}

/** The HTTP status for a Connect code. */
export function httpStatusFromCode(code: Code): number {
  return statusByCode[code] ?? 500;
}

/** The HTTP status REST answers a `ConnectError` with. */
export function restErrorStatus(error: ConnectError): number {
  if (error.cause instanceof HttpExceptionStatus) return error.cause.status;
  return isRequestProblem(error.cause) ? error.cause[problemStatus] : httpStatusFromCode(error.code);
}

/** A request that cannot be read at all (malformed JSON, bad gzip, bad percent-encoding): 400. */
export function malformedRequestError(message: string): ConnectError {
  return requestProblemError(message, Code.InvalidArgument, 400);
}

/** A request body over the size limit: ResourceExhausted, answered 413 Content Too Large over REST. */
export function payloadTooLargeError(message: string): ConnectError {
  return requestProblemError(message, Code.ResourceExhausted, 413);
}

/** A request body in an encoding the server cannot read: 415 Unsupported Media Type over REST. */
export function unsupportedEncodingError(message: string): ConnectError {
  return requestProblemError(message, Code.InvalidArgument, 415);
}

/** The REST error body: exactly `{"detail": "<message>"}`. */
export function restErrorBody(detail: string): string {
  return JSON.stringify({ detail });
}

/**
 * Answers with a REST error body. Does nothing when the response has already started or the
 * client has gone (there is no one to tell).
 */
export function writeRestError(
  res: NodeServerResponse,
  status: number,
  detail: string,
  headers?: Record<string, string>,
): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { ...headers, "content-type": "application/json" });
  res.end(restErrorBody(detail));
}

/**
 * Answers a `ConnectError` the REST way: its status, its metadata as headers (a custom auth
 * handler's `HTTPException` headers, such as `WWW-Authenticate`) and `{"detail": rawMessage}`.
 */
export function writeConnectError(res: NodeServerResponse, error: ConnectError): void {
  const headers: Record<string, string> = {};
  error.metadata.forEach((value, name) => {
    headers[name] = value;
  });
  writeRestError(res, restErrorStatus(error), error.rawMessage, headers);
}
