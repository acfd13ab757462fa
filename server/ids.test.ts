import { describe, expect, it } from "vitest";
import { isUuid, uuidv7 } from "./ids.js";

describe("uuidv7", () => {
  it("makes version-7, variant-1 UUIDs that carry the time", () => {
    const now = Date.UTC(2026, 10, 21, 5, 30);
    const id = uuidv7(now);
    expect(isUuid(id)).toBe(true);
    expect(id[14]).toBe("7");
    expect(["8", "9", "a", "b"]).toContain(id[19]);
    expect(Number.parseInt(id.replace(/-/g, "").slice(0, 12), 16)).toBe(now);
  });

  it("keeps ids made in the same millisecond in order", () => {
    const ids = Array.from({ length: 5000 }, () => uuidv7(1_900_000_000_000));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe("isUuid", () => {
  it("accepts the canonical form only", () => {
    expect(isUuid("6ba7b821-9dad-11d1-80b4-00c04fd430c8")).toBe(true);
    expect(isUuid("6BA7B821-9DAD-11D1-80B4-00C04FD430C8")).toBe(true);
    expect(isUuid("6ba7b8219dad11d180b400c04fd430c8")).toBe(false);
    expect(isUuid("not-a-uuid")).toBe(false);
  });
});
