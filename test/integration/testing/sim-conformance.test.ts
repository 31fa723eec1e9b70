// The simulator's nodes mirror the Lua scripts by hand: this runs the same operations on a real
// redis-server (the real scripts) and on a SimNode (virtual clock) and on the package's memoryNodes (real
// clock; `edge-redlock/testing/memory`), and requires the same replies and the same keys.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MemoryBackend } from "../../../dev/memory-backend.ts";
import { startMemoryCluster } from "../../../dev/memory-cluster.ts";
import { upstashNode, type RedlockNode } from "../../../src/index.ts";
import type { Script } from "../../../src/scripts/index.ts";
import {
  ACQUIRE,
  EXTEND,
  FAIR_ACQUIRE,
  FAIR_SEMAPHORE_ACQUIRE,
  FENCED_ACQUIRE,
  FENCED_RW_WRITE_ACQUIRE,
  INSPECT,
  LEAVE,
  REQUEUE,
  READERS_CLOCK_MEMBER,
  RELEASE,
  RW_INSPECT,
  RW_READ_ACQUIRE,
  RW_READ_EXTEND,
  RW_READ_RELEASE,
  RW_WRITE_ACQUIRE,
  SEMAPHORE_ACQUIRE,
  withoutKeyLocking,
} from "../../../src/scripts/index.ts";
import { SimNode } from "../../sim/sim-node.ts";
import { VirtualClock } from "../../sim/virtual-clock.ts";
import { memoryNodes, type MemoryNode } from "../../../src/testing/memory.ts";
import { useCluster, type Fixture } from "../fixture.ts";

const env = useCluster(1);
const NEVER = new AbortController().signal;
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
  [
    "acquire a held key",
    { a: { value: OTHER, ttl: 4000 } },
    { script: ACQUIRE, keys: ["a"], args: [MINE, "5000", "1"] },
  ],
  [
    "acquire two keys, one held",
    { b: { value: OTHER, ttl: 3000 } },
    { script: ACQUIRE, keys: ["a", "b"], args: [MINE, "5000", "2"] },
  ],
  [
    "fenced acquire of a free key",
    {},
    { script: FENCED_ACQUIRE, keys: ["a", "edge-redlock:fence:a"], args: [MINE, "5000", "1"] },
  ],
  ["extend to a longer ttl", { a: { value: MINE, ttl: 2000 } }, { script: EXTEND, keys: ["a"], args: [MINE, "6000"] }],
  [
    "extend to a shorter ttl: the key keeps its expiry",
    { a: { value: MINE, ttl: 6000 } },
    { script: EXTEND, keys: ["a"], args: [MINE, "1000"] },
  ],
  ["extend a key that is gone: nothing is created", {}, { script: EXTEND, keys: ["a"], args: [MINE, "5000"] }],
  [
    "extend a key held by another",
    { a: { value: OTHER, ttl: 4000 } },
    { script: EXTEND, keys: ["a"], args: [MINE, "5000"] },
  ],
  [
    "extend two keys, one gone",
    { a: { value: MINE, ttl: 4000 } },
    { script: EXTEND, keys: ["a", "b"], args: [MINE, "5000"] },
  ],
  [
    "extend two keys, one shorter",
    { a: { value: MINE, ttl: 8000 }, b: { value: MINE, ttl: 1000 } },
    { script: EXTEND, keys: ["a", "b"], args: [MINE, "5000"] },
  ],
  ["release mine", { a: { value: MINE, ttl: 4000 } }, { script: RELEASE, keys: ["a"], args: [MINE] }],
  ["release another's", { a: { value: OTHER, ttl: 4000 } }, { script: RELEASE, keys: ["a"], args: [MINE] }],
  [
    "release two keys, one mine",
    { a: { value: MINE, ttl: 4000 }, b: { value: OTHER, ttl: 4000 } },
    { script: RELEASE, keys: ["a", "b"], args: [MINE] },
  ],
  ["semaphore: take a free slot", {}, { script: SEMAPHORE_ACQUIRE, keys: ["a", "b"], args: [MINE, "5000", "2"] }],
  [
    "semaphore: the slot is held; the other is free",
    { a: { value: OTHER, ttl: 3000 } },
    { script: SEMAPHORE_ACQUIRE, keys: ["a", "b"], args: [MINE, "5000", "1"] },
  ],
  [
    "semaphore: full, the soonest expiry reported",
    { a: { value: OTHER, ttl: 3000 }, b: { value: MINE, ttl: 1500 } },
    { script: SEMAPHORE_ACQUIRE, keys: ["a", "b"], args: [MINE, "5000", "2"] },
  ],
  [
    "inspect: one key set, one free",
    { a: { value: OTHER, ttl: 3000 } },
    { script: INSPECT, keys: ["a", "b"], args: [] },
  ],
];

