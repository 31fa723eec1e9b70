// The independent checker: reads only the chaos log (and the final state recorded in it) and judges the run.
import { readFileSync } from "node:fs";
import type { ChaosRecord, CriticalSectionRecord, FaultKind } from "./records.ts";

/** What the checker found. `violations` empty means the run upheld every safety property. */
export interface Report {
  seed: number | undefined;
  unsafeRestart: boolean;
  cycles: number;
  misses: number;
  faults: Partial<Record<FaultKind, number>>;
  /** Pairs of critical sections that overlapped while both were within their validity. */
  overlaps: number;
  overlapExamples: string[];
  /** Writes accepted although a newer token had already been recorded by the store. */
  staleAccepted: number;
  /** Reads or writes the store refused because a newer holder had come. */
  staleRejected: number;
  acceptedWrites: number;
  unknownWrites: number;
  finalCounter: number | undefined;
  /** Accepted writes that did not survive (accepted − final counter), and values written twice. */
  lostUpdates: number;
  duplicateValues: number;
  /** Successive holders (by start) whose fencing token did not increase. */
  fenceRegressions: number;
  violations: string[];
}

/** Judges a run from its records. */
export function check(records: ChaosRecord[]): Report {
  const start = records.find((r) => r.type === "start");
  const final = records.find((r) => r.type === "final");
  const sections = records.filter((r): r is CriticalSectionRecord => r.type === "cs").sort((a, b) => a.start - b.start);
  const faults: Partial<Record<FaultKind, number>> = {};
  for (const r of records) if (r.type === "fault") faults[r.kind] = (faults[r.kind] ?? 0) + 1;

  // Overlap: [start, min(end, validityEnd)] of two sections intersect.
  const validEnd = (s: CriticalSectionRecord) => Math.min(s.end, s.validityEnd);
  let overlaps = 0;
  const overlapExamples: string[] = [];
  for (let i = 0; i < sections.length; i++) {
    for (let j = i + 1; j < sections.length && sections[j].start < validEnd(sections[i]); j++) {
      if (validEnd(sections[j]) <= sections[j].start) continue;
      overlaps++;
      if (overlapExamples.length < 3) {
        const [a, b] = [sections[i], sections[j]];
        overlapExamples.push(
          `client ${a.client} (fence ${a.fence}) held [${fmt(a.start)}, ${fmt(validEnd(a))}] and client ${b.client} (fence ${b.fence}) started at ${fmt(b.start)}`,
        );
      }
    }
  }

  // A write is stale if the store had already recorded a newer token (a newer holder's read) before it was sent.
  const reads = sections.filter((s) => s.readAccepted).sort((a, b) => a.readDone - b.readDone);
  let staleAccepted = 0;
  for (const w of sections) {
    if (w.writeAccepted !== true || w.writeSent === undefined) continue;
    if (reads.some((r) => r.readDone < w.writeSent! && BigInt(r.fence) > BigInt(w.fence))) staleAccepted++;
  }
  const staleRejected = sections.filter((s) => (s.readDone > 0 && !s.readAccepted) || s.writeAccepted === false).length;

  const accepted = sections.filter((s) => s.writeAccepted === true);
  const unknownWrites = sections.filter((s) => s.error !== undefined && s.readAccepted).length;
  const finalCounter = final?.type === "final" ? final.counter : undefined;
  const lostUpdates = finalCounter === undefined ? 0 : Math.max(0, accepted.length - finalCounter);
  const written = accepted.map((s) => (s.read ?? 0) + 1);
  const duplicateValues = written.length - new Set(written).size;

  let fenceRegressions = 0;
  for (let i = 1; i < sections.length; i++) if (BigInt(sections[i].fence) <= BigInt(sections[i - 1].fence)) fenceRegressions++;

  const violations: string[] = [];
  if (overlaps > 0) violations.push(`${overlaps} overlapping critical section pair(s) within validity`);
  if (staleAccepted > 0) violations.push(`${staleAccepted} stale write(s) accepted`);
  if (lostUpdates > 0 || duplicateValues > 0) violations.push(`lost updates: ${lostUpdates} (values written twice: ${duplicateValues})`);
  if (finalCounter !== undefined && finalCounter > accepted.length + unknownWrites) violations.push(`counter ${finalCounter} exceeds accepted writes ${accepted.length} + unknown ${unknownWrites}`);
  if (fenceRegressions > 0) violations.push(`${fenceRegressions} fencing token(s) not larger than the previous holder's`);
  if (finalCounter === undefined) violations.push("no final state recorded");
  if ((faults["client-stall"] ?? 0) >= 3 && staleRejected === 0) violations.push("client stalls were injected but no stale read or write was refused");

  return {
    seed: start?.type === "start" ? start.seed : undefined,
    unsafeRestart: start?.type === "start" ? start.unsafeRestart : false,
    cycles: sections.length,
    misses: records.filter((r) => r.type === "miss").length,
    faults,
    overlaps,
    overlapExamples,
    staleAccepted,
    staleRejected,
    acceptedWrites: accepted.length,
    unknownWrites,
    finalCounter,
    lostUpdates,
    duplicateValues,
    fenceRegressions,
    violations,
  };
}

/** Reads a JSONL log. */
export function readLog(path: string): ChaosRecord[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as ChaosRecord);
}

/** The report as the CLI prints it. */
export function formatReport(report: Report): string {
  const faults = Object.entries(report.faults).map(([kind, n]) => `${kind} ${n}`).join(", ") || "none";
  return [
    `chaos checker — seed ${report.seed}${report.unsafeRestart ? " (NEGATIVE CONTROL: --unsafe-restart)" : ""}`,
    `  critical sections completed:            ${report.cycles} (acquisitions given up: ${report.misses})`,
    `  faults injected:                        ${faults}`,
    `  overlapping sections within validity:   ${report.overlaps}`,
    ...report.overlapExamples.map((e) => `    e.g. ${e}`),
    `  stale guarded writes accepted:          ${report.staleAccepted}`,
    `  stale reads/writes rejected:            ${report.staleRejected}`,
    `  accepted writes / final counter:        ${report.acceptedWrites} / ${report.finalCounter} (unknown outcomes: ${report.unknownWrites})`,
    `  lost updates:                           ${report.lostUpdates} (values written twice: ${report.duplicateValues})`,
    `  fencing tokens not increasing:          ${report.fenceRegressions}`,
    `  violations found:                       ${report.violations.length}${report.violations.length ? " — " + report.violations.join("; ") : ""}`,
  ].join("\n");
}

function fmt(t: number): string {
  return new Date(t).toISOString().slice(11, 23);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const report = check(readLog(process.argv[2]));
  process.stdout.write(formatReport(report) + "\n");
  process.exit(report.violations.length ? 1 : 0);
}
