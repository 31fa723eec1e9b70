// The seeded fault plans: what goes wrong, where, and for how long — reproducible from --seed.
import type { FaultKind } from "./records.ts";

/** The seeded PRNG of the test bed (dev/prng.ts): a run is reproducible from its seed. */
export { prng } from "../dev/prng.ts";

/** What the random scheduler can do: a fault kind of the log, or terminating a client. */
export type PlannedKind = FaultKind | "client-crash";

export type PartitionKind = "partition-split" | "partition-minority" | "partition-flap";

/** Some clients that lose some nodes. */
export interface CutGroup {
  clients: number[];
  nodes: number[];
}

/** A fault to apply: `target` is a lock node index or a client index. */
export interface PlannedFault {
  kind: PlannedKind;
  target: number;
  /**
   * ms the fault lasts (kill-restart: how long the node stays down; client-crash: until the client is started again).
   */
  duration: number;
  /** kill-restart only: a second node that crashes at the same moment (a correlated crash, e.g. one zone). */
  also?: number;
  /** Partitions: which clients lose which nodes. */
  cuts?: CutGroup[];
  /** partition-flap: ms each cut and each healed spell of the flapping link lasts. */
  period?: number;
}

export interface PlanOptions {
  ttl: number;
  nodes: number;
  clients: number;
  unsafeRestart: boolean;
}

const KINDS: [PlannedKind, number][] = [
  ["kill-restart", 4],
  ["pause", 2],
  ["latency", 2],
  ["hang", 2],
  ["http-500", 1],
  ["http-503", 1],
  ["garbage", 1],
  ["drop-wakeups", 2],
  ["client-stall", 2],
  ["partition-split", 1],
  ["partition-minority", 1],
  ["partition-flap", 1],
  ["client-crash", 1],
];

const between = (random: () => number, lo: number, hi: number) => Math.round(lo + random() * (hi - lo));

/**
 * Picks the next fault. `ttl` bounds the delayed restart: a killed node stays down for longer than the
 * maximum ttl (the Redlock page's delayed-restart rule) unless `unsafeRestart`, which brings it back
 * empty at once (the negative control).
 */
export function nextFault(random: () => number, options: PlanOptions): PlannedFault {
  const total = KINDS.reduce((sum, [, weight]) => sum + weight, 0);
  let pick = random() * total;
  const kind =
    KINDS.find(([, weight]) => {
      pick -= weight;
      return pick < 0;
    })?.[0] ?? "latency";
  switch (kind) {
    case "kill-restart": {
      const target = between(random, 0, options.nodes - 1);
      const duration = options.unsafeRestart ? 0 : between(random, 1.5 * options.ttl, 2 * options.ttl);
      // Two in five crashes take a second node down with the first (never a majority: at most two).
      if (random() >= 0.4) return { kind, target, duration };
      return { kind, target, duration, also: (target + between(random, 1, options.nodes - 1)) % options.nodes };
    }
    case "client-stall":
      return {
        kind,
        target: between(random, 0, options.clients - 1),
        duration: between(random, 1.5 * options.ttl, 2.5 * options.ttl),
      };
    case "client-crash":
      return { kind, target: between(random, 0, options.clients - 1), duration: between(random, 50, 500) };
    case "pause":
      return { kind, target: between(random, 0, options.nodes - 1), duration: between(random, 200, 2 * options.ttl) };
    case "partition-split":
    case "partition-minority":
    case "partition-flap":
      return planPartition(random, kind, options);
    default:
      return { kind, target: between(random, 0, options.nodes - 1), duration: between(random, 200, 1_500) };
  }
}

/**
 * A partial partition: faults per (client, node) pair.
 * - split: the clients fall in two halves; one reaches a quorum of nodes, the other the quorum at the other
 *   end of the ring (with 5 nodes A reaches {0,1,2} and B {2,3,4}, rotated): both sides may still win.
 * - minority: a few clients reach only N − quorum nodes (with 5: two) and cannot win; the others reach all.
 * - flap: one client's link to one or two nodes goes down and up every `period` ms.
 */
