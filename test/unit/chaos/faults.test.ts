// The chaos run's fault plans: the scheduler is reproducible from its seed and plans every kind of fault (crashes of
// one or two distinct nodes that restart after the ttl unless told otherwise, partitions, client crashes); a split
// leaves each side a quorum, a minority cut leaves a few clients two nodes, a flap toggles one client's links; the
// quorum-crash nemesis and the semaphore windows set up exactly the scenario they are named for.
import { describe, expect, it } from "vitest";
import { nextFault, planPartition, planQuorumCrash, planSemaphoreWindows, prng } from "../../../chaos/faults.ts";

const plan = (seed: number, unsafeRestart: boolean, count = 2_000) => {
  const random = prng(seed);
  return Array.from({ length: count }, () => nextFault(random, { ttl: 1_000, nodes: 5, clients: 16, unsafeRestart }));
};

describe("chaos fault scheduler", () => {
  it("is reproducible from its seed", () => {
    expect(plan(42, false, 200)).toEqual(plan(42, false, 200));
    expect(plan(42, false, 200)).not.toEqual(plan(43, false, 200));
  });

  it("crashes one or two distinct nodes, restarting after more than the ttl unless unsafe", () => {
    for (const unsafe of [false, true]) {
      const crashes = plan(7, unsafe).filter((f) => f.kind === "kill-restart");
      const doubles = crashes.filter((f) => f.also !== undefined);
      expect(doubles.length).toBeGreaterThan(crashes.length * 0.3);
      expect(doubles.length).toBeLessThan(crashes.length * 0.5);
      for (const f of crashes) {
        expect(f.target).toBeGreaterThanOrEqual(0);
        expect(f.target).toBeLessThan(5);
        if (f.also !== undefined) {
          expect(f.also).not.toBe(f.target);
          expect(f.also).toBeGreaterThanOrEqual(0);
          expect(f.also).toBeLessThan(5);
        }
        if (unsafe) expect(f.duration).toBe(0);
        else expect(f.duration).toBeGreaterThan(1_000);
      }
    }
  });

  it("plans every kind, partitions and client crashes included", () => {
    const kinds = new Set(plan(3, false).map((f) => f.kind));
    for (const kind of [
      "kill-restart",
      "pause",
      "latency",
      "hang",
      "http-500",
      "http-503",
      "garbage",
      "client-stall",
      "partition-split",
      "partition-minority",
      "partition-flap",
      "client-crash",
    ]) {
      expect(kinds).toContain(kind);
    }
  });
});

const options = { ttl: 1_000, nodes: 5, clients: 16, unsafeRestart: false };
const reach = (lost: number[]) => [0, 1, 2, 3, 4].filter((n) => !lost.includes(n));

describe("chaos partitions", () => {
  it("split: every client on one side; each side reaches a quorum, the two quorums share one node", () => {
    const random = prng(11);
    for (let i = 0; i < 200; i++) {
      const { cuts } = planPartition(random, "partition-split", options);
      expect(cuts).toHaveLength(2);
      const [a, b] = cuts!;
      expect([...a.clients, ...b.clients].sort((x, y) => x - y)).toEqual(Array.from({ length: 16 }, (_, c) => c));
      const [ra, rb] = [reach(a.nodes), reach(b.nodes)];
      expect(ra).toHaveLength(3);
      expect(rb).toHaveLength(3);
      expect(ra.filter((n) => rb.includes(n))).toHaveLength(1);
    }
  });

  it("minority: a few clients reach only two nodes, no quorum", () => {
    const random = prng(12);
    for (let i = 0; i < 200; i++) {
      const { cuts } = planPartition(random, "partition-minority", options);
      expect(cuts).toHaveLength(1);
      expect(cuts![0].clients.length).toBeGreaterThanOrEqual(1);
      expect(cuts![0].clients.length).toBeLessThanOrEqual(4);
      expect(reach(cuts![0].nodes)).toHaveLength(2);
    }
  });

  it("flap: one client's link to one or two nodes, every 30–150 ms", () => {
    const random = prng(13);
    for (let i = 0; i < 200; i++) {
      const fault = planPartition(random, "partition-flap", options);
      expect(fault.cuts![0].clients).toHaveLength(1);
      expect(fault.cuts![0].nodes.length).toBeGreaterThanOrEqual(1);
      expect(fault.cuts![0].nodes.length).toBeLessThanOrEqual(2);
      expect(fault.period).toBeGreaterThanOrEqual(30);
      expect(fault.period).toBeLessThanOrEqual(150);
    }
  });
});

describe("the quorum-crash nemesis plan", () => {
  it("a quorum of three, the two other nodes to cut, a victim inside the quorum; reproducible", () => {
    const random = prng(14);
    for (let i = 0; i < 200; i++) {
      const { quorum, cut, victim } = planQuorumCrash(random, 5);
      expect(quorum).toHaveLength(3);
      expect([...quorum, ...cut].sort()).toEqual([0, 1, 2, 3, 4]);
      expect(quorum).toContain(victim);
    }
    expect(planQuorumCrash(prng(5), 5)).toEqual(planQuorumCrash(prng(5), 5));
  });
});

describe("the semaphore-windows plan", () => {
  it("5 clients on 5 nodes: each reaches exactly a quorum, every node is reached by exactly 3, the windows all differ", () => {
    const clients = [16, 17, 18, 19, 20];
    const random = prng(3);
    for (let i = 0; i < 50; i++) {
      const { windows, cuts } = planSemaphoreWindows(random, clients, 5);
      expect(windows).toHaveLength(5);
      for (const [j, w] of windows.entries()) {
        expect(w).toHaveLength(3);
        expect(cuts[j].clients).toEqual([clients[j]]);
        expect([...w, ...cuts[j].nodes].sort()).toEqual([0, 1, 2, 3, 4]);
      }
      for (let node = 0; node < 5; node++) expect(windows.filter((w) => w.includes(node))).toHaveLength(3);
      expect(new Set(windows.map((w) => w.join())).size).toBe(5);
    }
    expect(planSemaphoreWindows(prng(9), clients, 5)).toEqual(planSemaphoreWindows(prng(9), clients, 5));
  });

  it("admitting per node up to 3 holders under those windows lets all 5 in: the over-admission the scenario sets up", () => {
    // Each client asks only its window; a node admits while it has fewer than 3: every client gets all 3 of its nodes.
    const { windows } = planSemaphoreWindows(prng(1), [0, 1, 2, 3, 4], 5);
    const holders = new Array<number>(5).fill(0);
    const admittedOn = windows.map((w) => w.filter((node) => holders[node] < 3 && ++holders[node] > 0));
    expect(admittedOn.filter((nodes) => nodes.length >= 3)).toHaveLength(5);
  });
});