/** Replies with PTTLs bucketed and fences replaced (Redis' TIME and clock differ from the simulator's). */
function normalize(reply: unknown): unknown {
  if (!Array.isArray(reply)) return reply;
  if (reply[0] === 0 && typeof reply[1] === "number") return [0, reply[1] < 0 ? reply[1] : "pttl", ...reply.slice(2)];
  if (reply.some((entry) => Array.isArray(entry)))
    return reply.map((entry) => (Array.isArray(entry) ? [entry[0], "pttl"] : entry));
  if (reply[0] === 1 && reply.length === 2) return [1, "fence"];
  return reply;
}

/** Real time passes between the script and the PTTL read on Redis (more under load); the simulator's stands still. */
const PTTL_SLACK_MS = 250;
const samePttl = (simulated: number, real: number) =>
  simulated < 0 || real < 0 ? simulated === real : Math.abs(simulated - real) <= PTTL_SLACK_MS;

/** A node under test (its state set and read directly) and how one of its requests runs to the end. */
interface Subject {
  node: MemoryNode;
  run(script: Script, keys: string[], args: string[]): Promise<unknown>;
  /** Moves the node's clock on by `ms` (real time has passed already). */
  advance(ms: number): Promise<void>;
}

/** A memory node behind the project's bridge, reached over HTTP by @upstash/redis (`edge-redlock dev --memory`). */
let overHttp: { backend: MemoryBackend; remote: RedlockNode; stop(): Promise<void> } | undefined;
beforeAll(async () => {
  const cluster = await startMemoryCluster({ nodes: 1 });
  const { url, token } = cluster.nodes[0];
  overHttp = {
    backend: cluster.bridges[0].backend as MemoryBackend,
    remote: upstashNode({ url, token }, { batching: false }),
    stop: cluster.stop,
  };
});
afterAll(() => overHttp?.stop());

const subjects: [string, () => Subject][] = [
  [
    "the simulator's nodes (virtual clock)",
    () => {
      const clock = new VirtualClock();
      const node = new SimNode(clock, "sim");
      node.latency = 0;
      const run = (script: Script, keys: string[], args: string[]) => clock.run(node.run(script, keys, args, NEVER));
      return { node, run, advance: (ms) => clock.advance(ms) };
    },
  ],
  [
    "memoryNodes from edge-redlock/testing/memory (real clock)",
    () => {
      const [node] = memoryNodes(1);
      return { node, run: (script, keys, args) => node.run(script, keys, args, NEVER), advance: async () => {} };
    },
  ],
  [
    "memory nodes over HTTP (edge-redlock dev --memory: the bridge in front, @upstash/redis, EVALSHA/EVAL)",
    () => {
      const { backend, remote } = overHttp!;
      backend.restart();
      return {
        node: backend.node,
        run: (script, keys, args) => remote.run(script, keys, args, NEVER),
        advance: async () => {},
      };
    },
  ],
];

