import { createHash, randomBytes } from "node:crypto";
import type { ApiKeyKind } from "../../store/iam/api-key-store.js";

/** Key prefixes: recognisable in logs and by secret scanners, and telling the kind at a glance. */
const PREFIX: Record<ApiKeyKind, string> = { personal: "ap_pt_", service: "ap_sk_" };

/** 32 random bytes: 256 bits, beyond any guessing. */
const SECRET_BYTES = 32;

/** Characters of the key shown after the prefix in `short_key`: enough to tell keys apart, too few to guess. */
const SHORT_KEY_TAIL = 4;

/** A new random key of the given kind, such as `ap_sk_` followed by 43 base64url characters. */
export function generateApiKey(kind: ApiKeyKind): string {
  return PREFIX[kind] + randomBytes(SECRET_BYTES).toString("base64url");
}

/** The SHA-256 digest stored instead of the key. */
export function hashApiKey(key: string): Buffer {
  return createHash("sha256").update(key, "utf8").digest();
}

/** The redacted form shown in lists and usage: the prefix (when recognised), `...`, the last four characters. */
export function shortApiKey(key: string): string {
  const prefix = Object.values(PREFIX).find((p) => key.startsWith(p)) ?? "";
  return `${prefix}...${key.slice(-SHORT_KEY_TAIL)}`;
}
