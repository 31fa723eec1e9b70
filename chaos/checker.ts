// The independent checker: reads only the chaos log (and the final state recorded in it) and judges the run.
import { readFileSync } from "node:fs";
import {
  DEFAULT_RESOURCE,
  type ChaosRecord,
  type CrashRecord,
  type CriticalSectionRecord,
  type Cut,
  type EnterRecord,
  type FaultKind,
  type FaultRecord,
  type ResourceSpec,
} from "./records.ts";

/** How one protected resource fared: at no moment more than `limit` holders within their validity. */
export interface ResourceReport {
  name: string;
  limit: number;
  /** Sections entered (completed, crashed or cut off by the end of the run). */
  sections: number;
  /** The most holders within validity at one moment. */
  maxHolders: number;
  /**
   * Limit 1: pairs of sections that overlapped within validity. Limit > 1: sections that began while `limit` others
   * were valid.
   */
  excess: number;
  /** Limit > 1: the first few moments with more than `limit` valid holders, each holder named. */
  excessExamples: string[];
  /**
   * A read-write lock: `excess` counts reader/writer and writer/writer pairs valid at once; `maxHolders` the most
   * readers.
   */
  readWrite?: boolean;
}

/** What the checker found. `violations` empty means the run upheld every safety property. */
export interface Report {
  seed: number | undefined;
  unsafeRestart: boolean;
  /** The semaphore resource ran on the naive per-node counting semaphore (its negative control). */
  naiveSemaphore: boolean;
  /** The read-write resource ran on the naive reader-counting read-write lock (its negative control). */
  naiveRw: boolean;
  /** Critical sections completed (a cs record). */
  cycles: number;
  misses: number;
  faults: Partial<Record<FaultKind, number>>;
  resources: ResourceReport[];
  /** Pairs of critical sections of one mutex that overlapped while both were within their validity. */
  overlaps: number;
  overlapExamples: string[];
  /**
   * Sections that began while the client's solid partitions left it fewer nodes than a quorum for its whole
   * acquisition.
   */
  minorityGrants: number;
  minorityExamples: string[];
  /** Client crashes; those inside a critical section; those judged for the lock coming free again. */
  crashes: number;
  crashesInSection: number;
  crashesJudged: number;
  /** Judged crashes whose lock nobody took within ttl + slack of the crashed section's start. */
  locksNotFreed: number;
  /** The longest time from a crashed section's start to the next holder's start, over judged crashes. */
  slowestFreeMs: number | undefined;
  freeBoundMs: number;
  /** Targeted-nemesis scenarios run, and those that found a holder on exactly a quorum and crashed a node of it. */
  nemesisRuns: number;
  nemesisStruck: number;
  /**
   * Semaphore-windows scenarios run, and the most permits one of them saw held on a quorum at one TCP look (its own
   * record).
   */
  windowsRuns: number;
  windowsMostSeen: number | undefined;
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
  /** Successive holders of one mutex (by start) whose fencing token did not increase. */
  fenceRegressions: number;
  violations: string[];
}

/** A critical section as the checker sees it: from a cs record, or an enter record the client never finished. */
interface Section {
  client: number;
  resource: string;
  /** A mutex section's fencing token; absent for a permit. */
  fence: string | undefined;
  slot: number | undefined;
  /** A read-write lock's section: a reader's or the writer's. */
  mode: "read" | "write" | undefined;
  acquireCalled: number | undefined;
  start: number;
  validityEnd: number;
  /** When it ended: the cs record's end, the crash that cut it short, or Infinity (cut off by the end of the run). */
  end: number;
  crash: CrashRecord | undefined;
  done: CriticalSectionRecord | undefined;
}

