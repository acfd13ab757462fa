import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { generateApiKey, hashApiKey, shortApiKey } from "./api-key-secret.js";

describe("API key secrets", () => {
  it("generates prefixed, unguessable keys", () => {
    const personal = generateApiKey("personal");
    const service = generateApiKey("service");
    expect(personal).toMatch(/^ap_pt_[A-Za-z0-9_-]{43}$/);
    expect(service).toMatch(/^ap_sk_[A-Za-z0-9_-]{43}$/);
    expect(generateApiKey("service")).not.toBe(service);
  });

  it("hashes with SHA-256", () => {
    const key = generateApiKey("service");
    expect(hashApiKey(key).equals(createHash("sha256").update(key).digest())).toBe(true);
  });

  it("redacts to the prefix and the last four characters", () => {
    expect(shortApiKey("ap_sk_abcdefghijklmnopqrstuvwxyz")).toBe("ap_sk_...wxyz");
    expect(shortApiKey("custom-preseeded-key-1234")).toBe("...1234");
  });
});
