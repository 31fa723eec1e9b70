// The chaos run's semaphore negative control on the real thing: five redis-servers behind their bridges,
// one link per client, the rotated windows of the targeted scenario. The naive per-node counting semaphore
// (test-only, chaos/naive-semaphore.ts) admits all five clients with limit 3; the library's semaphore never
// more than three.
import { Redis as TcpRedis } from "ioredis";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { linkName } from "../../../chaos/bed.ts";
import { planSemaphoreWindows, prng } from "../../../chaos/faults.ts";
import { NaiveSemaphore, NaiveSemaphoreError, naiveKey } from "../../../chaos/naive-semaphore.ts";
import { permitsHeldOn } from "../../../chaos/watch.ts";
import { Redlock } from "../../../src/index.ts";
import { startCluster, type Cluster } from "../../../dev/cluster.ts";

const CLIENTS = [0, 1, 2, 3, 4];
const NODE_TIMEOUT = 150;
/** The releases counted below must not time out on a loaded machine: they are not what the test is about. */
const RELEASE_TIMEOUT = 2_000;
let cluster: Cluster;
let tcp: TcpRedis[];
/** links[client][node]: the client's own route to the node. */
let links: { url: string; token: string }[][];

beforeAll(async () => {
  cluster = await startCluster({ nodes: 5 });
  tcp = cluster.nodes.map((n) => new TcpRedis(n.redisUrl));
  links = await Promise.all(
    CLIENTS.map((c) =>
      Promise.all(
        cluster.bridges.map(async (b) => ({ url: await b.addLink(linkName(c)), token: cluster.nodes[0].token })),
      ),
    ),
  );
});
afterAll(async () => {
  for (const t of tcp) t.disconnect();
  await cluster.stop();
});
beforeEach(async () => {
  for (const b of cluster.bridges) for (const c of CLIENTS) b.setLinkFaults(linkName(c), { cut: false });
  await Promise.all(tcp.map((t) => t.flushall()));
});

/** Cuts every client's links outside its window (seeded); returns the windows. */
function cutWindows(seed: number): number[][] {
  const plan = planSemaphoreWindows(prng(seed), CLIENTS, 5);
  for (const group of plan.cuts)
    for (const node of group.nodes)
      for (const c of group.clients) cluster.bridges[node].setLinkFaults(linkName(c), { cut: true });
  return plan.windows;
}

describe("the naive per-node counting semaphore (negative control)", () => {
  it("admits all five clients of the rotated windows with limit 3: each node sees only 3 holders", async () => {
    const windows = cutWindows(1);
    const naive = CLIENTS.map(
      (c) => new NaiveSemaphore(links[c], "sem", 3, { nodeTimeout: NODE_TIMEOUT, releaseTimeout: RELEASE_TIMEOUT }),
    );
    // Five at once race for the same counts: a client whose attempt met another's partial admissions retries.
    // Permits of 10 s: they must outlive the sixth client's refused retries on a loaded machine, to be released below.
    const permits = await Promise.all(naive.map((s) => s.acquire(10_000, { maxWait: 2_000 })));
    expect(permits.every((p) => p.validityMs > 500)).toBe(true);
    // Over TCP: every node holds 3 members, and the 5 permits sit exactly on the 5 windows.
    const held = await Promise.all(tcp.map((t) => t.zrange(naiveKey("sem"), 0, -1)));
    expect(held.map((members) => members.length)).toEqual([3, 3, 3, 3, 3]);
    expect(permitsHeldOn(held)).toEqual([...windows].sort((a, b) => a.join().localeCompare(b.join())));
    // Full on every node: a sixth client that reaches everything is refused.
    const sixth = new NaiveSemaphore(cluster.nodes, "sem", 3, { nodeTimeout: NODE_TIMEOUT });
    await expect(sixth.acquire(2_000)).rejects.toBeInstanceOf(NaiveSemaphoreError);
    for (const b of cluster.bridges) for (const c of CLIENTS) b.setLinkFaults(linkName(c), { cut: false });
    expect(await Promise.all(permits.map((p) => p.release()))).toEqual([3, 3, 3, 3, 3]);
    expect(await Promise.all(tcp.map((t) => t.zcard(naiveKey("sem"))))).toEqual([0, 0, 0, 0, 0]);
  });

  it("drops expired holders by the node's clock", async () => {
    const a = new NaiveSemaphore(cluster.nodes, "one", 1, { nodeTimeout: NODE_TIMEOUT });
    const b = new NaiveSemaphore(cluster.nodes, "one", 1, { nodeTimeout: NODE_TIMEOUT });
    await a.acquire(300);
    await expect(b.acquire(300)).rejects.toBeInstanceOf(NaiveSemaphoreError);
    await new Promise((r) => setTimeout(r, 350));
    await expect(b.acquire(300)).resolves.toMatchObject({ validityMs: expect.any(Number) });
  });
});

describe("the library's semaphore under the same windows", () => {
  it("never grants more than 3 of the 5 (slots are mutexes), each on its own slot", async () => {
    cutWindows(1);
    const semaphores = CLIENTS.map((c) => new Redlock(links[c], { nodeTimeout: NODE_TIMEOUT }).semaphore("sem", 3));
    const outcomes = await Promise.allSettled(semaphores.map((s) => s.acquire(3_000, { maxWait: 1_500 })));
    const granted = outcomes.flatMap((o) => (o.status === "fulfilled" ? [o.value] : []));
    expect(granted.length).toBeGreaterThan(0);
    expect(granted.length).toBeLessThanOrEqual(3);
    expect(new Set(granted.map((p) => p.slot)).size).toBe(granted.length);
    for (const b of cluster.bridges) for (const c of CLIENTS) b.setLinkFaults(linkName(c), { cut: false });
    await Promise.all(granted.map((p) => p.release()));
  });
});
