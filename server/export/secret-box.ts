import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { link, readFile, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";

/** Seals and opens small secrets (destination credentials) with AES-256-GCM. */
export interface SecretBox {
  /** Encrypts `plaintext`, bound to `context` (it must be given again to open it). */
  seal(plaintext: string, context: string): Uint8Array;
  /** Decrypts what {@link seal} made with the same key and context; throws otherwise. */
  open(sealed: Uint8Array, context: string): string;
}

/** Format byte of a sealed value, so the format can change without guessing. */
const VERSION = 1;
/** GCM's recommended nonce length. */
const IV_BYTES = 12;
/** GCM's full tag length. */
const TAG_BYTES = 16;
/** Bytes of the key fingerprint stored in each sealed value, to tell "wrong key" from "corrupt". */
const KEY_ID_BYTES = 4;
/** AES-256. */
export const SECRET_KEY_BYTES = 32;
/** Where the generated key is kept inside the data directory. */
const KEY_FILE = "secret-key";

/** The 32-byte key of `text`: 64 hexadecimal digits or the base64 of 32 bytes; undefined otherwise. */
export function parseSecretKey(text: string): Buffer | undefined {
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, "hex");
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(text)) {
    const key = Buffer.from(text, "base64");
    if (key.length === SECRET_KEY_BYTES) return key;
  }
  return undefined;
}

/**
 * The key of the process: `configured` (AGENTPLANE_SECRET_KEY, already validated) when set, else the
 * one kept in `<dataDir>/secret-key`, generated there (mode 0600) on first use. Every process that
 * shares a database must use the same key: set AGENTPLANE_SECRET_KEY or share the data directory.
 */
export async function loadSecretKey(configured: string | undefined, dataDir: string): Promise<Buffer> {
  if (configured !== undefined) {
    const key = parseSecretKey(configured);
    if (!key) throw new Error("AGENTPLANE_SECRET_KEY must be 64 hex digits or the base64 of 32 bytes");
    return key;
  }
  const path = join(dataDir, KEY_FILE);
  try {
    const key = parseSecretKey((await readFile(path, "utf8")).trim());
    if (!key) throw new Error(`${path} does not hold a 32-byte key (64 hex digits)`);
    return key;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const key = randomBytes(SECRET_KEY_BYTES);
  // Written whole under a name of its own, then linked into place: link fails when the file exists,
  // so of two processes starting together one key wins and the other never reads a half-written file.
  const draft = `${path}.${randomBytes(8).toString("hex")}`;
  await writeFile(draft, `${key.toString("hex")}\n`, { mode: 0o600, flag: "wx" });
  try {
    await link(draft, path);
    return key;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    return loadSecretKey(undefined, dataDir);
  } finally {
    await unlink(draft);
  }
}

/** A {@link SecretBox} on a 32-byte key. */
export function createSecretBox(key: Uint8Array): SecretBox {
  if (key.length !== SECRET_KEY_BYTES) throw new Error(`a secret key has ${SECRET_KEY_BYTES} bytes`);
  const keyId = createHash("sha256").update(key).digest().subarray(0, KEY_ID_BYTES);
  return {
    seal(plaintext, context) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      cipher.setAAD(Buffer.from(context));
      const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
      return Buffer.concat([Buffer.from([VERSION]), keyId, iv, cipher.getAuthTag(), body]);
    },
    open(sealed, context) {
      const bytes = Buffer.from(sealed);
      const header = 1 + KEY_ID_BYTES + IV_BYTES + TAG_BYTES;
      if (bytes.length < header || bytes[0] !== VERSION)
        throw new Error("sealed secret has an unknown format");
      if (!bytes.subarray(1, 1 + KEY_ID_BYTES).equals(keyId)) {
        throw new Error(
          "sealed secret was encrypted with another key: every process must use the same AGENTPLANE_SECRET_KEY",
        );
      }
      const ivAt = 1 + KEY_ID_BYTES;
      const decipher = createDecipheriv("aes-256-gcm", key, bytes.subarray(ivAt, ivAt + IV_BYTES));
      decipher.setAAD(Buffer.from(context));
      decipher.setAuthTag(bytes.subarray(ivAt + IV_BYTES, header));
      return Buffer.concat([decipher.update(bytes.subarray(header)), decipher.final()]).toString("utf8");
    },
  };
}
