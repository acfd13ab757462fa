import { Code, ConnectError } from "@connectrpc/connect";

/**
 * The HTTP status an auth handler's `HTTPException` asked for, kept in the `ConnectError`'s cause
 * (never shown to clients) so REST answers with exactly that status; other protocols use the code.
 */
export class HttpExceptionStatus {
  constructor(readonly status: number) {}
}

/** An `HTTPException` of `@langchain/langgraph-sdk/auth` (or any error with `status` and `headers`). */
export interface HttpExceptionLike {
  readonly status: number;
  readonly headers?: unknown;
  readonly message?: unknown;
}

/**
 * Whether `error` is an `HTTPException`. Recognised by shape, as the JS server does: the user's
 * project may hold its own copy of the SDK, whose class is not ours.
 */
export function isHttpException(error: unknown): error is HttpExceptionLike {
  return (
    typeof error === "object" &&
    error !== null &&
    "status" in error &&
    "headers" in error &&
    Number.isInteger((error as { status: unknown }).status)
  );
}

/** The Connect code of an HTTP status, as close in meaning as one exists. */
function codeOfStatus(status: number): Code {
  switch (status) {
    case 400:
    case 422:
      return Code.InvalidArgument;
    case 401:
      return Code.Unauthenticated;
    case 403:
      return Code.PermissionDenied;
    case 404:
      return Code.NotFound;
    case 409:
      return Code.AlreadyExists;
    case 429:
      return Code.ResourceExhausted;
    case 501:
      return Code.Unimplemented;
    case 503:
      return Code.Unavailable;
    case 504:
      return Code.DeadlineExceeded;
    default:
      return status >= 500 ? Code.Internal : Code.FailedPrecondition;
  }
}

/** Response headers of the exception; headers a Headers object refuses are left out. */
function headersOf(raw: unknown): Headers {
  const headers = new Headers();
  if (raw === undefined || raw === null) return headers;
  try {
    new Headers(raw as HeadersInit).forEach((value, name) => {
      headers.set(name, value);
    });
  } catch {
    // A header the handler built wrong is dropped; the status and message still answer.
  }
  return headers;
}

/**
 * The `ConnectError` of an auth handler's `HTTPException`: its message, the code of its status, its
 * headers as metadata (response headers on REST, headers/trailers on gRPC and Connect) and its exact
 * status for REST. A status outside 400–599 answers 401 (the handler refused, but not as an error).
 */
export function httpExceptionError(error: HttpExceptionLike): ConnectError {
  const status = error.status >= 400 && error.status <= 599 ? error.status : 401;
  const message =
    typeof error.message === "string" && error.message !== "" ? error.message : `HTTP ${status}`;
  return new ConnectError(
    message,
    codeOfStatus(status),
    headersOf(error.headers),
    undefined,
    new HttpExceptionStatus(status),
  );
}
