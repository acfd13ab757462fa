import { Code, ConnectError } from "@connectrpc/connect";
import { isUuid } from "../../ids.js";
import type { RunKey } from "../../store/tracing/run-query-store.js";

/** Version tag of the cursor format, so a future format can reject old cursors clearly. */
const VERSION = "r1";
/** The start time as the store writes it: ISO 8601 UTC with six fractional digits. */
const ISO_MICROS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

/**
 * The opaque cursor of the page after the run `key`: base64url of `r1|<start_time>|<id>`. Keyset
 * pagination on (start_time, id) is stable while runs are added, unlike offsets.
 */
export function encodeRunCursor(key: RunKey): string {
  return Buffer.from(`${VERSION}|${key.startTime}|${key.id}`, "utf8").toString("base64url");
}

/** The run key of a cursor from {@link encodeRunCursor}; INVALID_ARGUMENT for anything else. */
export function decodeRunCursor(cursor: string): RunKey {
  const parts = Buffer.from(cursor, "base64url").toString("utf8").split("|");
  const [version, startTime, id] = parts;
  if (
    parts.length !== 3 ||
    version !== VERSION ||
    !ISO_MICROS.test(startTime ?? "") ||
    Number.isNaN(Date.parse(startTime ?? "")) ||
    !isUuid(id ?? "")
  ) {
    throw new ConnectError(
      "cursor is not valid: send the cursors.next value of a previous response unchanged",
      Code.InvalidArgument,
    );
  }
  return { startTime: startTime!, id: id! };
}
