// What a scenario records per implementation, the ratios between them, and the printed tables.
import { markdownTable, round, table } from "./stats.ts";

export interface Result {
  acquireP50Ms?: number;
  acquireP99Ms?: number;
  healthyAcquireP50Ms?: number;
  p50Ms?: number;
  p99Ms?: number;
  releaseP50Ms?: number;
  releaseP99Ms?: number;
  cpuUsPerCycle?: number;
  /** cpu-in-process: client CPU µs for one cycle of 20 locks (acquired with Promise.all, then released). */
  cpuUsPer20Locks?: number;
  opsPerSec?: number;
  idleGapP50Ms?: number;
  idleGapP99Ms?: number;
  requestsPerGrant?: number;
  /** HTTP requests per cycle, from the bridges' `received` counters (HTTP implementations only). */
  requestsPerCycle?: number;
  capped?: number;
  note?: string;
  vsFloor?: number;
  vsNodeRedlock?: number;
  /** WAN: acquire p50 ÷ the physical limit's p50. */
  vsLimit?: number;
  /** contention-herd / contention-steady (bench/fair-contention.ts). */
  makespanMs?: number;
  idealMs?: number;
  vsIdeal?: number;
  firstGrantMs?: number;
  firstGrantAttempt?: number;
  giveUps?: number;
  overlaps?: number;
  waitP99Ms?: number;
  waitP99VsBound?: number;
  grantsPerSec?: number;
  handoverLimitPerSec?: number;
  vsHandover?: number;
  jain?: number;
  minGrants?: number;
  maxGrants?: number;
  httpRequestsPerGrant?: number;
  commandsPerGrant?: number;
  rttMs?: number;
}

export type Results = Record<string, Record<string, Result>>;

/** The figure the × columns compare: ops/s where more is better, acquire p50 under the WAN, else p50. */
export function metricOf(scenario: string, r: Result): number | undefined {
  if (scenario === "contention" || scenario === "throughput") return r.opsPerSec;
  if (scenario === "wan") return r.acquireP50Ms;
  if (scenario === "cpu-in-process") return r.cpuUsPerCycle;
  return r.p50Ms;
}

/** Fills in vsFloor, vsNodeRedlock (and vsLimit under the WAN), all from this run. */
export function addRatios(results: Results): void {
  for (const [name, scenario] of Object.entries(results)) {
    const floor = scenario.floor && metricOf(name, scenario.floor);
    const nr = scenario["node-redlock"] && metricOf(name, scenario["node-redlock"]);
    const limit = scenario["physical-limit"]?.acquireP50Ms;
    for (const r of Object.values(scenario)) {
      const m = metricOf(name, r);
      if (m === undefined) continue;
      if (floor) r.vsFloor = round(m / floor, 3);
      if (nr) r.vsNodeRedlock = round(m / nr, 3);
      if (limit && name === "wan") r.vsLimit = round(m / limit, 3);
    }
  }
}

const COLUMNS: [string, keyof Result][] = [
  ["acquire p50", "acquireP50Ms"],
  ["acquire p99", "acquireP99Ms"],
  ["baseline acquire p50", "healthyAcquireP50Ms"],
  ["p50 ms", "p50Ms"],
  ["p99 ms", "p99Ms"],
  ["release p50", "releaseP50Ms"],
  ["release p99", "releaseP99Ms"],
  ["ops/s", "opsPerSec"],
  ["cpu µs/cycle", "cpuUsPerCycle"],
  ["cpu µs/20 locks", "cpuUsPer20Locks"],
  ["gap p50", "idleGapP50Ms"],
  ["gap p99", "idleGapP99Ms"],
  ["cmds/grant", "requestsPerGrant"],
  ["HTTP req/cycle", "requestsPerCycle"],
  ["makespan ms", "makespanMs"],
  ["ideal ms", "idealMs"],
  ["×ideal", "vsIdeal"],
  ["1st grant ms", "firstGrantMs"],
  ["1st grant attempt", "firstGrantAttempt"],
  ["grants/s", "grantsPerSec"],
  ["handover limit/s", "handoverLimitPerSec"],
  ["×handover", "vsHandover"],
  ["give-ups", "giveUps"],
  ["overlaps", "overlaps"],
  ["Jain", "jain"],
  ["min/client", "minGrants"],
  ["max/client", "maxGrants"],
  ["wait p99", "waitP99Ms"],
  ["p99÷bound", "waitP99VsBound"],
  ["HTTP req/grant", "httpRequestsPerGrant"],
  ["cmds/grant ", "commandsPerGrant"],
  ["×limit", "vsLimit"],
  ["×floor", "vsFloor"],
  ["×node-redlock", "vsNodeRedlock"],
];

