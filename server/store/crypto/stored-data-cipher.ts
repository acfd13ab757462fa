import type { AesSettings } from "../../settings/aes-settings.js";
import { createOpenedValues, type OpenedValues } from "./opened-values.js";
import { createSecretBox, type SecretBox, sealedKeyId } from "./secret-box.js";

export { type AesSettings, parseAesSettings, RESERVED_JSON_KEYS } from "../../settings/aes-settings.js";

/**
 * Built-in encryption at rest of agent data (`AGENTPLANE_AES_KEY`, `AGENTPLANE_AES_JSON_KEYS`).
 *
 * JSON documents (thread values, metadata, config, interrupts, errors, run input/config/kwargs,
 * cron payloads, assistants, store values, stream events) keep their shape: the value of every
 * allowlisted key, at any depth, is replaced by a string {@link ENCRYPTED_PREFIX}`<base64>` holding
 * the AES-256-GCM sealing of its JSON. Postgres still sees valid JSON, so per-key merges (`||`) work,
 * while filtering on such a key cannot (each sealing has a random IV). Checkpoint blobs and pending
 * writes are opaque bytes that nothing queries, so they are sealed whole (see {@link sealBlob}).
 */
export interface StoredDataCipher {
  /** The allowlisted JSON key names whose values are encrypted (none for custom encryption). */
  readonly jsonKeys: ReadonlySet<string>;
  /** Starts every sealed JSON value: JSON text without it holds nothing to decrypt. */
  readonly sealedPrefix: string;
  /**
   * A copy of `value` with every allowlisted key's value sealed. A top-level array is a batch of
   * rows (as the stores pass `jsonb_to_recordset` input): its elements' own fields are columns, not
   * data, so only what lies below them is encrypted.
   */
  encryptJson(value: unknown): unknown;
  /** A copy of `value` with every sealed value opened; `value` itself when nothing in it is sealed. */
  decryptJson(value: unknown): unknown;
  /** {@link encryptJson} on JSON text; the text itself when it names no allowlisted key. */
  encryptJsonText(text: string): string;
  /** `JSON.stringify(encryptJson(value))`, with one serialization when `value` names no allowlisted key. */
  stringifyEncrypted(value: unknown): string;
  /** {@link decryptJson} on JSON text; the text itself when nothing in it is sealed. */
  decryptJsonText(text: string): string;
  /**
   * Text that embeds a JSON document after a prefix (an error message such as `GraphInterrupt: [...]`)
   * with the document's allowlisted keys encrypted; other text as it is.
   */
  encryptEmbeddedJson(text: string): string;
  /** Seals a serialized checkpoint blob of serializer type `type`, marking the type as sealed. */
  sealBlob(type: string, bytes: Uint8Array): [string, Uint8Array];
  /** Opens what {@link sealBlob} made; a blob stored before encryption was on passes through. */
  openBlob(type: string, bytes: Uint8Array): [string, Uint8Array];
  /** The first allowlisted key named anywhere in a search filter, or undefined. */
  encryptedKeyIn(filter: unknown): string | undefined;
}

/** Starts every sealed JSON value; chosen so that no ordinary string looks like one by accident. */
export const ENCRYPTED_PREFIX = "$agentplane-aes:";
/** Marks the serializer type of a sealed checkpoint blob (`aes:json`, `aes:bytes`). */
const SEALED_BLOB_TYPE = "aes:";
/** Associated data of checkpoint blobs: a blob cannot be passed off as a JSON value or the reverse. */
const BLOB_CONTEXT = "agentplane checkpoint blob";
/** Associated data of a JSON value, bound to its key so sealed values cannot be moved between keys. */
const jsonContext = (key: string): string => `agentplane json ${key}`;

/**
 * The built-in {@link StoredDataCipher} on `settings`. `opened` remembers the plaintext of values
 * this process sealed or opened (see opened-values.ts); a test may hand in its own to look at it.
 */
