// The simulator's nodes mirror the Lua scripts by hand: this runs the same operations on a real
// redis-server (the real scripts) and on a SimNode (virtual clock) and on the package's memoryNodes (real
// clock; `edge-redlock/testing/memory`), and requires the same replies and the same keys.
import { describe, expect, it } from "vitest";
import type { Script } from "../../src/scripts/index.ts";
import { ACQUIRE, EXTEND, FENCED_ACQUIRE, INSPECT, RELEASE, SEMAPHORE_ACQUIRE, withoutKeyLocking } from "../../src/scripts/index.ts";
import { SimNode } from "../sim/sim-node.ts";
import { VirtualClock } from "../sim/virtual-clock.ts";
import { memoryNodes, type MemoryNode } from "../../src/testing/memory.ts";
import { useCluster } from "./fixture.ts";

const env = useCluster(1);
const MINE = "mine-0123456789";
const OTHER = "other-0123456789";

/** A starting state: per key, a value and its ttl (undefined: absent). */
type Setup = Record<string, { value: string; ttl: number } | undefined>;
interface Op {
  script: Script;
  keys: string[];
  args: string[];
}

const cases: [string, Setup, Op][] = [
  ["acquire a free key", {}, { script: ACQUIRE, keys: ["a"], args: [MINE, "5000", "1"] }],
  ["acquire a held key", { a: { value: OTHER, ttl: 4000 } }, { script: ACQUIRE, keys: ["a"], args: [MINE, "5000", "1"] }],
  ["acquire two keys, one held", { b: { value: OTHER, ttl: 3000 } }, { script: ACQUIRE, keys: ["a", "b"], args: [MINE, "5000", "2"] }],
  ["fenced acquire of a free key", {}, { script: FENCED_ACQUIRE, keys: ["a", "edge-redlock:fence:a"], args: [MINE, "5000", "1"] }],
  ["extend to a longer ttl", { a: { value: MINE, ttl: 2000 } }, { script: EXTEND, keys: ["a"], args: [MINE, "6000"] }],
  ["extend to a shorter ttl: the key keeps its expiry", { a: { value: MINE, ttl: 6000 } }, { script: EXTEND, keys: ["a"], args: [MINE, "1000"] }],
  ["extend a key that is gone: nothing is created", {}, { script: EXTEND, keys: ["a"], args: [MINE, "5000"] }],
  ["extend a key held by another", { a: { value: OTHER, ttl: 4000 } }, { script: EXTEND, keys: ["a"], args: [MINE, "5000"] }],
  ["extend two keys, one gone", { a: { value: MINE, ttl: 4000 } }, { script: EXTEND, keys: ["a", "b"], args: [MINE, "5000"] }],
  ["extend two keys, one shorter", { a: { value: MINE, ttl: 8000 }, b: { value: MINE, ttl: 1000 } }, { script: EXTEND, keys: ["a", "b"], args: [MINE, "5000"] }],
  ["release mine", { a: { value: MINE, ttl: 4000 } }, { script: RELEASE, keys: ["a"], args: [MINE] }],
  ["release another's", { a: { value: OTHER, ttl: 4000 } }, { script: RELEASE, keys: ["a"], args: [MINE] }],
  ["release two keys, one mine", { a: { value: MINE, ttl: 4000 }, b: { value: OTHER, ttl: 4000 } }, { script: RELEASE, keys: ["a", "b"], args: [MINE] }],
  ["semaphore: take a free slot", {}, { script: SEMAPHORE_ACQUIRE, keys: ["a", "b"], args: [MINE, "5000", "2"] }],
  ["semaphore: the slot is held; the other is free", { a: { value: OTHER, ttl: 3000 } }, { script: SEMAPHORE_ACQUIRE, keys: ["a", "b"], args: [MINE, "5000", "1"] }],
  ["semaphore: full, the soonest expiry reported", { a: { value: OTHER, ttl: 3000 }, b: { value: MINE, ttl: 1500 } }, { script: SEMAPHORE_ACQUIRE, keys: ["a", "b"], args: [MINE, "5000", "2"] }],
  ["inspect: one key set, one free", { a: { value: OTHER, ttl: 3000 } }, { script: INSPECT, keys: ["a", "b"], args: [] }],
];

/** Replies with PTTLs bucketed and fences replaced (Redis' TIME and clock differ from the simulator's). */
function normalize(reply: unknown): unknown {
  if (!Array.isArray(reply)) return reply;
  if (reply[0] === 0 && typeof reply[1] === "number") return [0, reply[1] < 0 ? reply[1] : "pttl", ...reply.slice(2)];
  if (reply.some((entry) => Array.isArray(entry))) return reply.map((entry) => (Array.isArray(entry) ? [entry[0], "pttl"] : entry));
  if (reply[0] === 1 && reply.length === 2) return [1, "fence"];
  return reply;
}

/** Real time passes between the script and the PTTL read on Redis (more under load); the simulator's stands still. */
const PTTL_SLACK_MS = 250;
const samePttl = (simulated: number, real: number) => (simulated < 0 || real < 0 ? simulated === real : Math.abs(simulated - real) <= PTTL_SLACK_MS);

/** A node under test and how to run one of its requests to the end. */
interface Subject {
  node: MemoryNode;
  settle<T>(reply: Promise<T>): Promise<T>;
}

const subjects: [string, () => Subject][] = [
  [
    "the simulator's nodes (virtual clock)",
    () => {
      const clock = new VirtualClock();
      const node = new SimNode(clock, "sim");
      node.latency = 0;
      return { node, settle: (reply) => clock.run(reply) };
    },
  ],
  ["memoryNodes from edge-redlock/testing/memory (real clock)", () => ({ node: memoryNodes(1)[0], settle: (reply) => reply })],
];

for (const [subject, make] of subjects) {
  describe(`${subject} behave like the real scripts on real Redis`, () => {
    for (const [name, setup, op] of cases) {
      it(name, async () => {
        const tcp = env.tcp[0];
        const { node: sim, settle } = make();
        for (const [key, state] of Object.entries(setup)) {
          if (!state) continue;
          await tcp.set(key, state.value, "PX", state.ttl);
          sim.set(key, state.value, state.ttl);
        }
        const real = await tcp.eval(withoutKeyLocking(op.script.lua), op.keys.length, ...op.keys, ...op.args);
        const simulated = await settle(sim.run(op.script, op.keys, op.args, new AbortController().signal));
        expect(normalize(simulated)).toEqual(normalize(real));
        for (const key of ["a", "b"]) {
          expect({ key, value: sim.get(key) ?? null }).toEqual({ key, value: await tcp.get(key) });
          const [simulatedPttl, realPttl] = [sim.pttl(key), await tcp.pttl(key)];
          expect(samePttl(simulatedPttl, realPttl), `${key}: simulator PTTL ${simulatedPttl}, Redis ${realPttl}`).toBe(true);
        }
      });
    }
  });
}
