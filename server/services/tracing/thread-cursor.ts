import { Code, ConnectError } from "@connectrpc/connect";
import type { ThreadKey } from "../../store/thread-read-store.js";

/** Version tag of the cursor format, so a future format can reject old cursors clearly. */
const VERSION = "t1";
/** The time as the store writes it: ISO 8601 UTC with six fractional digits. */
const ISO_MICROS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

/**
 * The opaque cursor of the page after thread `key`: base64url of `["t1", <max start>, <thread id>]`
 * (JSON, since a thread id is any text). Keyset pagination on (latest start, thread id).
 */
export function encodeThreadCursor(key: ThreadKey): string {
  return Buffer.from(JSON.stringify([VERSION, key.maxStartTime, key.threadId]), "utf8").toString("base64url");
}

/** The thread key of a cursor from {@link encodeThreadCursor}; INVALID_ARGUMENT for anything else. */
export function decodeThreadCursor(cursor: string): ThreadKey {
  let parts: unknown;
  try {
    parts = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    parts = undefined;
  }
  if (
    Array.isArray(parts) &&
    parts.length === 3 &&
    parts[0] === VERSION &&
    typeof parts[1] === "string" &&
    ISO_MICROS.test(parts[1]) &&
    !Number.isNaN(Date.parse(parts[1])) &&
    typeof parts[2] === "string"
  ) {
    return { maxStartTime: parts[1], threadId: parts[2] };
  }
  throw new ConnectError(
    "cursor is not valid: send the next_cursor value of a previous response unchanged",
    Code.InvalidArgument,
  );
}
