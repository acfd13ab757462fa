/** `cells` as one table row joined by two spaces: the first left-aligned, the rest right-aligned, to `widths`. */
export function tableRow(cells: string[], widths: number[]): string {
  return cells.map((c, i) => (i === 0 ? c.padEnd(widths[0] ?? 0) : c.padStart(widths[i] ?? 0))).join("  ");
}
