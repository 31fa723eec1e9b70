// The fair-waiting scenarios of the simulator's property tests: clients that loop acquire → hold → release on one
// key, with crashes, stalls, unreachable nodes, skewed clocks and mixed modes, and what their runs show (overlaps,
// waits past a bound, bypasses). test/unit/fair/no-starvation.property.test.ts states the properties.
import fc from "fast-check";
import { Redlock, type Lock, type RedlockNode } from "../../src/index.ts";
import type { Clock } from "../../src/support/clock.ts";
import { CLOCK_STEP_MS } from "../../src/scripts/queue.ts";
import { simCluster } from "./sim-node.ts";
import { VirtualClock } from "./virtual-clock.ts";

export const NODE_TIMEOUT = 200;
export const TTL = 1_000;
export const HORIZON = 4_000;
/**
 * A stalled client runs nothing for this long: its requests go out, its replies and its timers are handled, only
 * once it thaws (a blocked event loop, a paused container).
 */
export const STALL_MS = 1_500;

export const clientArb = fc.record({
  startAt: fc.nat(300),
  hold: fc.integer({ min: 5, max: 60 }),
  /** Between a release and the next acquire: 0 is a client that asks again at once. */
  pause: fc.oneof(fc.constant(0), fc.nat(100)),
  skewMs: fc.oneof(
    { weight: 3, arbitrary: fc.integer({ min: -400, max: 400 }) },
    fc.constantFrom(-3_600_000, -10_000, 10_000, 3_600_000),
  ),
  /** Waits in line when woken (true), or retries at random (`fair: false`); `mode: "mixed"` runs draw this. */
  fair: fc.boolean(),
  /** Nodes this client cannot reach (at most two: its enqueue never lands there). */
  unreachable: fc.subarray([0, 1, 2, 3, 4], { maxLength: 2 }),
  /** Crashes at this virtual time (undefined: never): it stops sending and never leaves the line. */
  crashAt: fc.option(fc.integer({ min: 100, max: 2_500 }), { nil: undefined }),
  /** Its event loop stalls for {@link STALL_MS} at this virtual time (undefined: never). */
  stallAt: fc.option(fc.integer({ min: 100, max: 2_500 }), { nil: undefined }),
});
export const scenarioArb = fc.record({
  clients: fc.array(clientArb, { minLength: 2, maxLength: 5 }),
  latencies: fc.array(fc.integer({ min: 1, max: 25 }), { minLength: 5, maxLength: 40 }),
});
export type Scenario = typeof scenarioArb extends fc.Arbitrary<infer T> ? T : never;

export interface Outcome {
  overlap?: string;
  /** Per client: the longest it waited (ms) for one acquisition, including one still waiting at the end. */
  longestWait: number[];
  grants: number[];
  bound: number[];
  /** Grants to another client while this one waited, beyond what a clock skew lets it take (bounded bypass). */
  bypass: string[];
}

/**
 * How far ahead a client's tickets may sort for its clock: its skew while the nodes take its tickets (within
 * CLOCK_STEP_MS of their time); beyond, none, once the nodes refused it and it learned their time.
 */
export const effectiveSkew = (skewMs: number) => (Math.abs(skewMs) <= CLOCK_STEP_MS ? skewMs : 0);

/** Every client waits alike (`true`: fair, `false`: `fair: false`), or each as its spec says (`"mixed"`). */
export type Mode = boolean | "mixed";

