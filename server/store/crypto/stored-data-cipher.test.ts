import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../config.js";
import { createOpenedValues } from "./opened-values.js";
import { createAesDataCipher, ENCRYPTED_PREFIX, parseAesSettings } from "./stored-data-cipher.js";

const key1 = randomBytes(32);
const key2 = randomBytes(32);
const cipher = createAesDataCipher({ keys: [key1], jsonKeys: ["ssn", "messages"] });

describe("parseAesSettings", () => {
  it("reads comma-separated hex and base64 keys and the allowlist", () => {
    const parsed = parseAesSettings(`${key1.toString("hex")}, ${key2.toString("base64")}`, " ssn ,messages,");
    expect(parsed.problems).toEqual([]);
    expect(parsed.settings?.keys.map((k) => Buffer.from(k).toString("hex"))).toEqual([
      key1.toString("hex"),
      key2.toString("hex"),
    ]);
    expect(parsed.settings?.jsonKeys).toEqual(["ssn", "messages"]);
  });

  it("names what to fix: a short key, an allowlist without a key, a reserved key name", () => {
    expect(parseAesSettings("abcd", undefined).problems).toEqual([
      expect.stringMatching(
        /^AGENTPLANE_AES_KEY entry 1 must be 64 hex digits or the base64 of 32 random bytes/,
      ),
    ]);
    expect(parseAesSettings(undefined, "ssn").problems).toEqual([
      expect.stringMatching(/^AGENTPLANE_AES_JSON_KEYS needs AGENTPLANE_AES_KEY/),
    ]);
    expect(parseAesSettings(key1.toString("hex"), "thread_id").problems).toEqual([
      expect.stringMatching(/may not name thread_id: agentplane reads it in stored JSON/),
    ]);
    expect(parseAesSettings(undefined, undefined)).toEqual({ settings: undefined, problems: [] });
  });
});

