import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { A2A_ERRORS, A2aError } from "../../services/agents/a2a-protocol.js";

/** A JSON-RPC request id: what the answer must carry back. */
export type JsonRpcId = string | number | null;

/** A JSON-RPC 2.0 request, validated. */
export interface JsonRpcRequest {
  id: JsonRpcId;
  method: string;
  params: JsonValue | undefined;
}

/** A JSON-RPC 2.0 response: a result or an error. */
export type JsonRpcResponse =
  | { jsonrpc: "2.0"; id: JsonRpcId; result: unknown }
  | { jsonrpc: "2.0"; id: JsonRpcId; error: { code: number; message: string } };

/** The request's id, when it has a valid one: errors about the rest of the request still carry it. */
function idOf(body: JsonObject): JsonRpcId {
  const id = body.id;
  return typeof id === "string" || (typeof id === "number" && Number.isFinite(id)) ? id : null;
}

/**
 * Validates a JSON-RPC 2.0 request body. Throws a {@link JsonRpcFailure} (with the id when one could
 * be read) for anything else: a batch, a notification, a missing method.
 */
export function parseJsonRpcRequest(body: JsonValue | undefined): JsonRpcRequest {
  const invalid = (message: string, id: JsonRpcId = null) =>
    new JsonRpcFailure(id, new A2aError(A2A_ERRORS.invalidRequest, message));
  if (Array.isArray(body)) throw invalid("batches are not supported: send one JSON-RPC request per call");
  if (typeof body !== "object" || body === null)
    throw invalid("the body must be a JSON-RPC 2.0 request object: {jsonrpc, id, method, params}");
  const id = idOf(body);
  if (body.jsonrpc !== "2.0") throw invalid('jsonrpc must be "2.0"', id);
  if (!("id" in body) || (body.id !== null && id === null))
    throw invalid("id must be a string or a number: A2A requests are answered, never notifications", id);
  if (typeof body.method !== "string" || body.method === "")
    throw invalid("method must be a method name", id);
  return { id, method: body.method, params: body.params ?? undefined };
}

/** An error answered to a request with this id. */
export class JsonRpcFailure extends Error {
  constructor(
    readonly id: JsonRpcId,
    readonly error: A2aError,
  ) {
    super(error.message);
    this.name = "JsonRpcFailure";
  }
}

/** A result envelope. */
export function resultResponse(id: JsonRpcId, result: unknown): JsonRpcResponse {
  return { jsonrpc: "2.0", id, result };
}

/** An error envelope. */
export function errorResponse(id: JsonRpcId, error: A2aError): JsonRpcResponse {
  return { jsonrpc: "2.0", id, error: { code: error.code, message: error.message } };
}

/**
 * The JSON-RPC error of a failure inside a method, or undefined for one that is not the caller's
 * to see (a bug, an outage: the HTTP layer answers those). A refused run (bad input, unknown thread,
 * a busy thread) is invalid params; a server-side refusal (unavailable, overloaded) an internal
 * error; a `ConnectError`'s message is written for callers.
 */
export function jsonRpcErrorOf(error: unknown): A2aError | undefined {
  if (error instanceof A2aError) return error;
  if (!(error instanceof ConnectError)) return undefined;
  switch (error.code) {
    case Code.InvalidArgument:
    case Code.NotFound:
    case Code.AlreadyExists:
    case Code.FailedPrecondition:
    case Code.OutOfRange:
      return new A2aError(A2A_ERRORS.invalidParams, error.rawMessage);
    case Code.Aborted:
    case Code.ResourceExhausted:
    case Code.DeadlineExceeded:
    case Code.Canceled:
      return new A2aError(A2A_ERRORS.internalError, error.rawMessage);
    default:
      return undefined;
  }
}
