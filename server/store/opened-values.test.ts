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

  it("lets the least recently read go past its size, and keeps no value too large", () => {
    // Each entry is 2 + 1 + 3 + 1 = 7 characters: three fit in 21.
    const opened = createOpenedValues({ maxChars: 21, maxSealedChars: 3 });
    opened.remember("k", "$s1", "1");
    opened.remember("k", "$s2", "2");
    opened.remember("k", "$s3", "3");
    expect(opened.get("k", "$s1")).toBe("1");
    opened.remember("k", "$s4", "4");
    expect(opened.get("k", "$s2")).toBeUndefined();
    expect([opened.get("k", "$s1"), opened.get("k", "$s3"), opened.get("k", "$s4")]).toEqual(["1", "3", "4"]);
    opened.remember("k", "$s55", "5");
    expect(opened.get("k", "$s55")).toBeUndefined();
  });
});