export function createAesDataCipher(
  settings: AesSettings,
  opened: OpenedValues = createOpenedValues(),
): StoredDataCipher {
  const boxes = settings.keys.map((key) => createSecretBox(key));
  const current = boxes[0];
  if (current === undefined) throw new Error("encryption at rest needs at least one key");
  const jsonKeys: ReadonlySet<string> = new Set(settings.jsonKeys);

  const boxOf = (sealed: Uint8Array): SecretBox => {
    const id = sealedKeyId(sealed);
    const box = id && boxes.find((b) => b.keyId.equals(id));
    if (box) return box;
    throw new Error(
      id
        ? `stored data was encrypted with a key that is not in AGENTPLANE_AES_KEY (key id ${id.toString("hex")}): list the old key after the current one`
        : "stored data is not in agentplane's encrypted format",
    );
  };

  // A value this process seals is usually read back at once (the row a create returns, a run's
  // state read after its write): remembering its plaintext saves that read OpenSSL's set-up. The
  // writer had the plaintext, and a reader only meets the sealed text through a scoped query.
  const seal = (key: string, value: unknown): string => {
    const plain = JSON.stringify(value);
    const sealed =
      ENCRYPTED_PREFIX + current.sealBytes(Buffer.from(plain), jsonContext(key)).toString("base64");
    opened.remember(key, sealed, plain);
    return sealed;
  };
  const open = (key: string, text: string): unknown => {
    const known = opened.get(key, text);
    if (known !== undefined) return JSON.parse(known);
    const sealed = Buffer.from(text.slice(ENCRYPTED_PREFIX.length), "base64");
    const plain = boxOf(sealed).open(sealed, jsonContext(key));
    const value: unknown = JSON.parse(plain);
    opened.remember(key, text, plain);
    return value;
  };

  const encrypt = (value: unknown): unknown => {
    const plain = toJsonable(value);
    if (Array.isArray(plain)) return plain.map(encrypt);
    if (!isObject(plain)) return plain;
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(plain)) {
      if (inner === undefined) continue;
      out[key] = jsonKeys.has(key) ? seal(key, inner) : encrypt(inner);
    }
    return out;
  };
  const encryptBelow = (row: unknown): unknown => {
    const plain = toJsonable(row);
    if (!isObject(plain)) return encrypt(plain);
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(plain)) if (inner !== undefined) out[key] = encrypt(inner);
    return out;
  };
  const decrypt = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(decrypt);
    if (!isObject(value)) return value;
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) {
      out[key] =
        typeof inner === "string" && inner.startsWith(ENCRYPTED_PREFIX) ? open(key, inner) : decrypt(inner);
    }
    return out;
  };
  const encryptJson = (value: unknown): unknown =>
    jsonKeys.size === 0 ? value : Array.isArray(value) ? value.map(encryptBelow) : encrypt(value);
  const decryptJson = (value: unknown): unknown => decrypt(value);
  // A key as it appears in JSON text: text without any of these has nothing to encrypt, which a
  // substring scan tells far cheaper than a walk (most documents, e.g. most stream events).
  const quotedKeys = [...jsonKeys].map((key) => JSON.stringify(key));
  const mentionsKey = (text: string): boolean => quotedKeys.some((quoted) => text.includes(quoted));

  return {
    jsonKeys,
    sealedPrefix: ENCRYPTED_PREFIX,
    encryptJson,
    decryptJson,
    encryptJsonText: (text) => (mentionsKey(text) ? JSON.stringify(encryptJson(JSON.parse(text))) : text),
    stringifyEncrypted(value) {
      const text = JSON.stringify(value);
      return text !== undefined && mentionsKey(text) ? JSON.stringify(encryptJson(value)) : text;
    },
    decryptJsonText: (text) =>
      text.includes(ENCRYPTED_PREFIX) ? JSON.stringify(decrypt(JSON.parse(text))) : text,
    encryptEmbeddedJson(text) {
      const start = text.search(/[[{]/);
      if (jsonKeys.size === 0 || start < 0) return text;
      try {
        return text.slice(0, start) + JSON.stringify(encrypt(JSON.parse(text.slice(start))), null, 2);
      } catch {
        return text;
      }
    },
    sealBlob: (type, bytes) => [SEALED_BLOB_TYPE + type, current.sealBytes(bytes, BLOB_CONTEXT)],
    openBlob(type, bytes) {
      if (!type.startsWith(SEALED_BLOB_TYPE)) return [type, bytes];
      return [type.slice(SEALED_BLOB_TYPE.length), boxOf(bytes).openBytes(bytes, BLOB_CONTEXT)];
    },
    encryptedKeyIn: (filter) => firstKeyIn(filter, jsonKeys),
  };
}

/** A non-array, non-null object. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** What JSON.stringify would write for `value` at the top (Dates and other `toJSON` objects). */
export function toJsonable(value: unknown): unknown {
  if (isObject(value) && typeof value.toJSON === "function") return (value.toJSON as () => unknown)();
  return value;
}

/** The first key of `keys` at any depth of `value`. */
function firstKeyIn(value: unknown, keys: ReadonlySet<string>): string | undefined {
  if (Array.isArray(value)) {
    for (const inner of value) {
      const found = firstKeyIn(inner, keys);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (!isObject(value)) return undefined;
  for (const [key, inner] of Object.entries(value)) {
    if (keys.has(key)) return key;
    const found = firstKeyIn(inner, keys);
    if (found !== undefined) return found;
  }
  return undefined;
}
