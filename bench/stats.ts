// Percentiles and the printed table.

export function percentile(samples: number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index];
}

export const round = (n: number, digits = 2): number => (Number.isFinite(n) ? Number(n.toFixed(digits)) : n);

/** Renders rows as a fixed-width text table. */
/**
 * The same table in Markdown, for docs/PERFORMANCE.md.
 * @example
 * markdownTable(["impl", "p50"], [["floor", 1.2]]); // "| impl | p50 |\n|---|---|\n| floor | 1.2 |"
 */
export function markdownTable(header: string[], rows: (string | number)[][]): string {
  const line = (row: (string | number)[]) =>
    `| ${row.map((cell) => (typeof cell === "number" ? String(round(cell)) : (cell ?? ""))).join(" | ")} |`;
  return [line(header), `|${header.map(() => "---").join("|")}|`, ...rows.map(line)].join("\n");
}

export function table(header: string[], rows: (string | number)[][]): string {
  const cells = [
    header,
    ...rows.map((row) => row.map((cell) => (typeof cell === "number" ? String(round(cell)) : cell))),
  ];
  const widths = header.map((_, i) => Math.max(...cells.map((row) => String(row[i] ?? "").length)));
  const line = (row: (string | number)[]) => row.map((cell, i) => String(cell ?? "").padEnd(widths[i])).join("  ");
  return [line(cells[0]), widths.map((w) => "-".repeat(w)).join("  "), ...cells.slice(1).map(line)].join("\n");
}