describe("createAesDataCipher", () => {
  it("seals allowlisted keys at any depth, keeps the shape, and opens them again", () => {
    const doc = {
      a: 1,
      ssn: "123-45",
      nested: [{ ssn: { deep: true } }],
      messages: [{ content: "hello-there" }],
    };
    const sealed = cipher.encryptJson(doc) as Record<string, unknown>;
    expect(Object.keys(sealed)).toEqual(Object.keys(doc));
    expect(sealed.a).toBe(1);
    expect(String(sealed.ssn)).toMatch(new RegExp(`^\\${ENCRYPTED_PREFIX}`));
    expect(JSON.stringify(sealed)).not.toContain("123-45");
    expect(JSON.stringify(sealed)).not.toContain("hello-there");
    expect(cipher.decryptJson(sealed)).toEqual(doc);
    // A random IV: the same value seals differently each time.
    expect((cipher.encryptJson(doc) as Record<string, unknown>).ssn).not.toBe(sealed.ssn);
  });

  it("opens a value read again to an equal copy of its own, which a caller may change", () => {
    const sealed = cipher.encryptJson({ messages: [{ content: "hi" }] });
    const first = cipher.decryptJson(sealed) as { messages: { content: string }[] };
    first.messages.push({ content: "changed by the first reader" });
    expect(cipher.decryptJson(sealed)).toEqual({ messages: [{ content: "hi" }] });
  });

  it("remembers the plaintext of what it seals, under its key only, so reading it back opens nothing", () => {
    const opened = createOpenedValues();
    const remembering = createAesDataCipher({ keys: [key1], jsonKeys: ["ssn"] }, opened);
    const sealed = remembering.encryptJson({ ssn: { n: 7 } }) as { ssn: string };
    expect(opened.get("ssn", sealed.ssn)).toBe('{"n":7}');
    expect(opened.get("messages", sealed.ssn)).toBeUndefined();
    expect(remembering.decryptJson(sealed)).toEqual({ ssn: { n: 7 } });
    // What it remembered is what opening the sealed text answers, for a process that did not seal it.
    const other = createAesDataCipher({ keys: [key1], jsonKeys: ["ssn"] });
    expect(other.decryptJson(sealed)).toEqual({ ssn: { n: 7 } });
  });

  it("treats a top-level array as rows: their own fields stay, what lies below is sealed", () => {
    const rows = [{ ssn: "column, not data", value: { ssn: "data" } }];
    const sealed = cipher.encryptJson(rows) as Array<Record<string, { ssn: string }>>;
    expect(sealed[0]?.ssn).toBe("column, not data");
    expect(sealed[0]?.value?.ssn).toMatch(new RegExp(`^\\${ENCRYPTED_PREFIX}`));
    expect(cipher.decryptJson(sealed)).toEqual(rows);
  });

  it("authenticates: a sealed value moved to another key or altered does not open", () => {
    const sealed = cipher.encryptJson({ ssn: "x" }) as { ssn: string };
    // Opened once under its own key first: what the cipher remembers must not open it under another.
    expect(cipher.decryptJson(sealed)).toEqual({ ssn: "x" });
    expect(() => cipher.decryptJson({ messages: sealed.ssn })).toThrow();
    const altered = `${sealed.ssn.slice(0, -4)}AAAA`;
    expect(() => cipher.decryptJson({ ssn: altered })).toThrow();
  });

  it("rotates: a ring with a new first key opens the old key's values; the old key alone does not open the new", () => {
    const old = cipher.encryptJson({ ssn: "old" });
    const rotated = createAesDataCipher({ keys: [key2, key1], jsonKeys: ["ssn"] });
    expect(rotated.decryptJson(old)).toEqual({ ssn: "old" });
    const fresh = rotated.encryptJson({ ssn: "new" });
    expect(() => cipher.decryptJson(fresh)).toThrow(
      /key that is not in AGENTPLANE_AES_KEY \(key id [0-9a-f]{8}\)/,
    );
  });

  it("seals blobs whole and passes blobs stored before encryption through", () => {
    const bytes = Buffer.from('{"secret":"blob"}');
    const [type, sealed] = cipher.sealBlob("json", bytes);
    expect(type).toBe("aes:json");
    expect(Buffer.from(sealed).toString("latin1")).not.toContain("blob");
    expect(cipher.openBlob(type, sealed)).toEqual(["json", bytes]);
    expect(cipher.openBlob("json", bytes)).toEqual(["json", bytes]);
  });

  it("finds an allowlisted key anywhere in a filter, and JSON text round-trips", () => {
    expect(cipher.encryptedKeyIn({ a: 1, $or: [{ b: { ssn: 1 } }] })).toBe("ssn");
    expect(cipher.encryptedKeyIn({ a: { b: 1 } })).toBeUndefined();
    const text = cipher.encryptJsonText('{"ssn":"t","n":1}');
    expect(text).not.toContain('"t"');
    expect(JSON.parse(cipher.decryptJsonText(text))).toEqual({ ssn: "t", n: 1 });
    expect(cipher.decryptJsonText('{"n":1}')).toBe('{"n":1}');
    expect(cipher.encryptEmbeddedJson('GraphInterrupt: [{"value":{"ssn":"q"}}]')).not.toContain('"q"');
  });
});

describe("configuration", () => {
  it("loadConfig reads the keys and the allowlist, and stops start-up naming a bad key", () => {
    const config = loadConfig({
      AGENTPLANE_AES_KEY: key1.toString("base64"),
      AGENTPLANE_AES_JSON_KEYS: "ssn",
    });
    expect(config.aes?.jsonKeys).toEqual(["ssn"]);
    expect(loadConfig({}).aes).toBeUndefined();
    expect(() => loadConfig({ AGENTPLANE_AES_KEY: `${key1.toString("hex")},nope` })).toThrow(
      /AGENTPLANE_AES_KEY entry 2 must be 64 hex digits/,
    );
  });
});
