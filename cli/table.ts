// The doctor's report as a terminal table: node labels are variable names, never URLs or tokens.
import type { DoctorReport, NodeHealth } from "../src/doctor/types.ts";

/**
 * Renders a report: one row per node, one line per check, the verdict last.
 * @example
 * ```ts
 * process.stdout.write(formatReport(await checkNodes(nodes, { labels })));
 * ```
 */
export function formatReport(report: DoctorReport): string {
  const header = [
    "node",
    "status",
    "first ms",
    "p50 ms",
    "p99 ms",
    "scripts",
    "key-locking",
    "clock ms",
    "eviction",
    "same database as",
  ];
  const rows = report.nodes.map((h) => [
    h.label,
    status(h),
    ms(h.firstMs),
    ms(h.p50Ms),
    ms(h.p99Ms),
    h.scripts ?? "-",
    h.keyLocking ?? "-",
    h.clockOffsetMs === undefined
      ? "-"
      : `${h.clockOffsetMs >= 0 ? "+" : ""}${ms(h.clockOffsetMs)} ±${ms(h.clockUncertaintyMs)}`,
    h.eviction === undefined ? "-" : (h.eviction ?? "not reported"),
    h.sameAs.length === 0 ? "-" : h.sameAs.map((j) => report.nodes[j].label).join(", "),
  ]);
  const numeric = new Set([2, 3, 4, 7]);
  const widths = header.map((_, c) => Math.max(header[c].length, ...rows.map((r) => r[c].length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, c) => (numeric.has(c) ? cell.padStart(widths[c]) : cell.padEnd(widths[c])))
      .join("  ")
      .trimEnd();
  const nameWidth = Math.max(...report.checks.map((c) => c.name.length));
  return [
    line(header),
    ...rows.map(line),
    "",
    ...report.checks.map((c) => `${c.status.toUpperCase().padEnd(4)}  ${c.name.padEnd(nameWidth)}  ${c.message}`),
    "",
    report.verdict,
    "",
  ].join("\n");
}

function status(h: NodeHealth): string {
  if (h.configError !== undefined) return "config";
  if (h.reachable) return "ok";
  return h.httpStatus === undefined ? "down" : `HTTP ${h.httpStatus}`;
}

function ms(value: number | undefined): string {
  if (value === undefined) return "-";
  return value >= 100 ? String(Math.round(value)) : value.toFixed(1);
}