for (const [subject, make] of subjects) {
  describe(`${subject} behave like the real scripts on real Redis`, () => {
    for (const [name, setup, op] of cases) {
      it(name, async () => {
        const tcp = env.tcp[0];
        const { node: sim, run } = make();
        for (const [key, state] of Object.entries(setup)) {
          if (!state) continue;
          await tcp.set(key, state.value, "PX", state.ttl);
          sim.set(key, state.value, state.ttl);
        }
        const real = await tcp.eval(withoutKeyLocking(op.script.lua), op.keys.length, ...op.keys, ...op.args);
        const simulated = await run(op.script, op.keys, op.args);
        expect(normalize(simulated)).toEqual(normalize(real));
        for (const key of ["a", "b"]) {
          expect({ key, value: sim.get(key) ?? null }).toEqual({ key, value: await tcp.get(key) });
          const [simulatedPttl, realPttl] = [sim.pttl(key), await tcp.pttl(key)];
          expect(samePttl(simulatedPttl, realPttl), `${key}: simulator PTTL ${simulatedPttl}, Redis ${realPttl}`).toBe(
            true,
          );
        }
      });
    }
  });
}

// The fair scripts: sequences of steps (the wait queue is state that builds up), compared after every step:
// replies, the resource keys, and the queues' members (their deadlines within the PTTL slack).
const T1 = `0000001700000000${"a".repeat(16)}`;
const T2 = `0000001700000005${"0".repeat(16)}`;
const T3 = `0000001700000009${"f".repeat(16)}`;
const QA = "edge-redlock:queue:a";
const QB = "edge-redlock:queue:b";
const SEM = ["s0", "s1", "edge-redlock:queue:s"];
const fair = (value: string, ticket: string, keys = ["a", QA], enqueue = "1", lease = "300"): Op => ({
  script: FAIR_ACQUIRE,
  keys,
  args: [value, "5000", String(keys.length / 2), ticket, lease, enqueue],
});
const fairSem = (value: string, slot: number, ticket: string): Op => ({
  script: FAIR_SEMAPHORE_ACQUIRE,
  keys: SEM,
  args: [value, "5000", String(slot), ticket, "300", "1"],
});
const leave = (value: string, ticket: string, keys = ["a", QA]): Op => ({ script: LEAVE, keys, args: [value, ticket] });
const requeue = (value: string, ticket: string, keys = ["a", QA]): Op => ({
  script: REQUEUE,
  keys,
  args: [value, ticket, "300"],
});
type Step = Op | { set: string; value: string; ttl: number } | { del: string } | { sleep: number };

