import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { link, readFile, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parseSecretKey, SECRET_KEY_BYTES } from "../../settings/aes-settings.js";

export { parseSecretKey, SECRET_KEY_BYTES } from "../../settings/aes-settings.js";

/**
 * Seals and opens secrets with AES-256-GCM (random IV, authenticated): destination credentials, and
 * the stored agent data of encryption at rest. A sealed value starts with a format byte and the
 * fingerprint of its key ({@link sealedKeyId}), so a key ring can tell which key opens it.
 */
export interface SecretBox {
  /** Fingerprint of this box's key, as every sealed value carries it. */
  readonly keyId: Buffer;
  /** Encrypts `plaintext`, bound to `context` (it must be given again to open it). */
  seal(plaintext: string, context: string): Uint8Array;
  /** Decrypts what {@link seal} made with the same key and context; throws otherwise. */
  open(sealed: Uint8Array, context: string): string;
  /** {@link seal} for bytes. */
  sealBytes(plaintext: Uint8Array, context: string): Buffer;
  /** {@link open} for what {@link sealBytes} made. */
  openBytes(sealed: Uint8Array, context: string): Buffer;
}

/** Format byte of a sealed value, so the format can change without guessing. */
const VERSION = 1;
/** GCM's recommended nonce length. */
const IV_BYTES = 12;
/** GCM's full tag length. */
const TAG_BYTES = 16;
/** Bytes of the key fingerprint stored in each sealed value, to tell "wrong key" from "corrupt". */
const KEY_ID_BYTES = 4;
/** Where the generated key is kept inside the data directory. */
const KEY_FILE = "secret-key";

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

/** The key fingerprint a sealed value carries; undefined when it is not a sealed value of this format. */
export function sealedKeyId(sealed: Uint8Array): Buffer | undefined {
  if (sealed.length < 1 + KEY_ID_BYTES + IV_BYTES + TAG_BYTES || sealed[0] !== VERSION) return undefined;
  return Buffer.from(sealed.subarray(1, 1 + KEY_ID_BYTES));
}

/**
 * IVs drawn from the CSPRNG in one call: a call costs more than sealing a small value (it was the
 * largest part of encrypting a store item), and 256 IVs are 3 KiB.
 */
const IV_BATCH = 256;
/** Random bytes not yet handed out as IVs; replaced, never rewritten, so handed-out IVs stay put. */
let ivPool = Buffer.alloc(0);
let ivPoolAt = 0;

/** A fresh random IV: each one a different slice of CSPRNG output, never handed out twice. */
function nextIv(): Buffer {
  if (ivPoolAt + IV_BYTES > ivPool.length) {
    ivPool = randomBytes(IV_BYTES * IV_BATCH);
    ivPoolAt = 0;
  }
  const iv = ivPool.subarray(ivPoolAt, ivPoolAt + IV_BYTES);
  ivPoolAt += IV_BYTES;
  return iv;
}

/** A {@link SecretBox} on a 32-byte key. */
export function createSecretBox(key: Uint8Array): SecretBox {
  if (key.length !== SECRET_KEY_BYTES) throw new Error(`a secret key has ${SECRET_KEY_BYTES} bytes`);
  const keyId = createHash("sha256").update(key).digest().subarray(0, KEY_ID_BYTES);
  const sealBytes = (plaintext: Uint8Array, context: string): Buffer => {
    const iv = nextIv();
    const cipher = createCipheriv("aes-256-gcm", key, iv);
    cipher.setAAD(Buffer.from(context));
    const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    return Buffer.concat([Buffer.from([VERSION]), keyId, iv, cipher.getAuthTag(), body]);
  };
  const openBytes = (sealed: Uint8Array, context: string): Buffer => {
    const bytes = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength);
    const header = 1 + KEY_ID_BYTES + IV_BYTES + TAG_BYTES;
    if (bytes.length < header || bytes[0] !== VERSION) throw new Error("sealed secret has an unknown format");
    if (!bytes.subarray(1, 1 + KEY_ID_BYTES).equals(keyId)) {
      throw new Error(
        "sealed secret was encrypted with another key: every process must use the same AGENTPLANE_SECRET_KEY",
      );
    }
    const ivAt = 1 + KEY_ID_BYTES;
    const decipher = createDecipheriv("aes-256-gcm", key, bytes.subarray(ivAt, ivAt + IV_BYTES));
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(bytes.subarray(ivAt + IV_BYTES, header));
    const body = decipher.update(bytes.subarray(header));
    // GCM holds nothing back, so final() only checks the tag (and returns no bytes to join).
    const rest = decipher.final();
    return rest.length === 0 ? body : Buffer.concat([body, rest]);
  };
  return {
    keyId,
    seal: (plaintext, context) => sealBytes(Buffer.from(plaintext, "utf8"), context),
    open: (sealed, context) => openBytes(sealed, context).toString("utf8"),
    sealBytes,
    openBytes,
  };
}
