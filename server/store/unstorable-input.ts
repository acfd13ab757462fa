import { Code, ConnectError } from "@connectrpc/connect";
import { pgErrorCode } from "./db.js";

/**
 * What Postgres refuses to store, by SQLSTATE, and what the caller should change: only codes that a
 * request's own data causes. jsonb refuses the NUL character; numeric and timestamp columns refuse
 * values beyond their range; an index refuses an entry over its size limit.
 */
const UNSTORABLE: Record<string, string> = {
  "22P05": "a JSON string in the request contains the NUL character (\\u0000), which cannot be stored",
  "22003": "a number in the request is out of the range that can be stored",
  "22008": "a date in the request is out of the range that can be stored",
  "22007": "a date in the request is not in a format that can be stored",
  "54000": "a value in the request is too large to store: send shorter keys, names or metadata values",
};

/**
 * The INVALID_ARGUMENT for a database error caused by the request's data (see {@link UNSTORABLE}),
 * or undefined for any other error. Every API service and the trace ingest use it, so no such input
 * answers 500.
 */
export function explainUnstorableInput(error: unknown): ConnectError | undefined {
  const code = pgErrorCode(error);
  const message = code === undefined ? undefined : UNSTORABLE[code];
  return message === undefined ? undefined : new ConnectError(message, Code.InvalidArgument);
}
