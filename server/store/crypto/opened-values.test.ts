import { describe, expect, it } from "vitest";
import { createOpenedValues } from "./opened-values.js";

describe("createOpenedValues", () => {
  it("answers only for the same sealed text under the same JSON key", () => {
    const opened = createOpenedValues();
    opened.remember("ssn", "$sealed-1", '"123"');
    expect(opened.get("ssn", "$sealed-1")).toBe('"123"');
    expect(opened.get("messages", "$sealed-1")).toBeUndefined();
    expect(opened.get("ssn", "$sealed-2")).toBeUndefined();
  });

  it("keeps what is read again, lets go what is not, and keeps no value too large", () => {
    // Each entry is 3 + 1 + 1 = 5 characters; a generation turns over past 10.
    const opened = createOpenedValues({ maxChars: 20, maxSealedChars: 3 });
    for (const n of [1, 2, 3]) opened.remember("k", `$s${n}`, String(n));
    // $s1–$s3 are now the old generation. Reading $s1 brings it back into the young one.
    expect(opened.get("k", "$s1")).toBe("1");
    for (const n of [4, 5]) opened.remember("k", `$s${n}`, String(n));
    // The young generation ($s1, $s4, $s5) turned over: $s2 and $s3, never read again, are gone.
    expect([1, 2, 3, 4, 5].map((n) => opened.get("k", `$s${n}`))).toEqual([
      "1",
      undefined,
      undefined,
      "4",
      "5",
    ]);
    opened.remember("k", "$s66", "6");
    expect(opened.get("k", "$s66")).toBeUndefined();
  });
});
