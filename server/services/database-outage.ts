import { Code, ConnectError } from "@connectrpc/connect";
import { pgErrorCode } from "../store/db.js";

/** Errors of the `postgres` driver when a connection cannot be made or is lost. */
const DRIVER_CODES = new Set([
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
]);
/** Socket errors of Node when Postgres is not listening or went away. */
const SOCKET_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
]);
/**
 * SQLSTATEs of a Postgres that is going away or not back yet: admin_shutdown, crash_shutdown,
 * cannot_connect_now (starting up or recovering), too_many_connections; and class 08, connection
 * exceptions.
 */
const OUTAGE_SQLSTATES = new Set(["57P01", "57P02", "57P03", "53300"]);
/** Causes followed to find the driver's error below wrappers (a job queue's, a service's). */
const MAX_CAUSES = 3;

/** The UNAVAILABLE every call gets during an outage: what happened and what the caller should do. */
export function databaseUnavailable(): ConnectError {
  return new ConnectError("the database is unreachable; retry in a few seconds", Code.Unavailable);
}

/**
 * UNAVAILABLE (503 on REST, which clients retry) for an error that says Postgres is unreachable,
 * restarting or shutting down; undefined for any other error. Such errors are an outage, not a bug:
 * they are answered without being logged as internal errors, since the dependency monitor already
 * logs the outage once.
 */
export function explainDatabaseOutage(error: unknown): ConnectError | undefined {
  let current: unknown = error;
  for (let depth = 0; depth <= MAX_CAUSES && current instanceof Error; depth++) {
    if (isOutage(current)) return databaseUnavailable();
    current = current.cause;
  }
  return undefined;
}

function isOutage(error: Error): boolean {
  const sqlstate = pgErrorCode(error);
  if (sqlstate !== undefined) return OUTAGE_SQLSTATES.has(sqlstate) || sqlstate.startsWith("08");
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" && (DRIVER_CODES.has(code) || SOCKET_CODES.has(code));
}