export function planPartition(random: () => number, kind: PartitionKind, options: PlanOptions): PlannedFault {
  const { nodes, clients } = options;
  const quorum = Math.floor(nodes / 2) + 1;
  const duration = between(random, 500, 2_000);
  const ring = (from: number, count: number) => Array.from({ length: count }, (_, i) => (from + i) % nodes);
  const shuffled = shuffle(
    random,
    Array.from({ length: clients }, (_, i) => i),
  );
  if (kind === "partition-split") {
    const r = between(random, 0, nodes - 1);
    const sideA = ring(r, quorum);
    const sideB = ring(r + nodes - quorum, quorum);
    const half = Math.ceil(clients / 2);
    const a = shuffled.slice(0, half).sort((x, y) => x - y);
    const b = shuffled.slice(half).sort((x, y) => x - y);
    const cuts = [
      { clients: a, nodes: ring(0, nodes).filter((n) => !sideA.includes(n)) },
      { clients: b, nodes: ring(0, nodes).filter((n) => !sideB.includes(n)) },
    ].filter((g) => g.clients.length > 0);
    return { kind, target: r, duration, cuts };
  }
  if (kind === "partition-minority") {
    const count = between(random, 1, Math.max(1, Math.floor(clients / 4)));
    const lost = shuffle(random, ring(0, nodes))
      .slice(0, quorum)
      .sort((x, y) => x - y);
    return {
      kind,
      target: lost[0],
      duration,
      cuts: [{ clients: shuffled.slice(0, count).sort((x, y) => x - y), nodes: lost }],
    };
  }
  const lost = shuffle(random, ring(0, nodes))
    .slice(0, between(random, 1, 2))
    .sort((x, y) => x - y);
  return {
    kind,
    target: lost[0],
    duration,
    cuts: [{ clients: [shuffled[0]], nodes: lost }],
    period: between(random, 30, 150),
  };
}

/** The targeted nemesis' plan: the quorum the holder will hold, the nodes cut off meanwhile, the node to crash. */
export interface QuorumCrashPlan {
  quorum: number[];
  cut: number[];
  victim: number;
}

/** Picks a quorum of the nodes, the others to cut off, and one node of the quorum to crash. */
export function planQuorumCrash(random: () => number, nodes: number): QuorumCrashPlan {
  const order = shuffle(
    random,
    Array.from({ length: nodes }, (_, i) => i),
  );
  const size = Math.floor(nodes / 2) + 1;
  const quorum = order.slice(0, size).sort((x, y) => x - y);
  return { quorum, cut: order.slice(size).sort((x, y) => x - y), victim: quorum[Math.floor(random() * size)] };
}

/** The semaphore-windows plan: who reaches which nodes (its window), and the cuts that make it so. */
export interface WindowsPlan {
  /** windows[j]: the nodes clients[j] reaches. */
  windows: number[][];
  /** Per client, the nodes outside its window (cut off). */
  cuts: CutGroup[];
}

/**
 * Rotated windows of a quorum each: client j of `clients` reaches {r + j, …, r + j + quorum − 1} (mod N),
 * r seeded. With 5 clients on 5 nodes every node is reached by exactly 3 clients, and every client by
 * exactly a quorum: a per-node counting semaphore of limit 3 admits all 5 (each node sees 3 holders);
 * slots that are mutexes still admit at most 3.
 */
export function planSemaphoreWindows(random: () => number, clients: number[], nodes: number): WindowsPlan {
  const quorum = Math.floor(nodes / 2) + 1;
  const r = Math.floor(random() * nodes);
  const windows = clients.map((_, j) =>
    Array.from({ length: quorum }, (_, i) => (r + j + i) % nodes).sort((a, b) => a - b),
  );
  const cuts = clients.map((client, j) => ({
    clients: [client],
    nodes: Array.from({ length: nodes }, (_, n) => n).filter((n) => !windows[j].includes(n)),
  }));
  return { windows, cuts };
}

function shuffle<T>(random: () => number, items: T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}