/** What each scenario's p50/p99 and × columns mean, printed above its table. */
const CAPTIONS: Record<string, string> = {
  healthy: "healthy: acquire+release cycles, one at a time (p50/p99 = the cycle; × on p50)",
  "healthy-alone":
    "healthy-alone: the healthy cycles with each implementation in a process of its own " +
    "(cpu µs/cycle = that process's; × on p50)",
  "slow-minority":
    "slow-minority: 2 of 5 nodes +250 ms; p50/p99 = acquire; baseline = healthy acquire p50 of the same rounds",
  "hung-node": "hung-node: 1 of 5 nodes hung; p50/p99 = acquire",
  contention: "contention: 16 contenders on one key, 5 ms critical section; ops/s = grants/s",
  "contention-herd":
    "contention-herd: 16 clients (each its own instance) start at once on one key, hold 20 ms, ttl 2 s; " +
    "ideal = 16 × (hold + 2 RTT)",
  "contention-steady":
    "contention-steady: 16 clients loop acquire (maxWait 3 s, ttl 2 s) → hold 50 ms → release; " +
    "limit = 1 / (hold + 2 RTT); p99 bound = 1.3 × 15 × (hold + 2 RTT)",
  throughput: "throughput: 32 concurrent acquire+release cycles on distinct keys; ops/s = cycles/s",
  "many-locks":
    "many-locks: 20 distinct keys acquired with Promise.all, then released; one cycle = all 20 (p50/p99 = the cycle)",
  "cpu-in-process":
    "cpu-in-process: the client's CPU alone, fetch answered in-process; cpu µs/cycle = one lock's acquire+release, " +
    "cpu µs/20 locks = 20 acquired with Promise.all, then released (× on one lock)",
  wan:
    "wan: one-way 2/12/40/75/120 ms ±20 %, 1 % +200 ms; × on acquire p50; " +
    "physical-limit = 3rd-fastest PING round trip",
};

/** One table per scenario, with the columns that scenario fills. */
export function render(results: Results, markdown = false): string {
  const parts: string[] = [];
  for (const [name, byImpl] of Object.entries(results)) {
    const impls = Object.entries(byImpl);
    const columns = COLUMNS.filter(([, key]) => impls.some(([, r]) => r[key] !== undefined));
    const rows = impls.map(([impl, r]) => [impl, ...columns.map(([, key]) => r[key] ?? "")] as (string | number)[]);
    const notes = impls.filter(([, r]) => r.note).map(([impl, r]) => `  ${impl}: ${r.note}`);
    const header = ["impl", ...columns.map(([head]) => head)];
    if (markdown) {
      const [title, ...rest] = (CAPTIONS[name] ?? name).split(": ");
      const caption = rest.length > 0 ? `**${title}**: ${rest.join(": ")}` : `**${title}**`;
      parts.push([caption, "", markdownTable(header, rows), ...notes.map((n) => `\n${n.trim()}`)].join("\n"));
    } else parts.push([CAPTIONS[name] ?? name, table(header, rows), ...notes].join("\n"));
  }
  return parts.join("\n\n");
}
