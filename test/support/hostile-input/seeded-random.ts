/**
 * A small seeded pseudo-random generator (mulberry32), so a fuzz run sends the same requests every
 * time for the same seed and routes, and a failure can be reproduced.
 */
export interface SeededRandom {
  /** A float in [0, 1). */
  next(): number;
  /** One element of `items` (which must not be empty). */
  pick<T>(items: readonly T[]): T;
  /** Up to `count` distinct elements of `items`, in their original order. */
  sample<T>(items: readonly T[], count: number): T[];
}

/** Creates a generator from a 32-bit seed. */
export function seededRandom(seed: number): SeededRandom {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  return {
    next,
    pick: (items) => items[Math.floor(next() * items.length)]!,
    sample(items, count) {
      if (items.length <= count) return [...items];
      const chosen = new Set<number>();
      while (chosen.size < count) chosen.add(Math.floor(next() * items.length));
      return [...chosen].sort((a, b) => a - b).map((i) => items[i]!);
    },
  };
}
