import { randomBytes } from "node:crypto";

/** Matches a UUID in its canonical 8-4-4-4-12 hexadecimal form, any version. */
const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True when `value` is a canonical UUID string. */
export function isUuid(value: string): boolean {
  return UUID_PATTERN.test(value);
}

let lastMs = 0;
let sequence = 0;

/**
 * A UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then a 12-bit counter that keeps ids made in
 * the same millisecond by this process in order, then random bits. Ids sort by creation time, which
 * keeps B-tree inserts at the right edge of the index.
 */
export function uuidv7(now: number = Date.now()): string {
  if (now <= lastMs) {
    sequence += 1;
    // 12-bit counter exhausted within one millisecond: borrow the next millisecond.
    if (sequence > 0xfff) {
      lastMs += 1;
      sequence = 0;
    }
  } else {
    lastMs = now;
    sequence = 0;
  }
  const bytes = randomBytes(16);
  let ms = lastMs;
  for (let i = 5; i >= 0; i--) {
    bytes[i] = ms % 256;
    ms = Math.floor(ms / 256);
  }
  bytes[6] = 0x70 | (sequence >> 8);
  bytes[7] = sequence & 0xff;
  bytes[8] = 0x80 | ((bytes[8] ?? 0) & 0x3f);
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