const sequences: [string, Step[]][] = [
  ["fair acquire of a free key with nobody waiting: granted, no queue", [fair(MINE, T1)]],
  [
    "fair acquire of a held key: refused with PTTL and place 0, queued",
    [{ set: "a", value: OTHER, ttl: 4000 }, fair(MINE, T2)],
  ],
  [
    "one try (no enqueue) of a held key: refused, nothing queued",
    [{ set: "a", value: OTHER, ttl: 4000 }, fair(MINE, T2, ["a", QA], "0")],
  ],
  [
    "a free key goes to the smaller ticket, whoever asks first",
    [
      { set: "a", value: OTHER, ttl: 4000 },
      fair(MINE, T1),
      fair("x-0123456789", T2),
      { del: "a" },
      fair("x-0123456789", T2),
      fair(MINE, T1),
      fair("x-0123456789", T2),
    ],
  ],
  [
    "a smaller ticket not yet queued here is first anyway",
    [{ set: "a", value: OTHER, ttl: 4000 }, fair("x-0123456789", T3), { del: "a" }, fair(MINE, T1)],
  ],
  [
    "an expired waiter no longer blocks",
    [
      { set: "a", value: OTHER, ttl: 4000 },
      fair(MINE, T1, ["a", QA], "1", "60"),
      { del: "a" },
      { sleep: 150 },
      fair("x-0123456789", T3),
    ],
  ],
  [
    "multi-resource: queued on both, blocked by the queue of one",
    [
      { set: "b", value: OTHER, ttl: 3000 },
      fair(MINE, T1, ["b", QB]),
      { del: "b" },
      fair("x-0123456789", T2, ["a", "b", QA, QB]),
      fair(MINE, T1, ["b", QB]),
    ],
  ],
  [
    "leave: releases the value and takes the ticket out",
    [
      { set: "a", value: OTHER, ttl: 4000 },
      fair(MINE, T1),
      fair("x-0123456789", T2),
      leave(MINE, T1),
      { del: "a" },
      fair("x-0123456789", T2),
      leave("x-0123456789", T2),
    ],
  ],
  [
    "requeue: releases the value and puts the granted ticket back first in line",
    [
      fair(MINE, T1),
      requeue(MINE, T1),
      fair("x-0123456789", T2),
      requeue("x-0123456789", T2),
      fair(MINE, T1),
      leave(MINE, T1),
    ],
  ],
  [
    "fair semaphore: one free slot, one waiter ahead: refused",
    [
      { set: "s0", value: OTHER, ttl: 3000 },
      { set: "s1", value: OTHER, ttl: 3000 },
      fairSem(MINE, 1, T1),
      { del: "s1" },
      fairSem("x-0123456789", 2, T2),
      fairSem(MINE, 2, T1),
    ],
  ],
  [
    "fair semaphore: two free slots, one waiter ahead: admitted",
    [
      { set: "s0", value: OTHER, ttl: 3000 },
      { set: "s1", value: OTHER, ttl: 3000 },
      fairSem(MINE, 1, T1),
      { del: "s1" },
      { del: "s0" },
      fairSem("x-0123456789", 1, T2),
    ],
  ],
];

for (const [subject, make] of subjects) {
  describe(`${subject}: their queues behave like the fair scripts on real Redis`, () => {
    for (const [name, steps] of sequences) {
      it(name, async () => {
        const tcp = env.tcp[0];
        const { node: sim, run, advance } = make();
        for (const [i, step] of steps.entries()) {
          if ("set" in step) {
            await tcp.set(step.set, step.value, "PX", step.ttl);
            sim.set(step.set, step.value, step.ttl);
            continue;
          }
          if ("del" in step) {
            await tcp.del(step.del);
            sim.delete(step.del);
            continue;
          }
          if ("sleep" in step) {
            await new Promise((resolve) => setTimeout(resolve, step.sleep));
            await advance(step.sleep);
            continue;
          }
          const real = await tcp.eval(withoutKeyLocking(step.script.lua), step.keys.length, ...step.keys, ...step.args);
          const simulated = await run(step.script, step.keys, step.args);
          expect({ step: i, reply: normalize(simulated) }).toEqual({ step: i, reply: normalize(real) });
          for (const key of ["a", "b", "s0", "s1"])
            expect({ step: i, key, value: sim.get(key) ?? null }).toEqual({ step: i, key, value: await tcp.get(key) });
          for (const queue of [QA, QB, SEM[2]]) {
            const realEntries = await tcp.zrange(queue, 0, -1, "WITHSCORES");
            const realMap = new Map<string, number>();
            for (let j = 0; j < realEntries.length; j += 2) realMap.set(realEntries[j], Number(realEntries[j + 1]));
            const simMap = sim.queue(queue) ?? new Map<string, number>();
            expect({ step: i, queue, waiters: [...simMap.keys()].sort() }).toEqual({
              step: i,
              queue,
              waiters: [...realMap.keys()].sort(),
            });
            for (const [ticket, deadline] of simMap)
              expect(Math.abs(deadline - realMap.get(ticket)!), `${queue} ${ticket} deadline`).toBeLessThanOrEqual(
                PTTL_SLACK_MS + 200,
              );
            const [simPttl, realPttl] = [sim.queuePttl(queue), await tcp.pttl(queue)];
            expect(samePttl(simPttl, realPttl), `${queue}: simulator PTTL ${simPttl}, Redis ${realPttl}`).toBe(true);
          }
        }
      });
    }
  });
}