/** Judges a run from its records. */
export function check(records: ChaosRecord[]): Report {
  const start = records.find((r) => r.type === "start");
  const final = records.find((r) => r.type === "final");
  const stop = records.find((r) => r.type === "stop");
  const specs: ResourceSpec[] =
    start?.type === "start" && start.resources?.length ? start.resources : [DEFAULT_RESOURCE];
  const ttl = start?.type === "start" ? start.ttl : 0;
  const nodes = (start?.type === "start" ? start.nodes : undefined) ?? 5;
  const freeBoundMs = ttl + ((start?.type === "start" ? start.freeSlackMs : undefined) ?? 1_000);
  const faultRecords = records.filter((r): r is FaultRecord => r.type === "fault");
  const crashes = records.filter((r): r is CrashRecord => r.type === "crash");
  const faults: Partial<Record<FaultKind, number>> = {};
  for (const f of faultRecords) faults[f.kind] = (faults[f.kind] ?? 0) + 1;

  const sections = toSections(records, specs[0].name);
  const validEnd = (s: Section) => Math.min(s.end, s.validityEnd);

  // Mutual exclusion (limit 1) or the permit bound (limit > 1), per resource: [start, min(end, validityEnd)].
  let overlaps = 0;
  const overlapExamples: string[] = [];
  const resources: ResourceReport[] = specs.map((spec) => {
    const mine = sections.filter((s) => s.resource === spec.name && validEnd(s) > s.start);
    let excess = 0;
    let maxHolders = 0;
    const excessExamples: string[] = [];
    // Sweep by start: `valid` holds the earlier sections still within validity when this one begins.
    let valid: Section[] = [];
    for (const s of mine) {
      valid = valid.filter((v) => validEnd(v) > s.start);
      if (spec.readWrite) {
        // Readers overlap freely; a writer overlaps nobody within validity.
        const conflicts = valid.filter((v) => v.mode === "write" || s.mode === "write");
        excess += conflicts.length;
        for (const a of conflicts)
          if (excessExamples.length < 3) excessExamples.push(describeOverlap(a, s, validEnd(a), faultRecords));
        if (s.mode === "read") maxHolders = Math.max(maxHolders, valid.filter((v) => v.mode === "read").length + 1);
        valid.push(s);
        continue;
      }
      maxHolders = Math.max(maxHolders, valid.length + 1);
      if (spec.limit === 1) {
        excess += valid.length;
        for (const a of valid)
          if (overlapExamples.length < 3) overlapExamples.push(describeOverlap(a, s, validEnd(a), faultRecords));
      } else if (valid.length >= spec.limit) {
        excess++;
        if (excessExamples.length < 3) excessExamples.push(describeExcess([...valid, s], validEnd, faultRecords));
      }
      valid.push(s);
    }
    if (spec.limit === 1 && !spec.readWrite) overlaps += excess;
    const sectionCount = sections.filter((s) => s.resource === spec.name).length;
    return {
      name: spec.name,
      limit: spec.limit,
      sections: sectionCount,
      maxHolders,
      excess,
      excessExamples,
      ...(spec.readWrite ? { readWrite: true } : {}),
    };
  });

  // A grant needs a quorum: no section may begin while its client was cut off from more than N − quorum
  // nodes for the whole of its acquisition (every attempt began after acquireCalled).
  const quorum = Math.floor(nodes / 2) + 1;
  const cuts = faultRecords.flatMap((f) => f.cuts ?? []);
  let minorityGrants = 0;
  const minorityExamples: string[] = [];
  for (const s of sections) {
    if (s.acquireCalled === undefined) continue;
    const lost = unreachable(cuts, s.client, s.acquireCalled, s.start);
    if (nodes - lost.size >= quorum) continue;
    minorityGrants++;
    if (minorityExamples.length < 3) {
      minorityExamples.push(
        `client ${s.client} (${label(s)}) acquired at ${fmt(s.start)} although nodes ${[...lost].sort().join(",")} ` +
          `were cut off from it since before it called acquire at ${fmt(s.acquireCalled)}`,
      );
    }
  }

  const mutexes = new Set(specs.filter((s) => s.limit === 1 && !s.readWrite).map((s) => s.name));

  // A crashed holder's lock must come free within its ttl: judged where nothing else was going wrong, on
  // mutexes (a semaphore's other permits go on regardless, so the next holder says nothing about this one).
  let crashesInSection = 0;
  let crashesJudged = 0;
  let locksNotFreed = 0;
  let slowestFreeMs: number | undefined;
  for (const crash of crashes) {
    const cut = sections.find((s) => s.crash === crash);
    if (!cut) continue;
    crashesInSection++;
    if (!mutexes.has(cut.resource)) continue;
    const deadline = cut.start + freeBoundMs;
    const quiet =
      crash.reason !== "wind-down" &&
      !faultRecords.some((f) => f.at <= deadline && f.until >= crash.at) &&
      !crashes.some((c) => c !== crash && c.at >= crash.at && c.at <= deadline) &&
      (stop === undefined || stop.at > deadline) &&
      (final === undefined || final.at > deadline);
    if (!quiet) continue;
    crashesJudged++;
    const next = sections
      .filter((s) => s !== cut && s.resource === cut.resource && s.start >= cut.start)
      .sort((a, b) => a.start - b.start)[0];
    if (!next || next.start > deadline) locksNotFreed++;
    else slowestFreeMs = Math.max(slowestFreeMs ?? 0, next.start - cut.start);
  }

  // The protected counters (mutex resources): fencing must keep every update.
  const guarded = sections.filter((s) => mutexes.has(s.resource));
  const done = guarded.flatMap((s) => (s.done ? [s.done] : []));
  let staleAccepted = 0;
  for (const name of mutexes) {
    const mine = done.filter((s) => (s.resource ?? specs[0].name) === name);
    // For each accepted write: the largest token any read had recorded before the write was sent.
    const reads = mine.filter((s) => s.readAccepted).sort((a, b) => a.readDone - b.readDone);
    const times = reads.map((r) => r.readDone);
    const newest: bigint[] = [];
    // Every mutex section carries a fencing token (BigInt of a missing one throws: a broken log).
    for (const r of reads)
      newest.push(
        newest.length && newest[newest.length - 1] > BigInt(r.fence!) ? newest[newest.length - 1] : BigInt(r.fence!),
      );
    for (const w of mine) {
      if (w.writeAccepted !== true || w.writeSent === undefined) continue;
      const before = countBelow(times, w.writeSent);
      if (before > 0 && newest[before - 1] > BigInt(w.fence!)) staleAccepted++;
    }
  }
  const staleRejected = done.filter((s) => (s.readDone > 0 && !s.readAccepted) || s.writeAccepted === false).length;

  let acceptedWrites = 0;
  let unknownWrites = 0;
  let finalCounter: number | undefined;
  let lostUpdates = 0;
  let duplicateValues = 0;
  const counterViolations: string[] = [];
  for (const name of mutexes) {
    const mine = guarded.filter((s) => s.resource === name);
    const accepted = mine.filter((s) => s.done?.writeAccepted === true);
    // Unknown: the store call failed, or the client crashed (or was cut off) before it reported.
    const unknown = mine.filter((s) => (s.done ? s.done.error !== undefined && s.done.readAccepted : true)).length;
    const counter =
      final?.type === "final"
        ? (final.counters?.[name] ?? (name === specs[0].name ? final.counter : undefined))
        : undefined;
    acceptedWrites += accepted.length;
    unknownWrites += unknown;
    if (counter !== undefined) {
      finalCounter = (finalCounter ?? 0) + counter;
      lostUpdates += Math.max(0, accepted.length - counter);
      if (counter > accepted.length + unknown)
        counterViolations.push(
          `counter of ${name} ${counter} exceeds accepted writes ${accepted.length} + unknown ${unknown}`,
        );
    }
    const written = accepted.map((s) => (s.done!.read ?? 0) + 1);
    duplicateValues += written.length - new Set(written).size;
  }

  let fenceRegressions = 0;
  for (const name of mutexes) {
    const mine = sections.filter((s) => s.resource === name).sort((a, b) => a.start - b.start);
    for (let i = 1; i < mine.length; i++) if (BigInt(mine[i].fence!) <= BigInt(mine[i - 1].fence!)) fenceRegressions++;
  }

  const nemesis = faultRecords.filter((f) => f.kind === "quorum-crash");
  const nemesisStruck = nemesis.filter((f) => f.struck === true).length;
  const windows = faultRecords.filter((f) => f.kind === "semaphore-windows");
  const windowsMostSeen = windows.length ? Math.max(...windows.map((f) => f.heldOn?.length ?? 0)) : undefined;
  // Stalls are judged by the fenced counter: only those of clients that held a mutex.
  const mutexClients = new Set(guarded.map((s) => s.client));
  const mutexStalls = faultRecords.filter(
    (f) => f.kind === "client-stall" && mutexClients.has(Number(f.target.replace("client ", ""))),
  ).length;
  const violations: string[] = [];
  if (overlaps > 0) violations.push(`${overlaps} overlapping critical section pair(s) within validity`);
  for (const r of resources)
    if (r.readWrite && r.excess > 0)
      violations.push(`${r.name}: ${r.excess} reader/writer or writer/writer pair(s) valid at once`);
  for (const r of resources)
    if (r.limit > 1 && r.excess > 0)
      violations.push(
        `${r.name}: more than ${r.limit} holders within validity at once (${r.excess} time(s), up to ${r.maxHolders})`,
      );
  if (minorityGrants > 0)
    violations.push(`${minorityGrants} section(s) began while the client reached only a minority of the nodes`);
  if (staleAccepted > 0) violations.push(`${staleAccepted} stale write(s) accepted`);
  if (lostUpdates > 0 || duplicateValues > 0)
    violations.push(`lost updates: ${lostUpdates} (values written twice: ${duplicateValues})`);
  violations.push(...counterViolations);
  if (fenceRegressions > 0)
    violations.push(`${fenceRegressions} fencing token(s) not larger than the previous holder's`);
  if (final === undefined) violations.push("no final state recorded");
  if (mutexStalls >= 3 && staleRejected === 0)
    violations.push("client stalls were injected but no stale read or write was refused");
  if (locksNotFreed > 0)
    violations.push(`${locksNotFreed} crashed holder(s)' lock not taken again within ttl + ${freeBoundMs - ttl} ms`);
  if (crashes.some((c) => c.reason === "nemesis") && crashesJudged === 0)
    violations.push("clients were crashed mid-section but no crash could be judged (lock free again within its ttl)");
  if (nemesis.length > 0 && nemesisStruck === 0)
    violations.push("the targeted nemesis ran but never struck (no holder on exactly a quorum)");

  return {
    seed: start?.type === "start" ? start.seed : undefined,
    unsafeRestart: start?.type === "start" ? start.unsafeRestart : false,
    naiveSemaphore: start?.type === "start" ? start.naiveSemaphore === true : false,
    naiveRw: start?.type === "start" ? start.naiveRw === true : false,
    cycles: records.filter((r) => r.type === "cs").length,
    misses: records.filter((r) => r.type === "miss").length,
    faults,
    resources,
    overlaps,
    overlapExamples,
    minorityGrants,
    minorityExamples,
    crashes: crashes.length,
    crashesInSection,
    crashesJudged,
    locksNotFreed,
    slowestFreeMs,
    freeBoundMs,
    nemesisRuns: nemesis.length,
    nemesisStruck,
    windowsRuns: windows.length,
    windowsMostSeen,
    staleAccepted,
    staleRejected,
    acceptedWrites,
    unknownWrites,
    finalCounter,
    lostUpdates,
    duplicateValues,
    fenceRegressions,
    violations,
  };
}

