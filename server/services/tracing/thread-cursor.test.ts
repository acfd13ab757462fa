import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { decodeThreadCursor, encodeThreadCursor } from "./thread-cursor.js";

/** A trace id, as a cursor's key holds. */
const TRACE_ID = "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";

describe("thread cursors", () => {
  it("round-trip the latest start and trace id of a thread", () => {
    const key = { maxStartTime: "2026-11-21T04:37:55.244001Z", lastTraceId: TRACE_ID };
    expect(decodeThreadCursor(encodeThreadCursor(key))).toEqual(key);
  });

  it("reject anything else with INVALID_ARGUMENT", () => {
    const bad = [
      "x",
      Buffer.from("[]").toString("base64url"),
      // A cursor of the earlier format, which held the thread id.
      Buffer.from(JSON.stringify(["t1", "2026-11-21T04:37:55.244001Z", "conv-1"])).toString("base64url"),
      Buffer.from(JSON.stringify(["t2", "2026-11-21T04:37:55Z", TRACE_ID])).toString("base64url"),
      Buffer.from(JSON.stringify(["t2", "2026-11-21T04:37:55.244001Z", "conv-1"])).toString("base64url"),
      Buffer.from(JSON.stringify(["t2", "2026-11-21T04:37:55.244001Z", 7])).toString("base64url"),
    ];
    for (const cursor of bad) {
      const error = (() => {
        try {
          decodeThreadCursor(cursor);
        } catch (e) {
          return ConnectError.from(e);
        }
        return undefined;
      })();
      expect(error?.code, cursor).toBe(Code.InvalidArgument);
      expect(error?.rawMessage).toBe(
        "cursor is not valid: send the next_cursor value of a previous response unchanged",
      );
    }
  });
});