// The read-write lock's scripts: a writer key, a reader set on its own PTTL clock, and the queue readers and
// writers share. Compared after every step: replies, the writer key, the live readers with their time left, the
// queue's members.
const RW = ["edge-redlock:rw:writer:d", "edge-redlock:rw:readers:d", "edge-redlock:rw:queue:d"];
const RW_FENCED = [...RW, "edge-redlock:rw:fence:d"];
const READER_B = "reader-b-0123456789";
const read = (value: string, ticket: string, ttl = "5000", enqueue = "1"): Op => ({
  script: RW_READ_ACQUIRE,
  keys: RW,
  args: [value, ttl, `${ticket}r`, "300", enqueue],
});
const write = (value: string, ticket: string, ttl = "5000", keys = RW): Op => ({
  script: keys.length === 4 ? FENCED_RW_WRITE_ACQUIRE : RW_WRITE_ACQUIRE,
  keys,
  args: [value, ttl, `${ticket}w`, "300", "1"],
});
const readExtend = (value: string, ttl: string): Op => ({ script: RW_READ_EXTEND, keys: [RW[1]], args: [value, ttl] });
const readRelease = (value: string, ticket?: string, lease?: string): Op => ({
  script: RW_READ_RELEASE,
  keys: ticket ? [RW[1], RW[2]] : [RW[1]],
  args: ticket ? [value, `${ticket}r`, ...(lease ? [lease] : [])] : [value],
});
const inspectRw: Op = { script: RW_INSPECT, keys: [RW[0], RW[1]], args: [] };

/** The live readers of a reader set on real Redis: value → ms left on the set's own clock. */
async function realReaders(tcp: Fixture["tcp"][number], key: string): Promise<Map<string, number>> {
  const left = await tcp.pttl(key);
  const live = new Map<string, number>();
  if (left < 0) return live;
  const all = await tcp.zrange(key, 0, -1, "WITHSCORES");
  const epoch = Number(all[all.indexOf(READERS_CLOCK_MEMBER) + 1]);
  const now = epoch - left;
  for (let j = 0; j < all.length; j += 2) {
    if (all[j] === READERS_CLOCK_MEMBER || Number(all[j + 1]) <= now) continue;
    live.set(all[j], Number(all[j + 1]) - now);
    // The set key never expires under a live reader: its expiry, on its own clock, is the clock member's score.
    expect(Number(all[j + 1]), "a reader outlives its set").toBeLessThanOrEqual(epoch);
  }
  return live;
}

/** An inspection reply with the readers' times left bucketed (the clocks differ by the time steps take). */
function normalizeRwReading(reply: unknown): unknown {
  if (!Array.isArray(reply) || reply.length !== 3 || !Array.isArray(reply[2])) return normalize(reply);
  const pairs: string[] = [];
  for (let i = 0; i < reply[2].length; i += 2) pairs.push(String(reply[2][i]));
  return [reply[0], reply[1] < 0 ? reply[1] : "pttl", pairs.sort()];
}

