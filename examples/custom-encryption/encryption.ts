/**
 * agentplane's custom encryption example: every stored JSON value and checkpoint is sealed with
 * AES-256-GCM under a key of its tenant, derived (HKDF-SHA256) from one master key and the tenant id
 * the `context` handler takes from the signed-in user. Name it in the graphs file as
 * `"encryption": {"path": "./encryption.ts:encryption"}`.
 *
 * Handlers run synchronously inside agentplane's database driver, so key material is prepared when
 * the module loads (with a KMS, fetch or unwrap the data keys here with top-level await).
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";

/** The master key: 32 random bytes, base64 (openssl rand -base64 32). */
const master = Buffer.from(process.env.ENCRYPTION_MASTER_KEY ?? "", "base64");
if (master.length !== 32)
  throw new Error("set ENCRYPTION_MASTER_KEY to the base64 of 32 random bytes (openssl rand -base64 32)");

/**
 * Top-level keys left in the clear because something filters on them: `owner` (the custom auth
 * example's filter) and `graph_id` (thread search by graph). agentplane never hands the keys it
 * reads itself to the handlers.
 */
const PLAIN_KEYS = new Set(["owner", "graph_id"]);
/** AES-GCM's nonce and tag lengths. */
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** The encryption context the handlers receive; `metadata` is what `context` returned. */
interface Ctx {
  readonly metadata: Readonly<Record<string, unknown>>;
}

/** Derived keys by tenant, so HKDF runs once per tenant and process. */
const keys = new Map<string, Buffer>();
function keyOf(ctx: Ctx): Buffer {
  const tenant = typeof ctx.metadata.tenant_id === "string" ? ctx.metadata.tenant_id : "";
  let key = keys.get(tenant);
  if (!key) {
    key = Buffer.from(hkdfSync("sha256", master, Buffer.alloc(0), `agentplane tenant ${tenant}`, 32));
    keys.set(tenant, key);
  }
  return key;
}

function seal(key: Buffer, plain: Uint8Array): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  const body = Buffer.concat([cipher.update(plain), cipher.final()]);
  return Buffer.concat([iv, body, cipher.getAuthTag()]);
}

function open(key: Buffer, sealed: Uint8Array): Buffer {
  const bytes = Buffer.from(sealed);
  const decipher = createDecipheriv("aes-256-gcm", key, bytes.subarray(0, IV_BYTES));
  decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
  return Buffer.concat([
    decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)),
    decipher.final(),
  ]);
}

/** Maps each value of `data` except the plain keys (JSON handlers must keep the keys as they are). */
function mapValues(data: Record<string, unknown>, fn: (value: unknown) => unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(data)) out[key] = PLAIN_KEYS.has(key) ? value : fn(value);
  return out;
}

export const encryption = {
  encrypt: {
    json: (ctx: Ctx, data: Record<string, unknown>) =>
      mapValues(data, (value) => seal(keyOf(ctx), Buffer.from(JSON.stringify(value))).toString("base64")),
    blob: (ctx: Ctx, data: Uint8Array) => seal(keyOf(ctx), data),
  },
  decrypt: {
    json: (ctx: Ctx, data: Record<string, unknown>) =>
      mapValues(data, (value) =>
        JSON.parse(open(keyOf(ctx), Buffer.from(String(value), "base64")).toString()),
      ),
    blob: (ctx: Ctx, data: Uint8Array) => open(keyOf(ctx), data),
  },
  /** The tenant of the signed-in user (the custom auth example's JWT subject); may be async. */
  context: (user: { identity: string }) => ({ tenant_id: user.identity }),
};
