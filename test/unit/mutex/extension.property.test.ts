// Property: whatever order extension and release requests land in (late replies, requests the client
// gave up on that still land, extensions called while others are in flight, a release in the middle),
// (1) until the validity the library reported ends, a quorum of nodes keeps the key at least that long;
// (2) no extension reports success once release() was called; (3) after release() and its pending
// settle and every request has landed, no node holds the key.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Redlock, type Lock } from "../../../src/index.ts";
import { simCluster } from "../../sim/sim-node.ts";
import { VirtualClock } from "../../sim/virtual-clock.ts";

const NODE_TIMEOUT = 200;
const QUORUM = 3;
const CHECK_EVERY_MS = 10;

const scenarioArb = fc.record({
  ttl: fc.integer({ min: 1_000, max: 5_000 }),
  /** Extensions (some called while others are still in flight) and, one time in five, a release. */
  ops: fc.array(
    fc.record({ at: fc.nat(3_000), release: fc.nat(4).map((n) => n === 0), ttl: fc.integer({ min: 300, max: 5_000 }) }),
    { minLength: 1, maxLength: 10 },
  ),
  /** Latencies of extend and release requests, used in turn; above NODE_TIMEOUT the caller gives up but the request still lands. */
  latencies: fc.array(fc.oneof(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 41, max: 900 })), {
    minLength: 1,
    maxLength: 120,
  }),
});
type Scenario = typeof scenarioArb extends fc.Arbitrary<infer T> ? T : never;

interface Outcome {
  /** A reported validity that a quorum did not keep: [checked at, reported until, nodes keeping it]. */
  shortened?: [number, number, number];
  /** An extension that reported success although release() had been called before it resolved. */
  extendedAfterRelease: boolean;
  /** Nodes that still hold the key once everything settled after a release. */
  leftBehind: number;
  extensions: number;
  /** Requests that ran on their node after the client had given up on them. */
  lateDeliveries: number;
}

async function simulate(scenario: Scenario, legacyExtend = false): Promise<Outcome | undefined> {
  const clock = new VirtualClock();
  const nodes = simCluster(clock);
  let request = 0;
  for (const node of nodes) {
    node.deliverLate = true;
    node.legacyExtend = legacyExtend;
    node.latency = (r) =>
      r.script === "fair-acquire" ? 1 + (request % 7) : scenario.latencies[request++ % scenario.latencies.length];
  }
  const redlock = new Redlock(nodes, { clock, nodeTimeout: NODE_TIMEOUT, retryCount: 0 });
  let lock: Lock;
  try {
    lock = await clock.run(redlock.acquire(["k"], scenario.ttl));
  } catch {
    return undefined;
  }
  const outcome: Outcome = { extendedAfterRelease: false, leftBehind: 0, extensions: 0, lateDeliveries: 0 };
  const reported: number[] = [clock.now() + lock.validityMs];
  let released = false;
  const pending: Promise<unknown>[] = [];

  const check = () => {
    if (released || outcome.shortened) return;
    const now = clock.now();
    for (const until of reported) {
      if (until <= now) continue;
      const keeping = nodes.filter((n) => n.get("k") === lock.value && now + n.pttl("k") >= until).length;
      if (keeping < QUORUM) outcome.shortened = [now, until, keeping];
    }
  };
  const horizon = Math.max(...scenario.ops.map((op) => op.at)) + 6_000;
  for (let t = 0; t <= horizon; t += CHECK_EVERY_MS) clock.schedule(t, check);

  for (const op of scenario.ops) {
    clock.schedule(op.at, () => {
      if (op.release) {
        released = true;
        pending.push(lock.release().then((result) => result.pending));
        return;
      }
      pending.push(
        lock.extend(op.ttl).then(
          () => {
            if (released) outcome.extendedAfterRelease = true;
            else reported.push(clock.now() + lock.validityMs);
            outcome.extensions++;
          },
          () => {},
        ),
      );
    });
  }
  await clock.drain(); // every op, reply, late delivery and check has run
  await clock.run(Promise.all(pending));
  await clock.drain();
  if (released) outcome.leftBehind = nodes.filter((n) => n.get("k") === lock.value).length;
  outcome.lateDeliveries = nodes
    .flatMap((n) => n.requests)
    .filter((r) => r.cutAt !== undefined && r.ranAt !== undefined && r.ranAt > r.cutAt).length;
  return outcome;
}

describe("extension and release on the simulator (fast-check)", () => {
  it("a key outlives every validity reported for it, and a released lock stays released", async () => {
    const runs = Number(process.env.FC_RUNS ?? 150);
    let extensions = 0;
    let releases = 0;
    let late = 0;
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (scenario) => {
        const outcome = await simulate(scenario);
        if (!outcome) return;
        extensions += outcome.extensions;
        late += outcome.lateDeliveries;
        if (scenario.ops.some((op) => op.release)) releases++;
        expect(outcome.shortened).toBeUndefined();
        expect(outcome.extendedAfterRelease).toBe(false);
        expect(outcome.leftBehind).toBe(0);
      }),
      { numRuns: runs },
    );
    console.log(
      `extension property: ${runs} schedules, ${extensions} successful extensions, ${releases} schedules with a release, ${late} requests that landed after the client gave up`,
    );
    // Not a vacuous pass: schedules extended, released, and had requests land late.
    expect(extensions).toBeGreaterThan(runs / 2);
    expect(releases).toBeGreaterThan(runs / 4);
    expect(late).toBeGreaterThan(runs);
  });
});

describe("negative control", () => {
  it("with the extend script that always sets PX ttl (and re-seeds), the same property finds a counter-example", async () => {
    const broken = (outcome: Outcome | undefined) =>
      outcome !== undefined && (outcome.shortened !== undefined || outcome.leftBehind > 0);
    const result = await fc.check(
      fc.asyncProperty(scenarioArb, async (scenario) => !broken(await simulate(scenario, true))),
      { numRuns: 1_000 },
    );
    expect(result.failed).toBe(true);
    const outcome = (await simulate(result.counterexample![0], true))!;
    console.log(
      `negative control: counter-example after ${result.numRuns} runs (seed ${result.seed}, shrunk ${result.numShrinks} times): ` +
        (outcome.shortened
          ? `at t=${outcome.shortened[0]} only ${outcome.shortened[2]} nodes kept the key until t=${outcome.shortened[1]}, the end of a reported validity`
          : `${outcome.leftBehind} nodes held the key after the release settled`) +
        `; schedule ${JSON.stringify(result.counterexample![0])}`,
    );
    expect(broken(outcome)).toBe(true);
  });
});