export async function simulate(
  scenario: Scenario,
  mode: Mode,
  ignoreQueue = false,
  { ignoreClock = false } = {},
): Promise<Outcome> {
  const clock = new VirtualClock();
  const sims = simCluster(clock);
  let n = 0;
  for (const sim of sims) {
    sim.deliverLate = true;
    sim.ignoreQueue = ignoreQueue;
    sim.ignoreClock = ignoreClock;
    sim.latency = () => scenario.latencies[n++ % scenario.latencies.length];
  }
  const holds: { client: number; from: number; until: number; releasedAt?: number }[] = [];
  const outcome: Outcome = { longestWait: [], grants: [], bound: [], bypass: [] };
  const waits: { client: number; from: number; to: number }[] = [];
  const loops: Promise<void>[] = [];
  const crashes = scenario.clients.filter((c) => c.crashAt !== undefined).length;
  const stalls = scenario.clients.filter((c) => c.stallAt !== undefined).length;
  const maxSkew = Math.max(...scenario.clients.map((c) => Math.abs(effectiveSkew(c.skewMs))));
  // A client whose clock the nodes refuse learns their time from the refusal and asks again: one round more.
  const learning = scenario.clients.some((c) => effectiveSkew(c.skewMs) !== c.skewMs) ? 2 * NODE_TIMEOUT : 0;
  const maxHold = Math.max(...scenario.clients.map((c) => c.hold));

  scenario.clients.forEach((spec, client) => {
    outcome.longestWait[client] = 0;
    outcome.grants[client] = 0;
    // Served within: everyone else's hold (plus a handover) once, twice the skew, a crashed holder's ttl or a
    // crashed first-in-line waiter's claim window per crash, and a client that reaches only three nodes needs them all.
    outcome.bound[client] =
      scenario.clients.length * (maxHold + 120) +
      2 * maxSkew +
      (crashes + stalls) * (TTL + 400) +
      (spec.stallAt === undefined ? 0 : STALL_MS) +
      600 +
      learning;
    let crashed = false;
    const stop = new AbortController();
    if (spec.crashAt !== undefined)
      clock.schedule(spec.crashAt, () => {
        crashed = true;
        stop.abort(new Error("crashed"));
      });
    // Whatever would run during the stall runs once it is over.
    const thawed = async () => {
      if (spec.stallAt === undefined) return;
      const now = clock.now();
      if (now >= spec.stallAt && now < spec.stallAt + STALL_MS) await clock.sleep(spec.stallAt + STALL_MS - now);
    };
    const nodes: RedlockNode[] = sims.map((sim, i) => ({
      label: sim.label,
      async run(script, keys, args, signal) {
        await thawed();
        if (crashed || spec.unreachable.includes(i)) throw new TypeError("fetch failed");
        try {
          return await sim.run(script, keys, args, signal);
        } finally {
          await thawed();
        }
      },
    }));
    const skewed: Clock = {
      now: () => clock.now(),
      epoch: () => clock.epoch() + spec.skewMs,
      sleep: async (ms, signal) => {
        await clock.sleep(ms, signal);
        await thawed();
      },
      timeout: (ms) => clock.timeout(ms),
    };
    const fair = mode === "mixed" ? spec.fair : mode;
    const redlock = new Redlock(nodes, { clock: skewed, nodeTimeout: NODE_TIMEOUT, retryCount: -1, fair });
    const loop = async () => {
      await clock.sleep(spec.startAt);
      while (!crashed && clock.now() < HORIZON) {
        const asked = clock.now();
        let lock: Lock;
        try {
          lock = await redlock.acquire(["k"], TTL, { signal: stop.signal });
        } catch {
          outcome.longestWait[client] = Math.max(outcome.longestWait[client], clock.now() - asked);
          return;
        }
        outcome.longestWait[client] = Math.max(outcome.longestWait[client], clock.now() - asked);
        waits.push({ client, from: asked, to: clock.now() });
        outcome.grants[client]++;
        const held = {
          client,
          from: clock.now(),
          until: clock.now() + lock.validityMs,
          releasedAt: undefined as number | undefined,
        };
        holds.push(held);
        await skewed.sleep(spec.hold);
        if (crashed) return; // crashed while holding: never released, the key expires
        held.releasedAt = clock.now();
        await lock.release();
        if (spec.pause > 0) await skewed.sleep(spec.pause);
      }
    };
    loops.push(loop());
  });
  // The run ends at the horizon: whoever still waits is cut, and counted with how long it had waited.
  clock.schedule(HORIZON + 2_000, () => {});
  const all = Promise.all(loops);
  const ended = { done: false };
  void all.then(() => (ended.done = true));
  await clock.advance(HORIZON + 2_000);
  if (!ended.done) throw new Error("a client still waits 2 s after the horizon");
  await clock.drain();

  const end = (h: (typeof holds)[number]) => Math.min(h.releasedAt ?? Infinity, h.until);
  for (const a of holds)
    for (const b of holds)
      if (a !== b && a.from <= b.from && b.from < end(a))
        outcome.overlap ??= `client ${a.client} valid [${a.from}, ${end(a)}) and client ${b.client} from ${b.from}`;
  // While a client waits, another overtakes it at most once from before its ticket reached the nodes, once
  // in a handover race, and as often as its clock runs behind (its later tickets still sort first).
  for (const wait of waits) {
    const me = scenario.clients[wait.client];
    if (me.crashAt !== undefined || me.stallAt !== undefined || me.unreachable.length > 0) continue;
    scenario.clients.forEach((other, c) => {
      if (c === wait.client) return;
      const taken = holds.filter((h) => h.client === c && h.from > wait.from && h.from < wait.to).length;
      const ahead = effectiveSkew(me.skewMs) - effectiveSkew(other.skewMs);
      const allowed = 2 + Math.ceil(Math.max(0, ahead) / (other.hold + other.pause + 1));
      if (taken > allowed)
        outcome.bypass.push(
          `client ${c} got ${taken} grants (allowed ${allowed}) while client ${wait.client} waited [${wait.from}, ${wait.to})`,
        );
    });
  }
  return outcome;
}

/** The clients that keep asking (never crash) and wait longer than their bound. */
export function starved(scenario: Scenario, outcome: Outcome): string[] {
  return scenario.clients.flatMap((spec, client) =>
    spec.crashAt === undefined && outcome.longestWait[client] > outcome.bound[client]
      ? [
          `client ${client} waited ${outcome.longestWait[client]} ms (bound ${outcome.bound[client]}, ${outcome.grants[client]} grants)`,
        ]
      : [],
  );
}
