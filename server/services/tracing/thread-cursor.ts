import { Code, ConnectError } from "@connectrpc/connect";
import { isUuid } from "../../ids.js";
import type { ThreadKey } from "../../store/agents/thread-read-store.js";

/**
 * Version tag of the cursor format, so a future format can reject old cursors clearly. "t2": the
 * key's second part is the thread's latest trace id ("t1" cursors held the thread id).
 */
const VERSION = "t2";
/** The time as the store writes it: ISO 8601 UTC with six fractional digits. */
const ISO_MICROS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

/**
 * The opaque cursor of the page after thread `key`: base64url of the JSON
 * `["t2", <max start>, <latest trace id>]`. Keyset pagination on (latest start, latest trace id).
 */
export function encodeThreadCursor(key: ThreadKey): string {
  return Buffer.from(JSON.stringify([VERSION, key.maxStartTime, key.lastTraceId]), "utf8").toString(
    "base64url",
  );
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
    typeof parts[2] === "string" &&
    isUuid(parts[2])
  ) {
    return { maxStartTime: parts[1], lastTraceId: parts[2] };
  }
  throw new ConnectError(
    "cursor is not valid: send the next_cursor value of a previous response unchanged",
    Code.InvalidArgument,
  );
}
