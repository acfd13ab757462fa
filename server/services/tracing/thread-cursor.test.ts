import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { decodeThreadCursor, encodeThreadCursor } from "./thread-cursor.js";

describe("thread cursors", () => {
  it("round-trip any thread id, quotes and separators included", () => {
    for (const threadId of ["conv-1", 'a"b|c', "", "ünïcode ✓"]) {
      const key = { maxStartTime: "2026-11-21T04:37:55.244001Z", threadId };
      expect(decodeThreadCursor(encodeThreadCursor(key))).toEqual(key);
    }
  });

  it("reject anything else with INVALID_ARGUMENT", () => {
    const bad = [
      "x",
      Buffer.from("[]").toString("base64url"),
      Buffer.from(JSON.stringify(["t2", "2026-11-21T04:37:55.244001Z", "a"])).toString("base64url"),
      Buffer.from(JSON.stringify(["t1", "2026-11-21T04:37:55Z", "a"])).toString("base64url"),
      Buffer.from(JSON.stringify(["t1", "2026-11-21T04:37:55.244001Z", 7])).toString("base64url"),
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
