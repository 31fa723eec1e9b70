// The performance targets (docs/PERFORMANCE.md states them), judged on the figures of one run.
import type { Results } from "./report.ts";
import { round } from "./stats.ts";

export interface Verdict {
  target: string;
  value: number;
  bound: string;
  met: boolean;
}

/**
 * Every target whose figures this run has. A missing figure (e.g. the A/B skipped) leaves its target out.
 * @example
 * for (const v of verdicts(results)) console.log(v.target, v.value, v.met);
 */
export function verdicts(results: Results): Verdict[] {
  const out: Verdict[] = [];
  const at = (scenario: string, impl: string) => results[scenario]?.[impl];
  const check = (target: string, value: number | undefined, bound: number, atMost = true) => {
    if (value === undefined || !Number.isFinite(value)) return;
    out.push({
      target,
      value: round(value, 3),
      bound: `${atMost ? "≤" : "≥"} ${bound}`,
      met: atMost ? value <= bound : value >= bound,
    });
  };
  const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || !b ? undefined : a / b);

  const edge = (scenario: string) => at(scenario, "edge-redlock");
  check(
    "throughput: cycles/s ÷ node-redlock's",
    ratio(edge("throughput")?.opsPerSec, at("throughput", "node-redlock")?.opsPerSec),
    1.0,
    false,
  );
  check("throughput: HTTP requests per cycle", edge("throughput")?.requestsPerCycle, 2);
  check("many locks: HTTP requests for 20 locks (acquire + release)", edge("many-locks")?.requestsPerCycle, 10);
  check(
    "hung node: release p50 ÷ healthy release p50",
    ratio(edge("hung-node")?.releaseP50Ms, edge("healthy")?.releaseP50Ms),
    1.5,
  );
  check("healthy: p50 ÷ floor p50", ratio(edge("healthy")?.p50Ms, at("healthy", "floor")?.p50Ms), 1.1);
  check(
    "healthy: p50 ÷ previous version's p50 (A/B, same rounds)",
    ratio(edge("healthy")?.p50Ms, at("healthy", "edge-redlock-previous")?.p50Ms),
    1.0,
  );
  check(
    "WAN: acquire p50 ÷ 3rd-fastest round trip p50",
    ratio(edge("wan")?.acquireP50Ms, at("wan", "physical-limit")?.acquireP50Ms),
    1.05,
  );
  check(
    "WAN: acquire p99 ÷ floor acquire p99",
    ratio(edge("wan")?.acquireP99Ms, at("wan", "floor")?.acquireP99Ms),
    1.1,
  );
  // The library's own cost against the floor: throughput and the client's CPU in-process.
  check(
    "throughput: cycles/s ÷ floor-batched's",
    ratio(edge("throughput")?.opsPerSec, at("throughput", "floor-batched")?.opsPerSec),
    0.9,
    false,
  );
  check(
    "in-process CPU, 1 lock: ÷ floor",
    ratio(edge("cpu-in-process")?.cpuUsPerCycle, at("cpu-in-process", "floor")?.cpuUsPerCycle),
    1.1,
  );
  check(
    "in-process CPU, 20 locks: ÷ floor-batched",
    ratio(edge("cpu-in-process")?.cpuUsPer20Locks, at("cpu-in-process", "floor-batched")?.cpuUsPer20Locks),
    1.1,
  );
  // Earlier targets (README, Performance).
  check(
    "CPU per healthy cycle ÷ floor",
    ratio(edge("healthy")?.cpuUsPerCycle, at("healthy", "floor")?.cpuUsPerCycle),
    1.1,
  );
  // The same cycles with each implementation in a process of its own (bench/healthy-alone.ts), as in a Worker.
  check(
    "healthy, own process: p50 ÷ floor p50",
    ratio(edge("healthy-alone")?.p50Ms, at("healthy-alone", "floor")?.p50Ms),
    1.1,
  );
  check(
    "healthy, own process: CPU per cycle ÷ floor",
    ratio(edge("healthy-alone")?.cpuUsPerCycle, at("healthy-alone", "floor")?.cpuUsPerCycle),
    1.1,
  );
  check(
    "slow minority: acquire p50 ÷ healthy acquire p50 of the same rounds",
    ratio(edge("slow-minority")?.p50Ms, edge("slow-minority")?.healthyAcquireP50Ms),
    1.25,
  );
  // Fair waiting under contention: the herd and steady rows.
  const steady = at("contention-steady", "edge-redlock");
  const herd = at("contention-herd", "edge-redlock");
  check("steady: give-ups", steady?.giveUps, 0);
  check("steady: Jain's index", steady?.jain, 0.95, false);
  check("steady: grants/s ÷ handover limit", steady?.vsHandover, 0.9, false);
  check("steady: p99 wait ÷ 1.3 × 15 × (hold + 2 RTT)", steady?.waitP99VsBound, 1);
  check(
    "steady: HTTP requests per grant ÷ random retry's (fair: false, today's)",
    ratio(steady?.httpRequestsPerGrant, at("contention-steady", "edge-redlock-random")?.httpRequestsPerGrant),
    1,
  );
  check("herd: makespan ÷ ideal", herd?.vsIdeal, 1.3);
  check("herd: the attempt that made the first grant", herd?.firstGrantAttempt, 2);
  return out;
}
