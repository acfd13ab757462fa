/**
 * A small deterministic pseudo-random generator for generative tests: the same seed gives the same
 * sequence on every machine, so a failing case is reproduced from the seed a test prints.
 */

/** Draws from one seeded sequence. */
export interface Random {
  /** The seed the sequence started from. */
  readonly seed: number;
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [min, max] (both included). */
  int(min: number, max: number): number;
  /** True with probability `p`. */
  chance(p: number): boolean;
  /** One item of a non-empty list. */
  pick<T>(items: readonly T[]): T;
  /** Up to `max` distinct items of `items`, in random order (possibly none). */
  some<T>(items: readonly T[], max: number): T[];
  /** A random version 4 UUID drawn from the sequence. */
  uuid(): string;
}

/** 2^32, to turn a 32-bit state into a float in [0, 1). */
const UINT32_RANGE = 0x1_0000_0000;

/**
 * A generator seeded with `seed` (any integer): mulberry32, 32 bits of state, fast and well mixed
 * enough to pick test cases; not for anything secret.
 */
export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / UINT32_RANGE;
  };
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  const pick = <T>(items: readonly T[]): T => {
    if (items.length === 0) throw new Error("pick from an empty list");
    return items[int(0, items.length - 1)] as T;
  };
  return {
    seed,
    next,
    int,
    chance: (p) => next() < p,
    pick,
    some: (items, max) => {
      const pool = [...items];
      const out: (typeof items)[number][] = [];
      for (let n = int(0, Math.min(max, pool.length)); n > 0; n--)
        out.push(pool.splice(int(0, pool.length - 1), 1)[0]!);
      return out;
    },
    uuid: () => {
      const hex = Array.from({ length: 32 }, () => int(0, 15).toString(16));
      hex[12] = "4";
      hex[16] = ((int(0, 15) & 0x3) | 0x8).toString(16);
      const h = hex.join("");
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
    },
  };
}

/** A fresh seed for a run that was not given one: different on every run, printed on failure. */
export function freshSeed(): number {
  return Math.floor(Math.random() * UINT32_RANGE);
}
