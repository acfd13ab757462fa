/** Nearest-rank percentile `p` (0–100) of ascending `sorted`; NaN when it is empty. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}
