/**
 * How long a resolved API key is used without asking Postgres again. Changes reach every process at
 * once by NOTIFY (server/store/iam/identity-changes.ts); this bounds what a process can miss while its
 * listening connection is down and being re-established.
 */
const IDENTITY_TTL_MS = 5_000;
/** Keys kept at most: far more than one process sees in 5 s; beyond it, clearing costs one lookup per key. */
const MAX_IDENTITIES = 10_000;

/** What a lookup found: the value, and the time (epoch ms) after which it is no longer valid, if any. */
export interface CacheableIdentity<T> {
  value: T;
  /** When the credential itself expires; the entry never outlives it. */
  validUntil: number | null;
}

/** Resolved credentials by key, dropped after a short time or as soon as anything they depend on changes. */
export interface IdentityCache<T> {
  /**
   * The value kept for `key`, else the result of `load`, which is kept unless the cache was cleared
   * while it ran (its answer may predate the change). A failed or empty lookup is not kept.
   */
  resolve(key: string, load: () => Promise<CacheableIdentity<T>>): Promise<T>;
  /** Drops everything: called when an identity changed, here or in any other process. */
  clear(): void;
}

/** A new, empty {@link IdentityCache}; `now` is injectable for tests. */
export function createIdentityCache<T>(now: () => number = Date.now): IdentityCache<T> {
  const entries = new Map<string, { value: T; until: number }>();
  let generation = 0;
  return {
    async resolve(key, load) {
      const kept = entries.get(key);
      if (kept && kept.until > now()) return kept.value;
      const startedIn = generation;
      const found = await load();
      const until = Math.min(now() + IDENTITY_TTL_MS, found.validUntil ?? Number.POSITIVE_INFINITY);
      if (startedIn === generation && until > now()) {
        if (entries.size >= MAX_IDENTITIES) entries.clear();
        entries.set(key, { value: found.value, until });
      }
      return found.value;
    },
    clear() {
      generation += 1;
      entries.clear();
    },
  };
}
