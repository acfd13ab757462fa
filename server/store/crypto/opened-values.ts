/**
 * A bounded memory of the sealed JSON values a process opened or sealed (built-in encryption at
 * rest, stored-data-cipher.ts), least recently read first out. Opening one AES-GCM value costs Node
 * 10–20 µs, nearly all of it OpenSSL's per-call cipher set-up rather than the bytes, and the same
 * stored values are read again and again (a thread polled for its state, the first page of a
 * search), and a value just sealed is usually read back at once (the row a write returns). A
 * value read again costs a map lookup instead.
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

/** A remembered value: the JSON key it was sealed under, and its plaintext JSON. */
interface Opened {
  readonly key: string;
  readonly plain: string;
}

/**
 * An {@link OpenedValues} within `limits`, in two generations (no reordering on every read, which
 * in a Map of tens of thousands of entries costs more than the lookup): new and recently read
 * values go to the young one; when it holds half of `maxChars`, it becomes the old one and the
 * previous old one is dropped. A value read while old moves to the young one, so what is read
 * again within a generation stays.
 */
export function createOpenedValues(
  limits: OpenedValuesLimits = { maxChars: DEFAULT_MAX_CHARS, maxSealedChars: DEFAULT_MAX_SEALED_CHARS },
): OpenedValues {
  // Keyed by the sealed text alone (a string the driver just read, hashed once); the JSON key is
  // checked on the entry, so a value moved to another key is never answered.
  let young = new Map<string, Opened>();
  let old = new Map<string, Opened>();
  let youngChars = 0;
  const add = (sealed: string, opened: Opened) => {
    young.set(sealed, opened);
    youngChars += sealed.length + opened.key.length + opened.plain.length;
    if (youngChars > limits.maxChars / 2) {
      old = young;
      young = new Map();
      youngChars = 0;
    }
  };
  return {
    get(key, sealed) {
      let opened = young.get(sealed);
      if (opened === undefined) {
        opened = old.get(sealed);
        if (opened === undefined) return undefined;
        add(sealed, opened);
      }
      return opened.key === key ? opened.plain : undefined;
    },
    remember(key, sealed, plain) {
      if (sealed.length > limits.maxSealedChars) return;
      if (sealed.length + key.length + plain.length > limits.maxChars / 2 || young.has(sealed)) return;
      add(sealed, { key, plain });
    },
  };
}