/** Completed sections, plus entered ones that never reported: ended by their client's crash, else open. */
function toSections(records: ChaosRecord[], defaultResource: string): Section[] {
  const finished = new Set<string>();
  const sections: Section[] = [];
  for (const r of records) {
    if (r.type !== "cs") continue;
    if (r.id !== undefined) finished.add(r.id);
    sections.push({
      client: r.client,
      resource: r.resource ?? defaultResource,
      fence: r.fence,
      slot: r.slot,
      mode: r.mode,
      acquireCalled: r.acquireCalled,
      start: r.start,
      validityEnd: r.validityEnd,
      end: r.end,
      crash: undefined,
      done: r,
    });
  }
  const crashes = records.filter((r): r is CrashRecord => r.type === "crash");
  for (const r of records) {
    if (r.type !== "enter" || finished.has(r.id)) continue;
    const crash = crashes.filter((c) => c.client === r.client && c.at >= r.start).sort((a, b) => a.at - b.at)[0];
    sections.push(fromEnter(r, defaultResource, crash));
  }
  return sections.sort((a, b) => a.start - b.start);
}

function fromEnter(r: EnterRecord, defaultResource: string, crash: CrashRecord | undefined): Section {
  return {
    client: r.client,
    resource: r.resource ?? defaultResource,
    fence: r.fence,
    slot: r.slot,
    mode: r.mode,
    acquireCalled: r.acquireCalled,
    start: r.start,
    validityEnd: r.validityEnd,
    end: crash ? crash.at : Number.POSITIVE_INFINITY,
    crash,
    done: undefined,
  };
}

