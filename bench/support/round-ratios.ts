/**
 * The ratio of two checkouts' results over the same rounds, for a report: the ratio of their best
 * rounds, then the median and the range of the per-round ratios (round i of one over round i of
 * the other, which ran beside each other). On a shared machine the median and range say how much a
 * ratio is noise: `0.97 (median 0.96, 0.90–1.02)`.
 */
export function roundRatios(ours: readonly number[], theirs: readonly number[]): string {
  const perRound = ours.map((v, i) => v / (theirs[i] ?? Number.NaN));
  const best = Math.max(...ours) / Math.max(...theirs);
  return `${best.toFixed(2)} (median ${median(perRound).toFixed(2)}, ${Math.min(...perRound).toFixed(2)}–${Math.max(...perRound).toFixed(2)})`;
}

/** The median of `values` (NaN when there are none). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const middle = Math.floor(sorted.length / 2);
  if (sorted.length % 2 === 1) return sorted[middle] ?? Number.NaN;
  return ((sorted[middle - 1] ?? Number.NaN) + (sorted[middle] ?? Number.NaN)) / 2;
}
