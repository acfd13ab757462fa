/**
 * The ratio of two checkouts' results over the same rounds, for a report: the ratio of their best
 * rounds, then the median and the range of the per-round ratios (round i of one over round i of
 * the other, which ran beside each other). On a shared machine the median and range say how much a
 * ratio is noise: `0.97 (median 0.96, 0.90–1.02)`.
 */
export function roundRatios(ours: readonly number[], theirs: readonly number[]): string {
  const perRound = ours.map((v, i) => v / (theirs[i] ?? Number.NaN)).sort((x, y) => x - y);
  const middle = perRound.length / 2;
  const median =
    perRound.length % 2 === 1
      ? (perRound[Math.floor(middle)] ?? Number.NaN)
      : ((perRound[middle - 1] ?? Number.NaN) + (perRound[middle] ?? Number.NaN)) / 2;
  const best = Math.max(...ours) / Math.max(...theirs);
  return `${best.toFixed(2)} (median ${median.toFixed(2)}, ${perRound[0]?.toFixed(2)}–${perRound.at(-1)?.toFixed(2)})`;
}
