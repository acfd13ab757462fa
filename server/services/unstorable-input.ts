import { Code, ConnectError } from "@connectrpc/connect";
import { pgErrorCode } from "../store/db.js";

/**
 * What Postgres refuses to store, by SQLSTATE, and what the caller should change. Only codes that a
 * request's own data causes: jsonb refuses the NUL character (22P05, "unsupported Unicode escape
 * sequence"), and an index refuses an entry over its size limit (54000, "index row size exceeds").
 */
const UNSTORABLE: Record<string, string> = {
  "22P05": "a JSON string in the request contains the NUL character (\\u0000), which cannot be stored",
  "54000": "a value in the request is too large to store: send shorter keys, names or metadata values",
};

/**
 * The INVALID_ARGUMENT for a database error caused by the request's data (see {@link UNSTORABLE}),
 * or undefined for any other error. Every API service uses it, so no such input answers 500.
 */
export function explainUnstorableInput(error: unknown): ConnectError | undefined {
  const code = pgErrorCode(error);
  const message = code === undefined ? undefined : UNSTORABLE[code];
  return message === undefined ? undefined : new ConnectError(message, Code.InvalidArgument);
}