const rwSequences: [string, Step[]][] = [
  ["read of a free lock: granted, a reader set with one reader", [read(MINE, T1), inspectRw]],
  [
    "two readers share it; a writer is refused with the longest reader's time left",
    [read(MINE, T1, "5000"), read(READER_B, T2, "2000"), write(OTHER, T3), inspectRw],
  ],
  ["a writer holds it: a reader is refused with the writer's PTTL and queued", [write(OTHER, T1), read(MINE, T2)]],
  [
    "a waiting writer stops later readers; a reader ahead of it goes first",
    [
      write(OTHER, T2),
      read(MINE, T1),
      read(READER_B, T3),
      { del: RW[0] },
      read(READER_B, T3),
      read(MINE, T1),
      write(OTHER, T2),
    ],
  ],
  ["readers ahead do not stop a reader", [write(OTHER, T1), read(MINE, T2), { del: RW[0] }, read(READER_B, T3)]],
  [
    "a writer waits for the readers to go, then takes it",
    [read(MINE, T1), write(OTHER, T2), readRelease(MINE, T1), write(OTHER, T2), inspectRw],
  ],
  [
    "read extend: never shortens, lengthens, keeps the set alive",
    [read(MINE, T1, "1000"), readExtend(MINE, "500"), readExtend(MINE, "8000"), inspectRw],
  ],
  [
    "read extend of a reader that is gone creates nothing",
    [read(MINE, T1, "100"), { sleep: 250 }, readExtend(MINE, "5000"), readExtend(READER_B, "5000"), inspectRw],
  ],
  ["an expired reader no longer stops a writer", [read(MINE, T1, "100"), { sleep: 250 }, write(OTHER, T2)]],
  [
    "release of a reader that is not there: 0; of another's value: nothing taken",
    [read(MINE, T1), readRelease(READER_B), readRelease(MINE), readRelease(MINE)],
  ],
  ["fenced writer: the counter advances", [write(OTHER, T1, "5000", RW_FENCED)]],
  [
    "a reader's undo with a lease: released, its ticket back in line ahead of a later writer until it leaves",
    [
      read(MINE, T1),
      readRelease(MINE, T1, "300"),
      write(OTHER, T2),
      readRelease(MINE, T1),
      write(OTHER, T2),
      inspectRw,
    ],
  ],
  [
    "the set lives as long as its longest reader",
    [read(MINE, T1, "300"), read(READER_B, T2, "3000"), readRelease(READER_B), { sleep: 400 }, write(OTHER, T3)],
  ],
];

for (const [subject, make] of subjects) {
  describe(`${subject}: the read-write scripts behave as on real Redis`, () => {
    for (const [name, steps] of rwSequences) {
      it(name, async () => {
        const tcp = env.tcp[0];
        const { node: sim, run, advance } = make();
        for (const [i, step] of steps.entries()) {
          if ("set" in step || "del" in step) {
            if ("set" in step) {
              await tcp.set(step.set, step.value, "PX", step.ttl);
              sim.set(step.set, step.value, step.ttl);
            } else {
              await tcp.del(step.del);
              sim.delete(step.del);
            }
            continue;
          }
          if ("sleep" in step) {
            await new Promise((resolve) => setTimeout(resolve, step.sleep));
            await advance(step.sleep);
            continue;
          }
          const real = await tcp.eval(withoutKeyLocking(step.script.lua), step.keys.length, ...step.keys, ...step.args);
          const simulated = await run(step.script, step.keys, step.args);
          expect({ step: i, reply: normalizeRwReading(simulated) }).toEqual({
            step: i,
            reply: normalizeRwReading(real),
          });
          expect({ step: i, vote: step.script.vote(simulated).outcome }).toEqual({
            step: i,
            vote: step.script.vote(real).outcome,
          });
          expect({ step: i, writer: sim.get(RW[0]) ?? null }).toEqual({ step: i, writer: await tcp.get(RW[0]) });
          const [simReaders, redisReaders] = [sim.readers(RW[1]), await realReaders(tcp, RW[1])];
          expect({ step: i, readers: [...simReaders.keys()].sort() }).toEqual({
            step: i,
            readers: [...redisReaders.keys()].sort(),
          });
          for (const [reader, left] of simReaders)
            expect(
              samePttl(left, redisReaders.get(reader)!),
              `${reader}: simulator ${left} ms left, Redis ${redisReaders.get(reader)}`,
            ).toBe(true);
          const realQueue = await tcp.zrange(RW[2], 0, -1);
          const liveQueue = realQueue.length === 0 ? [] : realQueue;
          expect({ step: i, queue: [...(sim.queue(RW[2])?.keys() ?? [])].sort() }).toEqual({
            step: i,
            queue: liveQueue.sort(),
          });
        }
      });
    }
  });
}