/** How many of the ascending `times` are below `t`. */
function countBelow(times: number[], t: number): number {
  let lo = 0;
  let hi = times.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (times[mid] < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Nodes cut off from `client` over all of [from, to] by one solid cut. */
function unreachable(cuts: Cut[], client: number, from: number, to: number): Set<number> {
  const lost = new Set<number>();
  for (const cut of cuts) {
    if (cut.from > from || cut.to < to) continue;
    if (cut.clients !== "all" && !cut.clients.includes(client)) continue;
    for (const node of cut.nodes) lost.add(node);
  }
  return lost;
}

function describeOverlap(a: Section, b: Section, aValidEnd: number, faults: FaultRecord[]): string {
  return (
    `client ${a.client} (${label(a)}${how(a)}) held [${fmt(a.start)}, ${fmt(aValidEnd)}] ` +
    `and client ${b.client} (${label(b)}${how(b)}) started at ${fmt(b.start)}` +
    during(b.start, faults)
  );
}

/**
 * "4 valid at 12:00:01.250: client 16 [12:00:00.900, 12:00:01.700], …" — the last of `holders` began at that moment.
 */
function describeExcess(holders: Section[], validEnd: (s: Section) => number, faults: FaultRecord[]): string {
  const at = holders[holders.length - 1].start;
  const each = holders.map((s) => {
    const slot = s.slot !== undefined ? ` (slot ${s.slot})` : "";
    return `client ${s.client}${slot}${how(s)} [${fmt(s.start)}, ${fmt(validEnd(s))}]`;
  });
  return `${holders.length} valid at ${fmt(at)}: ${each.join(", ")}${during(at, faults)}`;
}

/** "fence 123", "slot 2" or "permit": how a section is named in examples. */
function label(s: Section): string {
  if (s.mode !== undefined) return s.mode === "read" ? "reader" : "writer";
  return s.fence !== undefined ? `fence ${s.fence}` : s.slot !== undefined ? `slot ${s.slot}` : "permit";
}

function how(s: Section): string {
  return s.crash ? ", crashed" : s.done ? "" : ", unfinished";
}

/** " — during quorum-crash node 2; …": the faults in force at `t`. */
function during(t: number, faults: FaultRecord[]): string {
  const names = faults.filter((f) => f.at <= t && t <= f.until).map((f) => `${f.kind} ${f.target}`);
  return names.length ? ` — during ${names.join("; ")}` : "";
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
  const faults =
    Object.entries(report.faults)
      .map(([kind, n]) => `${kind} ${n}`)
      .join(", ") || "none";
  const semaphores = report.resources.filter((r) => r.limit > 1);
  const readWrites = report.resources.filter((r) => r.readWrite);
  const slowest = report.slowestFreeMs === undefined ? "-" : `${Math.round(report.slowestFreeMs)} ms`;
  const controls = [
    report.unsafeRestart ? " (NEGATIVE CONTROL: --unsafe-restart)" : "",
    report.naiveSemaphore ? " (NEGATIVE CONTROL: --naive-semaphore)" : "",
    report.naiveRw ? " (NEGATIVE CONTROL: --naive-rw)" : "",
  ].join("");
  return [
    `chaos checker — seed ${report.seed}${controls}`,
    `  critical sections completed:            ${report.cycles} (acquisitions given up: ${report.misses})`,
    `  faults injected:                        ${faults}`,
    `  targeted nemesis (quorum-crash):        ${report.nemesisRuns} run, ` +
      `${report.nemesisStruck} struck a holder on exactly a quorum`,
    `  client crashes:                         ${report.crashes} (${report.crashesInSection} mid-section; ` +
      `${report.crashesJudged} judged: lock taken again after at most ${slowest}, bound ${report.freeBoundMs} ms; ` +
      `not freed: ${report.locksNotFreed})`,
    `  overlapping sections within validity:   ${report.overlaps}`,
    ...report.overlapExamples.map((e) => `    e.g. ${e}`),
    ...semaphores.flatMap((r) => [
      `  ${r.name} (limit ${r.limit}${report.naiveSemaphore ? ", naive" : ""}): ${r.sections} permits, ` +
        `most holders at once ${r.maxHolders}, over-admissions ${r.excess}`,
      ...r.excessExamples.map((e) => `    e.g. ${e}`),
    ]),
    ...readWrites.flatMap((r) => [
      `  ${r.name} (read-write${report.naiveRw ? ", naive" : ""}): ${r.sections} sections, ` +
        `most readers at once ${r.maxHolders}, reader/writer or writer/writer overlaps ${r.excess}`,
      ...r.excessExamples.map((e) => `    e.g. ${e}`),
    ]),
    ...(report.windowsRuns > 0
      ? [
          `  semaphore windows (targeted):           ${report.windowsRuns} run, ` +
            `most permits on a quorum at one TCP look ${report.windowsMostSeen}`,
        ]
      : []),
    `  grants to a client cut to a minority:   ${report.minorityGrants}`,
    ...report.minorityExamples.map((e) => `    e.g. ${e}`),
    `  stale guarded writes accepted:          ${report.staleAccepted}`,
    `  stale reads/writes rejected:            ${report.staleRejected}`,
    `  accepted writes / final counter:        ${report.acceptedWrites} / ${report.finalCounter} ` +
      `(unknown outcomes: ${report.unknownWrites})`,
    `  lost updates:                           ${report.lostUpdates} (values written twice: ${report.duplicateValues})`,
    `  fencing tokens not increasing:          ${report.fenceRegressions}`,
    `  violations found:                       ${report.violations.length}` +
      (report.violations.length ? ` — ${report.violations.join("; ")}` : ""),
  ].join("\n");
}

function fmt(t: number): string {
  return new Date(t).toISOString().slice(11, 23);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const report = check(readLog(process.argv[2]));
  process.stdout.write(`${formatReport(report)}\n`);
  process.exit(report.violations.length ? 1 : 0);
}
