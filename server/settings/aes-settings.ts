/**
 * The settings of encryption at rest as the environment states them, parsed for config.ts: a leaf,
 * so config.ts and the store that encrypts with them both import it.
 */

/** AES-256. */
export const SECRET_KEY_BYTES = 32;
/** Settings of the built-in cipher, as config parses them. */
export interface AesSettings {
  /** 32-byte keys: the first encrypts, every one decrypts (rotation). */
  readonly keys: readonly Uint8Array[];
  /** JSON key names whose values are encrypted. */
  readonly jsonKeys: readonly string[];
}

/**
 * Keys agentplane itself reads inside stored JSON with SQL (the run's webhook in its kwargs, the run
 * and thread ids in checkpoint and thread metadata): encrypting them would break those reads.
 */
export const RESERVED_JSON_KEYS = ["webhook", "run_id", "thread_id", "checkpoint_id", "checkpoint_ns"];

/** Longest allowlist entry: a JSON key name, not a document. */
const MAX_JSON_KEY_LENGTH = 256;

/**
 * Parses `AGENTPLANE_AES_KEY` (comma-separated keys, each 64 hex digits or base64 of 32 bytes) and
 * `AGENTPLANE_AES_JSON_KEYS` (comma-separated key names). Returns the settings, undefined when both
 * are unset, and a list of what to fix otherwise.
 */
export function parseAesSettings(
  keyText: string | undefined,
  jsonKeysText: string | undefined,
): { settings: AesSettings | undefined; problems: string[] } {
  const problems: string[] = [];
  if (keyText === undefined) {
    if (jsonKeysText !== undefined)
      problems.push("AGENTPLANE_AES_JSON_KEYS needs AGENTPLANE_AES_KEY: set a key (openssl rand -base64 32)");
    return { settings: undefined, problems };
  }
  const keys: Uint8Array[] = [];
  keyText.split(",").forEach((entry, index) => {
    const key = parseSecretKey(entry.trim());
    if (key) keys.push(key);
    else
      problems.push(
        `AGENTPLANE_AES_KEY entry ${index + 1} must be 64 hex digits or the base64 of 32 random bytes (AES-256; openssl rand -base64 32)`,
      );
  });
  const jsonKeys = (jsonKeysText ?? "")
    .split(",")
    .map((k) => k.trim())
    .filter((k) => k !== "");
  for (const key of jsonKeys) {
    if (key.length > MAX_JSON_KEY_LENGTH)
      problems.push(
        `AGENTPLANE_AES_JSON_KEYS entry ${key.slice(0, 20)}… is longer than ${MAX_JSON_KEY_LENGTH}`,
      );
    if (RESERVED_JSON_KEYS.includes(key))
      problems.push(
        `AGENTPLANE_AES_JSON_KEYS may not name ${key}: agentplane reads it in stored JSON (reserved: ${RESERVED_JSON_KEYS.join(", ")})`,
      );
  }
  return { settings: problems.length === 0 ? { keys, jsonKeys } : undefined, problems };
}

/** The 32-byte key of `text`: 64 hexadecimal digits or the base64 of 32 bytes; undefined otherwise. */
export function parseSecretKey(text: string): Buffer | undefined {
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, "hex");
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(text)) {
    const key = Buffer.from(text, "base64");
    if (key.length === SECRET_KEY_BYTES) return key;
  }
  return undefined;
}
