import { Code, ConnectError } from "@connectrpc/connect";
import { isUuid } from "../ids.js";

/** An InvalidArgument error (REST 422) with a message that says what to fix. */
export function invalid(message: string): ConnectError {
  return new ConnectError(message, Code.InvalidArgument);
}

/** `value` in lowercase when it is a UUID; InvalidArgument naming `field` otherwise. */
export function requireUuid(value: string, field: string): string {
  if (!isUuid(value)) throw invalid(`${field} must be a UUID, got ${JSON.stringify(value)}`);
  return value.toLowerCase();
}

/**
 * One of `allowed`, or `fallback` when absent (InvalidArgument saying it is required when there is
 * no fallback); InvalidArgument listing the allowed values for anything else.
 */
export function oneOf<T extends string>(
  value: string | undefined,
  allowed: readonly T[],
  field: string,
  fallback?: T,
): T {
  if (value === undefined) {
    if (fallback !== undefined) return fallback;
    throw invalid(`${field} is required: one of ${allowed.join(", ")}`);
  }
  if (!(allowed as readonly string[]).includes(value))
    throw invalid(`${field} must be one of ${allowed.join(", ")}; got ${JSON.stringify(value)}`);
  return value as T;
}
