/**
 * The streaming protocol's error answers. A command the protocol refuses is answered as
 * `{type: "error", id, error, message}` (HTTP 200), with one of the protocol's error codes; the
 * service's own errors (ConnectError) become the nearest code, except a missing or unknown
 * credential, which stays an HTTP 401 as on every route.
 */
import { Code, ConnectError } from "@connectrpc/connect";

/** The protocol's error codes. */
export type ProtocolErrorCode =
  | "invalid_argument"
  | "unknown_command"
  | "unknown_error"
  | "no_such_run"
  | "no_such_subscription"
  | "no_such_namespace"
  | "no_such_interrupt"
  | "no_such_checkpoint"
  | "permission_denied"
  | "not_supported";

/** A command refused with a protocol error code. */
export class ProtocolError extends Error {
  constructor(
    readonly code: ProtocolErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "ProtocolError";
  }
}

/** `invalid_argument`: a parameter to fix. */
export function invalidParam(message: string): ProtocolError {
  return new ProtocolError("invalid_argument", message);
}

/**
 * What a failed command answers: its protocol error, or the protocol code nearest to a service
 * error. Undefined for errors that are not the command's to answer (no valid credential: the
 * request fails as a whole), which the caller rethrows. An internal error's details are never
 * shown; the caller logs them.
 */
export function protocolErrorOf(error: unknown): { code: ProtocolErrorCode; message: string } | undefined {
  if (error instanceof ProtocolError) return { code: error.code, message: error.message };
  if (!(error instanceof ConnectError))
    return { code: "unknown_error", message: "the command failed on the server" };
  switch (error.code) {
    case Code.Unauthenticated:
      return undefined;
    case Code.PermissionDenied:
      return { code: "permission_denied", message: error.rawMessage };
    case Code.NotFound:
      return { code: "no_such_run", message: error.rawMessage };
    case Code.Unimplemented:
      return { code: "not_supported", message: error.rawMessage };
    case Code.InvalidArgument:
    case Code.FailedPrecondition:
    case Code.AlreadyExists:
    case Code.Aborted:
    case Code.ResourceExhausted:
    case Code.OutOfRange:
      return { code: "invalid_argument", message: error.rawMessage };
    default:
      return { code: "unknown_error", message: "the command failed on the server" };
  }
}
