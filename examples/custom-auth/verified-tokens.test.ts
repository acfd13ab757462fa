import { describe, expect, it } from "vitest";
import { signHs256 } from "./hs256-jwt.js";
import { createVerifiedTokens } from "./verified-tokens.js";

const SECRET = "verified-tokens-test-secret-0123456789";
const NOW_MS = Date.UTC(2026, 0, 1);
const nowS = NOW_MS / 1000;

describe("createVerifiedTokens", () => {
  it("accepts a good token again from memory, and refuses it once it expires", () => {
    const verify = createVerifiedTokens();
    const token = signHs256({ sub: "alice", exp: nowS + 60 }, SECRET);
    const first = verify(token, SECRET, NOW_MS);
    expect(first?.sub).toBe("alice");
    expect(verify(token, SECRET, NOW_MS + 1_000)).toBe(first);
    expect(verify(token, SECRET, NOW_MS + 60_000)).toBeUndefined();
  });

  it("never answers from memory for another secret, nor for a tampered or unsigned token", () => {
    const verify = createVerifiedTokens();
    const token = signHs256({ sub: "alice", exp: nowS + 60 }, SECRET);
    expect(verify(token, SECRET, NOW_MS)?.sub).toBe("alice");
    expect(verify(token, `${SECRET}-other`, NOW_MS)).toBeUndefined();
    const [header, , signature] = token.split(".");
    const forged = `${header}.${Buffer.from(JSON.stringify({ sub: "mallory", exp: nowS + 60 })).toString("base64url")}.${signature}`;
    expect(verify(forged, SECRET, NOW_MS)).toBeUndefined();
  });

  it("keeps at most its limit, dropping the oldest, and hands out claims nobody can change", () => {
    const verify = createVerifiedTokens(2);
    const tokens = ["a", "b", "c"].map((sub) => signHs256({ sub, exp: nowS + 60 }, SECRET));
    const claims = tokens.map((t) => verify(t, SECRET, NOW_MS));
    expect(claims.map((c) => c?.sub)).toEqual(["a", "b", "c"]);
    // "a" was dropped: verified afresh, a new object; "c" is still remembered.
    expect(verify(tokens[0] as string, SECRET, NOW_MS)).not.toBe(claims[0]);
    expect(verify(tokens[2] as string, SECRET, NOW_MS)).toBe(claims[2]);
    expect(Object.isFrozen(claims[2])).toBe(true);
  });
});
