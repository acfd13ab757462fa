import type { ConnectError } from "@connectrpc/connect";
import { payloadTooLargeError } from "../rest/http-status.js";
import type { NodeServerRequest } from "../rest/node-types.js";

/**
 * The largest request body accepted on every route and protocol, before and after gzip
 * decompression. Large enough for the biggest legitimate payloads (run inputs, store values, state
 * updates carrying documents, trace batches); small enough that a single request cannot exhaust the
 * process's memory.
 */
export const maxRequestBodyBytes = 32 * 1024 * 1024;

/** The 413 (RESOURCE_EXHAUSTED on Connect and gRPC) for a body over {@link maxRequestBodyBytes}. */
export function bodyTooLargeError(): ConnectError {
  return payloadTooLargeError(
    `the request body is larger than ${maxRequestBodyBytes / 1024 / 1024} MiB; send less data per request`,
  );
}

/** True when the request's Content-Length already says its body is over the limit. */
export function declaresTooLargeBody(req: NodeServerRequest): boolean {
  return Number(req.headers["content-length"]) > maxRequestBodyBytes;
}
