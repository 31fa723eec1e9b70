// The simulator's nodes mirror the Lua scripts by hand: this runs the same operations on a real
// redis-server (the real scripts) and on a SimNode (virtual clock) and on the package's memoryNodes (real
// clock; `edge-redlock/testing/memory`), and requires the same replies, the same keys, the same lines (members,
// deadlines, the line key's PTTL) and the same wakeups on the same channels, failures included.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MemoryBackend } from "../../../dev/memory-backend.ts";
import { startMemoryCluster } from "../../../dev/memory-cluster.ts";
import { upstashNode, type RedlockNode } from "../../../src/index.ts";
import { wakeChannel } from "../../../src/lock/waker.ts";
import type { Script } from "../../../src/scripts/index.ts";
import {
  ACQUIRE,
  CLOCK_STEP_MS,
  EXTEND,
  FAIR_ACQUIRE,
  FAIR_SEMAPHORE_ACQUIRE,
  FENCED_ACQUIRE,
  FENCED_FAIR_ACQUIRE,
  FENCED_RW_WRITE_ACQUIRE,
  INSPECT,
  LEAVE,
  LINE_LINGER_MS,
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
import { memoryNodes, type MemoryNode } from "../../../src/testing/memory.ts";
import { SimNode } from "../../sim/sim-node.ts";
import { VirtualClock } from "../../sim/virtual-clock.ts";
import { LINE_KEEP_STEP_MS } from "../../../src/scripts/queue.ts";
import { useCluster, type Fixture } from "../fixture.ts";

const env = useCluster(1);
const NEVER = new AbortController().signal;
const MINE = "mine-0123456789";
const OTHER = "other-0123456789";
const X = "x-0123456789";

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

/** Anything above this is a time of day (ms since 1970), not a PTTL or a count. */
const EPOCH_FLOOR = 1e12;

/** Replies with PTTLs bucketed, node times and fences replaced (compared apart: the clocks differ by the steps' time). */
function normalize(reply: unknown): unknown {
  if (!Array.isArray(reply)) return reply;
  const time = (entry: unknown) => (typeof entry === "number" && entry > EPOCH_FLOOR ? "time" : entry);
  if (reply[0] === 0 && typeof reply[1] === "number")
    return [0, reply[1] < 0 ? reply[1] : "pttl", ...reply.slice(2).map(time)];
  if (reply.some((entry) => Array.isArray(entry)))
    return reply.map((entry) => (Array.isArray(entry) ? [entry[0], "pttl"] : entry));
  if (reply[0] === 1 && reply.length === 2) return [1, "fence"];
  return reply;
}

/** The node times a reply carries (a ticket out of step is refused with the node's `TIME`). */
const timesOf = (reply: unknown): number[] =>
  Array.isArray(reply)
    ? reply.filter((entry): entry is number => typeof entry === "number" && entry > EPOCH_FLOOR)
    : [];

/** Real time passes between the script and the PTTL read on Redis (more under load); the simulator's stands still. */
const PTTL_SLACK_MS = 250;
const samePttl = (simulated: number, real: number) =>
  simulated < 0 || real < 0 ? simulated === real : Math.abs(simulated - real) <= PTTL_SLACK_MS;
/**
 * A line key expires at the step above its last deadline: deadlines a few ms apart on the two nodes may straddle a
 * step, so the two expiries are the same step or one step apart, each within the read's slack.
 */
const sameLinePttl = (simulated: number, real: number) =>
  samePttl(simulated, real) ||
  (simulated >= 0 && real >= 0 && Math.abs(Math.abs(simulated - real) - LINE_KEEP_STEP_MS) <= PTTL_SLACK_MS);
/** Deadlines are times of day on each node's clock: they differ by the time between the two runs of a step. */
const DEADLINE_SLACK_MS = PTTL_SLACK_MS + 200;

/** A node under test (its state set and read directly), how one of its requests runs, and how it is heard. */
interface Subject {
  node: MemoryNode;
  run(script: Script, keys: string[], args: string[]): Promise<unknown>;
  /** Real time has passed: the node's clock catches up (a virtual clock moves on by as much). */
  sync(): Promise<void>;
  /** Subscribes to `channel` until `signal` aborts; resolves once subscribed. */
  listen(channel: string, onMessage: (message: string) => void, signal: AbortSignal): Promise<void>;
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
      // Its TIME reads the wall clock's time now, then moves on with the virtual clock, which follows real time.
      node.clockSkewMs = Date.now() - clock.epoch();
      let synced = Date.now();
      const sync = async () => {
        const now = Date.now();
        await clock.advance(now - synced);
        synced = now;
      };
      return {
        node,
        run: (script, keys, args) => clock.run(node.run(script, keys, args, NEVER)),
        sync,
        listen: async (channel, onMessage, signal) =>
          void (await clock.run(node.subscribe(channel, onMessage, signal))),
      };
    },
  ],
  [
    "memoryNodes from edge-redlock/testing/memory (real clock)",
    () => {
      const [node] = memoryNodes(1);
      return {
        node,
        run: (script, keys, args) => node.run(script, keys, args, NEVER),
        sync: async () => {},
        listen: async (channel, onMessage, signal) => void (await node.subscribe(channel, onMessage, signal)),
      };
    },
  ],
  [
    "memory nodes over HTTP (edge-redlock dev --memory: the bridge in front, @upstash/redis, EVALSHA/EVAL, SSE)",
    () => {
      const { backend, remote } = overHttp!;
      backend.restart();
      return {
        node: backend.node,
        run: (script, keys, args) => remote.run(script, keys, args, NEVER),
        sync: async () => {},
        listen: async (channel, onMessage, signal) => void (await remote.subscribe!(channel, onMessage, signal)),
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

// The fair scripts: sequences of steps (the lines are state that builds up), compared after every step: replies,
// the resource keys, the lines (members, deadlines within the slack, the line key's PTTL) and the readers; and at
// the end, every wakeup published on the lines' channels, in order.
const LA = "edge-redlock:line:a";
const LB = "edge-redlock:line:b";
const LS = "edge-redlock:semaphore-line:s";
const SEM = ["s0", "s1", LS];
const RW = ["edge-redlock:rw:writer:d", "edge-redlock:rw:readers:d", "edge-redlock:rw:line:d"];
const RW_FENCED = [...RW, "edge-redlock:rw:fence:d"];
const LINES = [LA, LB, LS, RW[2]];
const KEYS = ["a", "b", "s0", "s1", RW[0]];
/** How long an entry lives in these sequences unless a step says otherwise (ms). */
const LIFE = 3000;
/** How long the tickets' waiters have to claim once woken (ms): long enough for a few steps under load. */
const CLAIM = 500;
/** How far OLD and NEW are from the clocks (ms): out of step unless their age says so. */
const STEP_OUT = 5 * CLOCK_STEP_MS;
const AGE_IN_STEP = String(STEP_OUT);

/**
 * The tickets of one sequence, taken when it starts (they must be in step with the nodes' clocks): T1 < T2 < T3 < T4,
 * OLD taken STEP_OUT ago (out of step unless its age says so), NEW STEP_OUT ahead.
 */
interface Tickets {
  T1: string;
  T2: string;
  T3: string;
  T4: string;
  OLD: string;
  NEW: string;
}
function tickets(): Tickets {
  const now = Date.now();
  const at = (ms: number, hex: string) =>
    `${String(ms).padStart(16, "0")}${hex.repeat(16)}${String(CLAIM).padStart(5, "0")}`;
  return {
    T1: at(now - 40, "1"),
    T2: at(now - 30, "2"),
    T3: at(now - 20, "3"),
    T4: at(now - 10, "4"),
    OLD: at(now - STEP_OUT, "0"),
    NEW: at(now + STEP_OUT, "f"),
  };
}

/** OTHER holds "a" with T1 then T2 in line; OTHER lets go (its LEAVE, with T3): T1 is told to claim, T2 is next. */
const releasedBehindLine = (T1: string, T2: string, T3: string): Step[] => [
  { set: "a", value: OTHER, ttl: 4000 },
  fair(MINE, T1),
  fair(X, T2),
  leave(OTHER, T3),
];

/** `ticket` with a claim window of `ms` (the 5 digits after its 32). */
const windowOf = (ticket: string, ms: number) => ticket.slice(0, 32) + String(ms).padStart(5, "0");

interface FairOptions {
  keys?: string[];
  join?: string;
  life?: string;
  age?: string;
}
const fair = (
  value: string,
  ticket: string | undefined,
  { keys = ["a", LA], join = "1", life = String(LIFE), age = "0" }: FairOptions = {},
): Op => ({
  script: keys.length % 2 === 1 ? FENCED_FAIR_ACQUIRE : FAIR_ACQUIRE,
  keys,
  args: [
    value,
    "5000",
    String(Math.floor(keys.length / 2)),
    ...(ticket === undefined ? [] : [ticket, life, join, age]),
  ],
});
const fairSem = (value: string, slot: number, ticket: string, { join = "1", age = "0" }: FairOptions = {}): Op => ({
  script: FAIR_SEMAPHORE_ACQUIRE,
  keys: SEM,
  args: [value, "5000", String(slot), ticket, String(LIFE), join, age],
});
const leave = (value: string, ticket: string, keys = ["a", LA]): Op => ({ script: LEAVE, keys, args: [value, ticket] });
const requeue = (value: string, ticket: string, keys = ["a", LA], life: string[] = [String(LIFE)]): Op => ({
  script: REQUEUE,
  keys,
  args: [value, ticket, ...life],
});
const read = (
  value: string,
  ticket: string,
  { life = String(LIFE), join = "1", age = "0" }: FairOptions = {},
  ttl = "5000",
): Op => ({
  script: RW_READ_ACQUIRE,
  keys: RW,
  args: [value, ttl, `${ticket}r`, life, join, age],
});
const write = (value: string, ticket: string, keys = RW, ttl = "5000"): Op => ({
  script: keys.length === 4 ? FENCED_RW_WRITE_ACQUIRE : RW_WRITE_ACQUIRE,
  keys,
  args: [value, ttl, `${ticket}w`, String(LIFE), "1", "0"],
});
const readExtend = (value: string, ttl: string): Op => ({ script: RW_READ_EXTEND, keys: [RW[1]], args: [value, ttl] });
/** A reader's release: with a member, out of the line too (or back in with `life`); `writer` names the writer key. */
const readRelease = (value: string, ticket?: string, life?: string, writer = false): Op => ({
  script: RW_READ_RELEASE,
  keys: ticket ? [RW[1], RW[2], ...(writer ? [RW[0]] : [])] : [RW[1]],
  args: ticket ? [value, `${ticket}r`, ...(life ? [life] : [])] : [value],
});
const inspectRw: Op = { script: RW_INSPECT, keys: [RW[0], RW[1]], args: [] };

/** What real Redis holds at a step, for a sequence's own checks. */
interface RealState {
  /** Per line: member → deadline (epoch ms). */
  lines: Record<string, Map<string, number>>;
  /** Per line: the key's PTTL. */
  linePttls: Record<string, number>;
  /** Redis' TIME (ms), read after the step. */
  now: number;
}
type Step =
  | Op
  | { fails: Op }
  | { set: string; value: string; ttl: number }
  | { del: string }
  | { sleep: number }
  | { check: (real: RealState) => void };
/** A sequence: its steps, and what the wakeups heard on real Redis must be (line key → payloads, in order). */
type Sequence = (t: Tickets) => { steps: Step[]; wakeups?: Record<string, string[]> };

/** A ticket's deadline on real Redis is `ms` from its time, give or take the time a step takes. */
const deadlineIn = (real: RealState, line: string, member: string, ms: number) => {
  const left = real.lines[line].get(member)! - real.now;
  expect(left, `${member} in ${line}: ${left} ms left, not about ${ms}`).toBeLessThanOrEqual(ms);
  expect(left).toBeGreaterThan(ms - PTTL_SLACK_MS);
};

const sequences: [string, Sequence][] = [
  [
    "fair acquire of a free key with nobody waiting: granted, no line",
    ({ T1 }) => ({ steps: [fair(MINE, T1)], wakeups: { [LA]: [] } }),
  ],
  [
    "fair acquire of a held key: refused with PTTL and place 0; joins with a deadline one life away, the line key lives 5 to 6 s past it",
    ({ T2 }) => ({
      steps: [
        { set: "a", value: OTHER, ttl: 4000 },
        fair(MINE, T2),
        {
          check: (real) => {
            deadlineIn(real, LA, T2, LIFE);
            expect(real.linePttls[LA]).toBeGreaterThan(LIFE + LINE_LINGER_MS - PTTL_SLACK_MS);
            expect(real.linePttls[LA]).toBeLessThanOrEqual(LIFE + LINE_LINGER_MS + LINE_KEEP_STEP_MS);
          },
        },
      ],
      wakeups: { [LA]: [] },
    }),
  ],
  [
    "the line key lives 5 to 6 s past its last deadline, whichever entry was refreshed last",
    ({ T1, T2 }) => ({
      steps: [
        { set: "a", value: OTHER, ttl: 4000 },
        fair(MINE, T1, { life: "6000" }),
        fair(X, T2, { life: "500" }),
        { check: (real) => expect(real.linePttls[LA]).toBeGreaterThan(6000 + LINE_LINGER_MS - PTTL_SLACK_MS) },
      ],
    }),
  ],
  [
    "one try (join 0) of a held key: refused, nothing queued",
    ({ T2 }) => ({ steps: [{ set: "a", value: OTHER, ttl: 4000 }, fair(MINE, T2, { join: "0" })] }),
  ],
  [
    "a free key goes to the smaller ticket: the refused asker wakes the head, whose deadline shrinks to its claim window",
    ({ T1, T2 }) => ({
      steps: [
        { set: "a", value: OTHER, ttl: 4000 },
        fair(MINE, T1),
        fair(X, T2),
        { del: "a" },
        fair(X, T2),
        { check: (real) => deadlineIn(real, LA, T1, CLAIM) },
        fair(MINE, T1),
        fair(X, T2),
      ],
      wakeups: { [LA]: [`1 ${T1} ${T2}`, `0 ${T2} +5000`] },
    }),
  ],
  [
    "a release wakes a head whose entry ends within its claim window, and tells the next in line it is next",
    ({ T1, T2, T3 }) => ({
      // The head's entry ends 300 ms on, inside its 500 ms window: were it dead and the release silent, the next in
      // line would wait for the holder's whole ttl.
      steps: [{ set: "a", value: OTHER, ttl: 4000 }, fair(MINE, T1, { life: "300" }), fair(X, T2), leave(OTHER, T3)],
      wakeups: { [LA]: [`1 ${T1} ${T2}`] },
    }),
  ],
  [
    "a waiter refused by the line alone, asking again before the told head's window is over, repeats no wakeup",
    ({ T1, T2, T3 }) => {
      // T3 asks again 100 ms on, before T1's entry (500 ms, set by the release) is over: this refusal repeats
      // nothing, and its next ask decides again.
      return {
        steps: [
          ...releasedBehindLine(T1, T2, T3),
          fair(OTHER, windowOf(T3, 100)),
          { check: (real) => deadlineIn(real, LA, T1, CLAIM) },
        ],
        wakeups: { [LA]: [`1 ${T1} ${T2}`] },
      };
    },
  ],
  [
    "a waiter refused by the line alone whose window outlasts the told head's repeats the wakeup; so does a one-try",
    ({ T1, T2, T3 }) => {
      // T3 would ask again 2 s on, long after T1's entry is over: were T1 dead, T2 must hear it is next now.
      return {
        steps: [
          ...releasedBehindLine(T1, T2, T3),
          fair(OTHER, windowOf(T3, 2000)),
          fair(OTHER, windowOf(T3, 100), { join: "0" }),
        ],
        wakeups: { [LA]: [`1 ${T1} ${T2}`, `1 ${T1} ${T2}`, `1 ${T1} ${T2}`] },
      };
    },
  ],
  [
    "the head's claim window lapses: the next in line is served",
    ({ T1, T2 }) => ({
      steps: [
        { set: "a", value: OTHER, ttl: 4000 },
        fair(MINE, T1),
        fair(X, T2),
        { del: "a" },
        fair(X, T2),
        { sleep: CLAIM + 100 },
        fair(X, T2),
      ],
      wakeups: { [LA]: [`1 ${T1} ${T2}`] },
    }),
  ],
  [
    "a smaller ticket not yet queued here is first anyway",
    ({ T1, T3 }) => ({
      steps: [{ set: "a", value: OTHER, ttl: 4000 }, fair(X, T3), { del: "a" }, fair(MINE, T1)],
      wakeups: { [LA]: [`0 ${T3} +5000`] },
    }),
  ],
  [
    "an expired waiter no longer blocks",
    ({ T1, T3 }) => ({
      steps: [
        { set: "a", value: OTHER, ttl: 4000 },
        fair(MINE, T1, { life: "60" }),
        { del: "a" },
        { sleep: 150 },
        fair(X, T3),
      ],
    }),
  ],
  [
    "multi-resource: queued on both, blocked by the line of one; each free line is woken",
    ({ T1, T2 }) => ({
      steps: [
        { set: "b", value: OTHER, ttl: 3000 },
        fair(MINE, T1, { keys: ["b", LB] }),
        { del: "b" },
        fair(X, T2, { keys: ["a", "b", LA, LB] }),
        fair(MINE, T1, { keys: ["b", LB] }),
      ],
      wakeups: { [LA]: [`1 ${T2}`], [LB]: [`1 ${T1} ${T2}`, `0 ${T2} +5000`] },
    }),
  ],
  [
    "fenced fair acquire: the counter advances",
    ({ T1 }) => ({ steps: [fair(MINE, T1, { keys: ["a", LA, "edge-redlock:fence:a"] })] }),
  ],
  [
    "leave: releases the value, takes the ticket out, and wakes the head of the freed resource",
    ({ T1, T2, T3 }) => ({
      steps: [
        fair(MINE, T1),
        fair(X, T2),
        fair(OTHER, T3),
        leave(MINE, T1),
        { check: (real) => deadlineIn(real, LA, T2, CLAIM) },
        fair(X, T2),
        leave(X, T2),
      ],
      wakeups: { [LA]: [`1 ${T2} ${T3}`, `0 ${T3} +5000`, `1 ${T3}`] },
    }),
  ],
  [
    "requeue: releases the value and puts the granted ticket back first in line, woken to claim",
    ({ T1, T2 }) => {
      // X's claim window (100 ms) ends before T1's (500 ms): its refusal by the line alone repeats no wakeup, since T1
      // was told and X asks again itself once T1's entry is over.
      const X2 = windowOf(T2, 100);
      return {
        steps: [fair(MINE, T1), requeue(MINE, T1), fair(X, X2), requeue(X, X2), fair(MINE, T1), leave(MINE, T1)],
        wakeups: { [LA]: [`1 ${T1}`, `1 ${T1} ${X2}`, `0 ${X2} +5000`, `1 ${X2}`] },
      };
    },
  ],
  [
    "clock refusal: a ticket out of step is refused with the node's time where someone waits, and not queued",
    ({ T2, OLD, NEW }) => ({
      steps: [
        { set: "a", value: OTHER, ttl: 4000 },
        fair(X, T2),
        fair(MINE, OLD),
        fair(MINE, NEW),
        fair(MINE, OLD, { age: AGE_IN_STEP }),
        fair(MINE, OLD),
        { del: "a" },
        fair(MINE, OLD),
      ],
    }),
  ],
  [
    "clock refusal: on a held key a ticket out of step is refused when it would join, not on one try",
    ({ OLD }) => ({ steps: [{ set: "a", value: OTHER, ttl: 4000 }, fair(MINE, OLD, { join: "0" }), fair(MINE, OLD)] }),
  ],
  [
    "a ticket out of step where nobody waits and the key is free is granted",
    ({ OLD }) => ({ steps: [fair(MINE, OLD)] }),
  ],
  [
    "requeue without a life fails at the first line, after releasing the first resource",
    ({ T1 }) => ({
      steps: [fair(MINE, T1, { keys: ["a", "b", LA, LB] }), { fails: requeue(MINE, T1, ["a", "b", LA, LB], []) }],
    }),
  ],
  [
    "requeue with a life that is no number fails alike",
    ({ T1 }) => ({ steps: [fair(MINE, T1), { fails: requeue(MINE, T1, ["a", LA], ["abc"]) }] }),
  ],
  [
    "fair acquire without a ticket fails where someone waits",
    ({ T2 }) => ({ steps: [{ set: "a", value: OTHER, ttl: 4000 }, fair(X, T2), { fails: fair(MINE, undefined) }] }),
  ],
  [
    "fair acquire with a life that is no number fails when it joins",
    ({ T2 }) => ({ steps: [{ set: "a", value: OTHER, ttl: 4000 }, { fails: fair(MINE, T2, { life: "soon" }) }] }),
  ],
  [
    "fair semaphore: one free slot, one waiter ahead: refused, the head is woken; the head's grant says who is next",
    ({ T1, T2 }) => ({
      steps: [
        { set: "s0", value: OTHER, ttl: 3000 },
        { set: "s1", value: OTHER, ttl: 3000 },
        fairSem(MINE, 1, T1),
        { del: "s1" },
        fairSem(X, 2, T2),
        fairSem(MINE, 2, T1),
      ],
      wakeups: { [LS]: [`1 ${T1} ${T2}`, `0 ${T2}`] },
    }),
  ],
  [
    "fair semaphore: two free slots, one waiter ahead: admitted, and the head is woken for the other",
    ({ T1, T2 }) => ({
      steps: [
        { set: "s0", value: OTHER, ttl: 3000 },
        { set: "s1", value: OTHER, ttl: 3000 },
        fairSem(MINE, 1, T1),
        { del: "s1" },
        { del: "s0" },
        fairSem(X, 1, T2),
      ],
      wakeups: { [LS]: [`1 ${T1}`] },
    }),
  ],
  [
    "fair semaphore: a ticket out of step is refused with the node's time",
    ({ T2, OLD }) => ({
      steps: [
        { set: "s0", value: OTHER, ttl: 3000 },
        { set: "s1", value: OTHER, ttl: 3000 },
        fairSem(X, 1, T2),
        fairSem(MINE, 1, OLD),
        fairSem(MINE, 1, OLD, { age: AGE_IN_STEP }),
      ],
    }),
  ],
  // The read-write lock: a writer key, a reader set on its own PTTL clock, and the line readers and writers share.
  ["read of a free lock: granted, a reader set with one reader", ({ T1 }) => ({ steps: [read(MINE, T1), inspectRw] })],
  [
    "two readers share it; a writer is refused with the longest reader's time left",
    ({ T1, T2, T3 }) => ({
      steps: [read(MINE, T1), read(X, T2, {}, "2000"), write(OTHER, T3), inspectRw],
      wakeups: { [RW[2]]: [] },
    }),
  ],
  [
    "a writer holds it: a reader is refused with the writer's PTTL and queued",
    ({ T1, T2 }) => ({ steps: [write(OTHER, T1), read(MINE, T2)] }),
  ],
  [
    "a waiting writer stops later readers; a reader ahead of it goes first",
    ({ T1, T2, T3 }) => ({
      steps: [
        write(OTHER, T2),
        read(MINE, T1),
        read(X, T3),
        { del: RW[0] },
        read(X, T3),
        read(MINE, T1),
        write(OTHER, T2),
      ],
    }),
  ],
  [
    "readers ahead do not stop a reader",
    ({ T1, T2, T3 }) => ({ steps: [write(OTHER, T1), read(MINE, T2), { del: RW[0] }, read(X, T3)] }),
  ],
  [
    "a writer waits for the readers to go, then takes it",
    ({ T1, T2 }) => ({ steps: [read(MINE, T1), write(OTHER, T2), readRelease(MINE, T1), write(OTHER, T2), inspectRw] }),
  ],
  [
    "rw claimers: a run of readers at the head is woken together; a writer at the head waits while readers hold",
    ({ T1, T2, T3, T4 }) => ({
      steps: [
        write(OTHER, T4),
        read(MINE, T1),
        read(X, T2),
        write(OTHER, T3),
        { del: RW[0] },
        write(OTHER, T3),
        {
          check: (real) => {
            deadlineIn(real, RW[2], `${T1}r`, CLAIM);
            deadlineIn(real, RW[2], `${T2}r`, CLAIM);
          },
        },
        read(MINE, T1),
        read(X, T2),
        write(OTHER, T3),
        readRelease(MINE, T1, undefined, true),
        readRelease(X, T2, undefined, true),
        write(OTHER, T3),
      ],
      wakeups: { [RW[2]]: [`2 ${T1}r ${T2}r ${T3}w`, `1 ${T2}r ${T3}w`, `0 ${T3}w`, `1 ${T3}w`] },
    }),
  ],
  [
    "rw: a ticket out of step is refused with the node's time",
    ({ T2, OLD }) => ({
      steps: [write(OTHER, T2), read(MINE, OLD), read(MINE, OLD, { age: AGE_IN_STEP }), write(X, OLD)],
    }),
  ],
  [
    "read extend: never shortens, lengthens, keeps the set alive",
    ({ T1 }) => ({ steps: [read(MINE, T1, {}, "1000"), readExtend(MINE, "500"), readExtend(MINE, "8000"), inspectRw] }),
  ],
  [
    "read extend of a reader that is gone creates nothing",
    ({ T1 }) => ({
      steps: [read(MINE, T1, {}, "100"), { sleep: 250 }, readExtend(MINE, "5000"), readExtend(X, "5000"), inspectRw],
    }),
  ],
  [
    "an expired reader no longer stops a writer",
    ({ T1, T2 }) => ({ steps: [read(MINE, T1, {}, "100"), { sleep: 250 }, write(OTHER, T2)] }),
  ],
  [
    "release of a reader that is not there: 0; of another's value: nothing taken",
    ({ T1 }) => ({ steps: [read(MINE, T1), readRelease(X), readRelease(MINE), readRelease(MINE)] }),
  ],
  ["fenced writer: the counter advances", ({ T1 }) => ({ steps: [write(OTHER, T1, RW_FENCED)] })],
  [
    "a reader's undo with a life: released, its ticket back in line ahead of a later writer until it leaves",
    ({ T1, T2 }) => ({
      steps: [
        read(MINE, T1),
        readRelease(MINE, T1, "300"),
        write(OTHER, T2),
        readRelease(MINE, T1),
        write(OTHER, T2),
        inspectRw,
      ],
    }),
  ],
  [
    "a reader's undo with a life that is no number fails after the reader left",
    ({ T1 }) => ({ steps: [read(MINE, T1), { fails: readRelease(MINE, T1, "abc") }, inspectRw] }),
  ],
  [
    "the set lives as long as its longest reader",
    ({ T1, T2, T3 }) => ({
      steps: [read(MINE, T1, {}, "300"), read(X, T2, {}, "3000"), readRelease(X), { sleep: 400 }, write(OTHER, T3)],
    }),
  ],
];

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

/** Runs `reply` to its end: `{ ok }` or `{ error }`. */
const settle = (reply: Promise<unknown>) =>
  reply.then(
    (ok) => ({ ok }),
    (error: unknown) => ({ error: String(error) }),
  );

/** Waits until `ready` holds (every 5 ms), at most `ms`. */
async function until(ready: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ready() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
}

/** What was heard on each line's channel, in order. */
type Heard = Record<string, string[]>;

for (const [subject, make] of subjects) {
  describe(`${subject}: their lines behave like the fair scripts on real Redis`, () => {
    for (const [name, sequence] of sequences) {
      it(name, async () => {
        const tcp = env.tcp[0];
        const sub = make();
        const sim = sub.node;
        // Subscribed on both backends before the first step: real Redis through its bridge, as waiters listen.
        const { url, token } = env.cluster.nodes[0];
        const redis = upstashNode({ url, token }, { batching: false });
        const stop = new AbortController();
        const heard: { real: Heard; sim: Heard } = { real: {}, sim: {} };
        for (const line of LINES) {
          const channel = await wakeChannel(line);
          heard.real[line] = [];
          heard.sim[line] = [];
          await redis.subscribe!(channel, (message) => heard.real[line].push(message), stop.signal);
          await sub.listen(channel, (message) => heard.sim[line].push(message), stop.signal);
        }
        const { steps, wakeups } = sequence(tickets());
        try {
          for (const [i, step] of steps.entries()) {
            await sub.sync();
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
              continue;
            }
            if ("check" in step) {
              step.check(await realState(tcp));
              continue;
            }
            const op = "fails" in step ? step.fails : step;
            const real = await settle(
              tcp.eval(withoutKeyLocking(op.script.lua), op.keys.length, ...op.keys, ...op.args),
            );
            const simulated = await settle(sub.run(op.script, op.keys, op.args));
            if ("fails" in step) {
              expect({ step: i, real: "error" in real, simulated: "error" in simulated }).toEqual({
                step: i,
                real: true,
                simulated: true,
              });
            } else {
              expect(
                "ok" in real && "ok" in simulated,
                `step ${i}: Redis ${JSON.stringify(real)}, memory ${JSON.stringify(simulated)}`,
              ).toBe(true);
              const [r, s] = [(real as { ok: unknown }).ok, (simulated as { ok: unknown }).ok];
              expect({ step: i, reply: normalizeRwReading(s) }).toEqual({ step: i, reply: normalizeRwReading(r) });
              expect({ step: i, vote: op.script.vote(s).outcome }).toEqual({
                step: i,
                vote: op.script.vote(r).outcome,
              });
              const [rt, st] = [timesOf(r), timesOf(s)];
              for (const [j, t] of st.entries())
                expect(Math.abs(t - rt[j]), `step ${i}: node time ${t}, Redis ${rt[j]}`).toBeLessThanOrEqual(
                  PTTL_SLACK_MS,
                );
            }
            await expectSameState(tcp, sim, i);
          }
          // Every wakeup, in order: the memory nodes' are delivered (the virtual clock moves on), then Redis' arrive.
          await sub.sync();
          const count = (h: Heard) => Object.values(h).flat().length;
          const expected = Object.values(wakeups ?? {}).flat().length;
          await until(() => count(heard.real) === count(heard.sim) && count(heard.real) >= expected, 2_000);
          await new Promise((resolve) => setTimeout(resolve, 50));
          await sub.sync();
          expect(heard.sim).toEqual(heard.real);
          for (const [line, payloads] of Object.entries(wakeups ?? {}))
            expect({ line, heard: heard.real[line] }).toEqual({ line, heard: payloads });
        } finally {
          stop.abort();
        }
      });
    }
  });
}

/** Real Redis' lines and TIME, for a sequence's own checks. */
async function realState(tcp: Fixture["tcp"][number]): Promise<RealState> {
  const state: RealState = { lines: {}, linePttls: {}, now: 0 };
  for (const line of LINES) {
    const entries = await tcp.zrange(line, 0, -1, "WITHSCORES");
    state.lines[line] = new Map();
    for (let j = 0; j < entries.length; j += 2) state.lines[line].set(entries[j], Number(entries[j + 1]));
    state.linePttls[line] = await tcp.pttl(line);
  }
  const [seconds, micros] = await tcp.time();
  state.now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  return state;
}

/** After step `i`: the same resource keys, lines (members, deadlines, PTTL) and live readers on both. */
async function expectSameState(tcp: Fixture["tcp"][number], sim: MemoryNode, i: number): Promise<void> {
  for (const key of KEYS) {
    expect({ step: i, key, value: sim.get(key) ?? null }).toEqual({ step: i, key, value: await tcp.get(key) });
    const [simPttl, realPttl] = [sim.pttl(key), await tcp.pttl(key)];
    expect(samePttl(simPttl, realPttl), `step ${i}: ${key}: simulator PTTL ${simPttl}, Redis ${realPttl}`).toBe(true);
  }
  const real = await realState(tcp);
  for (const line of LINES) {
    const simLine = sim.queue(line) ?? new Map<string, number>();
    expect({ step: i, line, members: [...simLine.keys()].sort() }).toEqual({
      step: i,
      line,
      members: [...real.lines[line].keys()].sort(),
    });
    for (const [ticket, deadline] of simLine) {
      const realDeadline = real.lines[line].get(ticket)!;
      expect(
        Math.abs(deadline - realDeadline),
        `step ${i}: ${line} ${ticket} deadline ${deadline}, Redis ${realDeadline}`,
      ).toBeLessThanOrEqual(DEADLINE_SLACK_MS);
    }
    const [simPttl, realPttl] = [sim.queuePttl(line), real.linePttls[line]];
    expect(sameLinePttl(simPttl, realPttl), `step ${i}: ${line}: simulator PTTL ${simPttl}, Redis ${realPttl}`).toBe(
      true,
    );
  }
  const [simReaders, redisReaders] = [sim.readers(RW[1]), await realReaders(tcp, RW[1])];
  expect({ step: i, readers: [...simReaders.keys()].sort() }).toEqual({
    step: i,
    readers: [...redisReaders.keys()].sort(),
  });
  for (const [reader, left] of simReaders)
    expect(
      samePttl(left, redisReaders.get(reader)!),
      `step ${i}: ${reader}: simulator ${left} ms left, Redis ${redisReaders.get(reader)}`,
    ).toBe(true);
}

describe("the wakeup channel", () => {
  it("is the prefix and 20 hex digits of redis.sha1hex of the line key, on every backend", async () => {
    // Keys of every length around a SHA-1 block's padding and beyond ASCII, so the memory node's own SHA-1 is held
    // to Redis' for each.
    const keys = [
      "edge-redlock:line:x",
      `edge-redlock:line:${"k".repeat(37)}`,
      `edge-redlock:line:${"k".repeat(38)}`,
      `edge-redlock:line:${"é".repeat(40)}`,
      "edge-redlock:line:日本語",
    ];
    for (const key of keys) {
      const real = await env.tcp[0].eval("return redis.sha1hex(KEYS[1])", 1, key);
      expect(await wakeChannel(key)).toBe(`edge-redlock:wake:${String(real).slice(0, 20)}`);
      for (const [, make] of subjects) {
        const sub = make();
        const stop = new AbortController();
        const heard: string[] = [];
        await sub.listen(await wakeChannel(key), (message) => heard.push(message), stop.signal);
        const t = tickets();
        sub.node.set("r", OTHER, 4000);
        await sub.run(FAIR_ACQUIRE, ["r", key], [MINE, "5000", "1", t.T1, "3000", "1", "0"]);
        sub.node.delete("r");
        await sub.run(FAIR_ACQUIRE, ["r", key], [X, "5000", "1", t.T2, "3000", "1", "0"]);
        await sub.sync();
        await until(() => heard.length > 0, 2_000);
        stop.abort();
        expect({ key, heard }).toEqual({ key, heard: [`1 ${t.T1} ${t.T2}`] });
      }
    }
  });
});
