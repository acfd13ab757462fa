import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createSecretBox, loadSecretKey, parseSecretKey } from "./secret-box.js";

describe("secret box", () => {
  const box = createSecretBox(randomBytes(32));

  it("opens what it sealed, in the same context only", () => {
    const sealed = box.seal('{"secret":"s3cr3t"}', "ctx-a");
    expect(Buffer.from(sealed).toString("utf8")).not.toContain("s3cr3t");
    expect(box.open(sealed, "ctx-a")).toBe('{"secret":"s3cr3t"}');
    expect(() => box.open(sealed, "ctx-b")).toThrow();
  });

  it("seals the same text differently every time, and refuses a tampered value", () => {
    const a = Buffer.from(box.seal("x", "c"));
    expect(a.equals(Buffer.from(box.seal("x", "c")))).toBe(false);
    a[a.length - 1] = (a[a.length - 1] ?? 0) ^ 1;
    expect(() => box.open(a, "c")).toThrow();
  });

  it("gives every sealing an IV of its own, across many batches of random bytes", () => {
    // A sealed value is version (1), key id (4), then the 12-byte IV.
    const ivs = new Set<string>();
    for (let i = 0; i < 2000; i++) ivs.add(Buffer.from(box.seal("x", "c")).subarray(5, 17).toString("hex"));
    expect(ivs.size).toBe(2000);
  });

  it("says so when another key sealed it", () => {
    const other = createSecretBox(randomBytes(32));
    expect(() => other.open(box.seal("x", "c"), "c")).toThrow("encrypted with another key");
  });

  it("reads 64 hex digits or base64 of 32 bytes, nothing else", () => {
    const key = randomBytes(32);
    expect(parseSecretKey(key.toString("hex"))?.equals(key)).toBe(true);
    expect(parseSecretKey(key.toString("base64"))?.equals(key)).toBe(true);
    expect(parseSecretKey("short")).toBeUndefined();
  });

  it("generates a key into the data directory once, readable only by its owner", async () => {
    const dir = await mkdtemp(join(tmpdir(), "agentplane-key-"));
    try {
      const [a, b] = await Promise.all([loadSecretKey(undefined, dir), loadSecretKey(undefined, dir)]);
      expect(a.equals(b)).toBe(true);
      expect((await loadSecretKey(undefined, dir)).equals(a)).toBe(true);
      expect((await readFile(join(dir, "secret-key"), "utf8")).trim()).toBe(a.toString("hex"));
      expect((await stat(join(dir, "secret-key"))).mode & 0o777).toBe(0o600);
      const configured = randomBytes(32);
      expect((await loadSecretKey(configured.toString("hex"), dir)).equals(configured)).toBe(true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
