/**
 * A bounded memory of the sealed JSON values a process opened (built-in encryption at rest,
 * stored-data-cipher.ts), least recently used first out. Opening one AES-GCM value costs Node
 * 10–20 µs, nearly all of it OpenSSL's per-call cipher set-up rather than the bytes, and the same
 * stored values are read again and again (a thread polled for its state, the first page of a
 * search). A value read again costs a map lookup instead.
 *
 * What it keeps is keyed by the exact sealed text and the JSON key it was sealed under (its
 * associated data), so a lookup answers only what opening that very text would answer. Each
 * sealing has a random IV, so every stored write is an entry of its own and nothing is ever stale.
 * It decides nothing about access: a caller only holds a sealed text when a query scoped by its
 * workspace and its auth filter returned it from Postgres. Plaintext stays in the process's memory
 * no longer than {@link OpenedValuesLimits.maxChars} worth of newer reads; nothing is written out.
 */
export interface OpenedValues {
  /** The plaintext JSON of `sealed` under JSON key `key`, when this process opened it recently. */
  get(key: string, sealed: string): string | undefined;
  /** Remembers that `sealed` under `key` opened to `plain` (values too large to keep are not). */
  remember(key: string, sealed: string, plain: string): void;
}

/** Bounds of {@link createOpenedValues}. */
export interface OpenedValuesLimits {
  /** Characters of sealed and plain text kept in all, beyond which the least recently read go. */
  readonly maxChars: number;
  /** Longest sealed text kept: past a few KiB the bytes, not the set-up, dominate its cost. */
  readonly maxSealedChars: number;
}

/**
 * 4 Mi characters (8 MiB of UTF-16) in all: some 30,000 small values (a sealed integer or short
 * string is ~80 characters of base64), a busy server's hot threads and items.
 */
const DEFAULT_MAX_CHARS = 4 * 1024 * 1024;
/** 4 KiB of sealed text: decrypting that many bytes costs about as much as the set-up saved. */
const DEFAULT_MAX_SEALED_CHARS = 4096;

/** An {@link OpenedValues} within `limits`. */
export function createOpenedValues(
  limits: OpenedValuesLimits = { maxChars: DEFAULT_MAX_CHARS, maxSealedChars: DEFAULT_MAX_SEALED_CHARS },
): OpenedValues {
  // A Map iterates in insertion order: re-inserting on every read keeps the least recent first.
  const entries = new Map<string, string>();
  let chars = 0;
  // A sealed text holds no NUL (a prefix, then base64): the last NUL splits the pair, unambiguously.
  const entryKey = (key: string, sealed: string) => `${key}\u0000${sealed}`;
  return {
    get(key, sealed) {
      const at = entryKey(key, sealed);
      const plain = entries.get(at);
      if (plain === undefined) return undefined;
      entries.delete(at);
      entries.set(at, plain);
      return plain;
    },
    remember(key, sealed, plain) {
      if (sealed.length > limits.maxSealedChars) return;
      const at = entryKey(key, sealed);
      const size = at.length + plain.length;
      if (size > limits.maxChars || entries.has(at)) return;
      entries.set(at, plain);
      chars += size;
      for (const [oldest, value] of entries) {
        if (chars <= limits.maxChars) break;
        entries.delete(oldest);
        chars -= oldest.length + value.length;
      }
    },
  };
}
