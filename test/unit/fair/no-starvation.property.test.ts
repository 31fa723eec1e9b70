// Fair waiting on the deterministic simulator (fast-check): several clients loop acquire → hold → release on
// one key, with crashed waiters (they vanish mid-queue, or while holding), clients that cannot reach a
// minority of the nodes (their enqueue never lands there), skewed client clocks (their tickets come from
// different clocks: a few hundred ms, or 10 s and an hour either way, which the nodes refuse until the client
// has learned their time), a mix of fair and `fair: false` clients on one key, and per-request latencies.
// Properties:
// (safety) never two valid holders at once;
// (no starvation) every client that keeps asking is served within a bound: the other clients' holds ahead of
// it, their clock skew, and the ttl of holders that crashed.
// Bounded bypass: while a client waits, each other client is granted at most twice plus what its clock skew
// lets it take. All three hold for woken waiters (fair) and for `fair: false`, which takes the same line and keeps
// its place by its own retries. Negative controls: random retry over nodes that ignore the line (they grant as the
// classic script does) — a client that re-acquires the moment it releases keeps the key, and a waiter that polls
// starves past the bound; fair waiters over those nodes are overtaken past the bypass bound; and over nodes that
// take any ticket whatever its time, a client an hour behind overtakes the others past the bound.
// FC_SEED=<seed> FC_PATH=<path> replays a counterexample fast-check printed (FC_RUNS sets the number of runs).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { scenarioArb, simulate, starved } from "../../sim/fair-scenarios.ts";

describe("fair waiting on the simulator (fast-check)", () => {
  // Both ways of waiting take the line: a woken waiter (fair, the default; on the simulator's wrapped nodes it asks
  // every retryDelay ± retryJitter), and `fair: false`, which keeps its place by its own retries.
  for (const mode of [true, false, "mixed"] as const) {
    const name = mode === "mixed" ? "fair and fair: false on one key" : mode ? "fair" : "fair: false";
    it(`${name}: never two valid holders, and every client that keeps asking is served within its bound`, async () => {
      const runs = Number(process.env.FC_RUNS ?? 150);
      let grants = 0;
      await fc.assert(
        fc.asyncProperty(scenarioArb, async (scenario) => {
          const outcome = await simulate(scenario, mode);
          grants += outcome.grants.reduce((a, b) => a + b, 0);
          expect(outcome.overlap).toBeUndefined();
          expect(starved(scenario, outcome)).toEqual([]);
          expect(outcome.bypass).toEqual([]);
        }),
        {
          numRuns: runs,
          ...(process.env.FC_SEED ? { seed: Number(process.env.FC_SEED), path: process.env.FC_PATH } : {}),
        },
      );
      console.log(`${name} property: ${runs} schedules, ${grants} grants`);
      expect(grants).toBeGreaterThan(runs * 10);
    }, 600_000);
  }
});

/** The schedules without stalls: a stall widens every bound, and the controls look for what the bounds catch. */
const steadyClients = scenarioArb.map((s) => ({ ...s, clients: s.clients.map((c) => ({ ...c, stallAt: undefined })) }));

describe("negative control", () => {
  it("random retry that ignores the line (nodes that grant as if nobody waited) starves a waiter while another client re-acquires at once", async () => {
    // A client that asks again the moment it releases, and two that wait; found by the search, not written in.
    const herd = steadyClients.filter((s) => s.clients.every((c) => c.crashAt === undefined));
    const result = await fc.check(
      fc.asyncProperty(herd, async (scenario) => {
        const outcome = await simulate(scenario, false, true);
        return outcome.overlap === undefined && starved(scenario, outcome).length === 0;
      }),
      { numRuns: 200 },
    );
    expect(result.failed).toBe(true);
    const scenario = result.counterexample![0];
    console.log(
      `fair negative control (random retry, line ignored): after ${result.numRuns} runs: ${starved(scenario, await simulate(scenario, false, true)).join("; ")}`,
    );
  }, 600_000);

  it("nodes that grant as if nobody waited (the queue ignored) are caught overtaking waiters", async () => {
    const result = await fc.check(
      fc.asyncProperty(steadyClients, async (scenario) => (await simulate(scenario, true, true)).bypass.length === 0),
      { numRuns: 200 },
    );
    expect(result.failed).toBe(true);
    const outcome = await simulate(result.counterexample![0], true, true);
    console.log(`fair negative control (queue ignored): after ${result.numRuns} runs: ${outcome.bypass[0]}`);
  }, 600_000);

  it("nodes that take any ticket whatever its time let a client an hour behind overtake the others", async () => {
    const behind = scenarioArb.map((s) => ({
      ...s,
      clients: s.clients.map((c, i) => ({
        ...c,
        crashAt: undefined,
        stallAt: undefined,
        skewMs: i === 0 ? -3_600_000 : 0,
      })),
    }));
    const result = await fc.check(
      fc.asyncProperty(behind, async (scenario) => {
        const outcome = await simulate(scenario, true, false, { ignoreClock: true });
        return outcome.bypass.length === 0 && starved(scenario, outcome).length === 0;
      }),
      { numRuns: 200 },
    );
    expect(result.failed).toBe(true);
    const scenario = result.counterexample![0];
    const outcome = await simulate(scenario, true, false, { ignoreClock: true });
    console.log(
      `fair negative control (clock unchecked): after ${result.numRuns} runs: ${[...outcome.bypass, ...starved(scenario, outcome)][0]}`,
    );
  }, 600_000);
});
