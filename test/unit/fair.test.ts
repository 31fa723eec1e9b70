// Fair waiting on the simulator, one ordering per test: what the queue costs on the uncontended path, who
// leaves it when, and what lands late (an enqueue after the waiter left, a grant after the round was
// decided, a waiter that crashed). docs/SAFETY.md, "Fair waiting", lists who may touch each key.
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, Redlock, type RedlockNode, type RedlockOptions } from "../../src/index.ts";
import { simCluster, type SimNode } from "../sim/sim-node.ts";
import { VirtualClock } from "../sim/virtual-clock.ts";
import { watchRequeues } from "../sim/watch-requeue.ts";

const Q = "edge-redlock:queue:k";

function setup(options: RedlockOptions = {}) {
  const clock = new VirtualClock();
  const nodes = simCluster(clock);
  const redlock = new Redlock(nodes, { clock, nodeTimeout: 100, ...options });
  return { clock, nodes, redlock };
}

const waiters = (nodes: SimNode[], queue = Q) => nodes.map((n) => n.liveWaiters(queue).length);
const hold = (nodes: SimNode[], key: string, ttl: number) => nodes.forEach((n) => n.set(key, "someone-else", ttl));

/** `nodes` as a client that can crash: from then on its requests never reach any node. */
function crashable(nodes: SimNode[]): { nodes: RedlockNode[]; crash(): void } {
  let crashed = false;
  return {
    nodes: nodes.map((sim) => ({
      label: sim.label,
      run: (script, keys, args, signal) => (crashed ? new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason))) : sim.run(script, keys, args, signal)),
    })),
    crash: () => void (crashed = true),
  };
}

describe("fair acquire: the uncontended path", () => {
  it("costs one request per node and leaves no queue behind", async () => {
    const { clock, nodes, redlock } = setup();
    const lock = await clock.run(redlock.acquire(["k"], 1_000));
    await clock.drain();
    expect(nodes.map((n) => n.requests.map((r) => r.script))).toEqual(Array(5).fill(["fair-acquire"]));
    expect(waiters(nodes)).toEqual([0, 0, 0, 0, 0]);
    await clock.run(lock.release());
    await clock.drain();
    expect(nodes.map((n) => n.get("k"))).toEqual(Array(5).fill(undefined));
  });

  it("one try (retryCount 0) never enqueues, and fair: false sends the classic script", async () => {
    const { clock, nodes, redlock } = setup();
    hold(nodes, "k", 5_000);
    await expect(clock.run(redlock.acquire(["k"], 1_000, { retryCount: 0 }))).rejects.toBeInstanceOf(LockAcquisitionError);
    await expect(clock.run(redlock.acquire(["k"], 1_000, { retryCount: 0, fair: false }))).rejects.toBeInstanceOf(LockAcquisitionError);
    await clock.drain();
    expect(waiters(nodes)).toEqual([0, 0, 0, 0, 0]);
    expect(nodes[0].requests.map((r) => r.script)).toEqual(["fair-acquire", "acquire"]);
  });

  it("a single try that was granted releases with the classic script; a lock that could wait leaves its queues", async () => {
    const { clock, nodes, redlock } = setup();
    const once = await clock.run(redlock.acquire(["k"], 1_000, { retryCount: 0 }));
    await clock.run(once.release());
    const waited = await clock.run(redlock.acquire(["k"], 1_000));
    await clock.run(waited.release());
    await clock.drain();
    for (const node of nodes) {
      const releases = node.requests.filter((r) => r.script !== "fair-acquire");
      expect(releases.map((r) => [r.script, r.keys])).toEqual([
        ["release", ["k"]],
        ["leave", ["k", Q]],
      ]);
    }
    expect(nodes.map((n) => n.get("k"))).toEqual(Array(5).fill(undefined));
  });
});

describe("fair acquire: informed waits", () => {
  it("waits out maxWait even when a quorum reports the holder past it: a holder may release early", async () => {
    const { clock, nodes, redlock } = setup();
    hold(nodes, "k", 5_000);
    // The holder releases after 400 ms, long before its PTTL ends.
    void clock.sleep(400).then(() => nodes.forEach((n) => n.delete("k")));
    const lock = await clock.run(redlock.acquire(["k"], 1_000, { maxWait: 1_000 }));
    expect(clock.now()).toBeLessThan(1_000);
    expect(lock.attempts).toBeGreaterThan(1);
    await clock.run(lock.release());
  });

  it("gives up once maxWait is spent, and leaves the line", async () => {
    const { clock, nodes, redlock } = setup();
    hold(nodes, "k", 5_000);
    const error = await clock.run(redlock.acquire(["k"], 1_000, { maxWait: 600 })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockAcquisitionError);
    expect(clock.now()).toBeLessThanOrEqual(600 + 100);
    await clock.drain();
    expect(waiters(nodes)).toEqual([0, 0, 0, 0, 0]); // it left the line
  });

  it("does not give up on the holder's time when only a minority reported it", async () => {
    const { clock, nodes, redlock } = setup();
    nodes.slice(0, 2).forEach((n) => n.set("k", "someone-else", 5_000));
    nodes.slice(2).forEach((n) => (n.mode = "down"));
    const error = (await clock.run(redlock.acquire(["k"], 1_000, { maxWait: 300 })).catch((e: unknown) => e)) as LockAcquisitionError;
    expect(error.attempts.length).toBeGreaterThan(1);
  });

  it("the first in line asks again within a round trip or two; the holder's expiry bounds every wait", async () => {
    const { clock, nodes, redlock } = setup();
    for (const n of nodes) n.latency = 5;
    hold(nodes, "k", 120);
    const lock = await clock.run(redlock.acquire(["k"], 1_000));
    expect(clock.now()).toBeLessThan(120 + 5 + 40 + 10);
    expect(lock.attempts).toBeGreaterThan(1);
  });

  it("after a split vote the partial grants are released before a quick retry, and a winner comes by round two", async () => {
    const { clock, nodes } = setup();
    // Three contenders start at once on a free key; node i runs contender first[i]'s request first: 2-2-1.
    const first = [0, 0, 1, 1, 2];
    const contenders = [0, 1, 2].map((c) => {
      const own: RedlockNode[] = nodes.map((sim, i) => ({
        label: sim.label,
        run: (script, keys, args, signal) => {
          const round = sim.requests.filter((r) => r.script === "fair-acquire").length < 3;
          const prior = sim.latency;
          sim.latency = round && script.name === "fair-acquire" ? (c === first[i] ? 1 : 3) : 1;
          const reply = sim.run(script, keys, args, signal);
          sim.latency = prior;
          return reply;
        },
      }));
      return new Redlock(own, { clock, nodeTimeout: 100 });
    });
    const started = contenders.map((r) => r.acquire(["k"], 1_000));
    const winner = await clock.run(Promise.race(started));
    // Round one split 2-2-1: every node's grant was released (by REQUEUE: its waiter keeps its place there), and
    // round two had a winner.
    expect(nodes.every((n) => n.requests.some((r) => r.script === "requeue"))).toBe(true);
    expect(winner.attempts).toBe(2);
    await clock.run(winner.release());
    const rest = await clock.run(Promise.all(started));
    await clock.run(Promise.all(rest.filter((l) => l !== winner).map((l) => l.release())));
  });
});

describe("fair acquire: what lands late", () => {
  it("a REQUEUE that lands after the waiter became the holder: its ticket waits there until the release's LEAVE", async () => {
    const { clock, nodes, redlock } = setup();
    nodes.slice(1).forEach((n) => n.set("k", "someone-else", 30)); // held on 1–4 for 30 ms; node 0 free
    let first = true;
    nodes[0].latency = (request) => {
      if (request.script === "requeue") return 60; // the undoing of attempt 1 lands late
      if (request.script !== "fair-acquire" || !first) return 1;
      first = false;
      return 5; // attempt 1's grant on node 0 comes in after the round was decided (four refusals: not a split)
    };
    const lock = await clock.run(redlock.acquire(["k"], 1_000, { maxWait: 2_000 }));
    expect(lock.attempts).toBeGreaterThan(1);
    const requeue = nodes[0].requests.find((r) => r.script === "requeue");
    const won = nodes[1].requests.filter((r) => r.script === "fair-acquire").at(-1)!;
    expect(requeue?.ranAt).toBeGreaterThan(won.ranAt ?? Infinity); // it ran after the grant that won
    expect(nodes[0].get("k")).toBeUndefined(); // it deleted attempt 1's key, never the holder's (elsewhere)
    expect(waiters(nodes)[0]).toBe(1); // the holder's own ticket, back in line on node 0
    await clock.run(lock.release());
    await clock.drain();
    expect(waiters(nodes)).toEqual([0, 0, 0, 0, 0]);
    expect(nodes.map((n) => n.get("k"))).toEqual(Array(5).fill(undefined));
  });

  it("a waiter that gives up leaves the queue on every node", async () => {
    const { clock, nodes, redlock } = setup();
    hold(nodes, "k", 5_000);
    const stop = new AbortController();
    const waiting = redlock.acquire(["k"], 1_000, { signal: stop.signal }).catch(() => "gave up");
    await clock.advance(50);
    expect(waiters(nodes)).toEqual([1, 1, 1, 1, 1]);
    stop.abort();
    expect(await clock.run(waiting)).toBe("gave up");
    await clock.drain();
    expect(waiters(nodes)).toEqual([0, 0, 0, 0, 0]);
  });

  it("an enqueue that lands after the waiter left blocks that node for at most the lease, never grants", async () => {
    const { clock, nodes, redlock } = setup({ nodeTimeout: 100 });
    for (const n of nodes) n.deliverLate = true;
    hold(nodes, "k", 500);
    // Node 4 gets the waiter's second attempt very late: it lands after the waiter gave up and left.
    nodes[4].latency = (r) => (r.script === "fair-acquire" && nodes[4].requests.filter((q) => q.script === "fair-acquire").indexOf(r) === 1 ? 400 : 1);
    const stop = new AbortController();
    const waiting = redlock.acquire(["k"], 1_000, { signal: stop.signal }).catch(() => "gave up");
    await clock.advance(30);
    stop.abort();
    expect(await clock.run(waiting)).toBe("gave up");
    await clock.advance(420 - clock.now()); // the late enqueue has landed on node 4 now
    const late = nodes[4].requests.filter((r) => r.script === "fair-acquire")[1];
    const leftAt = nodes[4].requests.find((r) => r.script === "leave")?.ranAt ?? Infinity;
    expect(late.ranAt).toBeGreaterThan(leftAt);
    expect(waiters(nodes)).toEqual([0, 0, 0, 0, 1]);
    // Another client is served by the other four nodes once the holder is gone; node 4 refuses until the lease ends.
    const other = new Redlock(nodes, { clock, nodeTimeout: 100 });
    const lock = await clock.run(other.acquire(["k"], 5_000));
    expect(clock.now()).toBeLessThan(late.ranAt! + 300);
    await clock.advance(1);
    expect(nodes.map((n) => n.get("k") === lock.value)).toEqual([true, true, true, true, false]);
    expect(nodes[4].get("k")).toBeUndefined(); // the late enqueue never granted anything
    await clock.advance(late.ranAt! + 300 - clock.now());
    await clock.run(lock.release()); // it leaves node 4's queue too, where it had been refused and queued
    await clock.drain();
    expect(waiters(nodes)).toEqual([0, 0, 0, 0, 0]);
  });

  it("a grant that lands after the round was decided is released (fair-acquire stragglers, leave included)", async () => {
    const { clock, nodes, redlock } = setup({ nodeTimeout: 100 });
    for (const n of nodes) n.deliverLate = true;
    hold(nodes.slice(0, 3), "k", 5_000);
    nodes[4].latency = 300; // its grant lands after the round (decided by three refusals) and after the give-up
    const error = await clock.run(redlock.acquire(["k"], 1_000, { retryCount: 0 })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockAcquisitionError);
    await clock.drain();
    expect(nodes[4].get("k")).toBeUndefined();
    expect(nodes[4].requests.map((r) => r.script)).toEqual(["fair-acquire", "release"]);
  });

  it("a waiter that crashed mid-queue holds the line up for at most its lease (300 ms)", async () => {
    const { clock, nodes } = setup();
    hold(nodes, "k", 5_000);
    const a = crashable(nodes);
    void new Redlock(a.nodes, { clock, nodeTimeout: 100 }).acquire(["k"], 1_000).catch(() => {});
    await clock.advance(20);
    const b = new Redlock(nodes, { clock, nodeTimeout: 100 }).acquire(["k"], 1_000);
    await clock.advance(20);
    a.crash();
    await clock.advance(5); // its last requests (latency 1) have landed: it is a waiter, not a holder
    const freedAt = clock.now();
    for (const n of nodes) n.set("k", "", -1); // the holder releases
    const lock = await clock.run(b);
    expect(clock.now() - freedAt).toBeLessThanOrEqual(300 + 40 + 10);
    expect(clock.now() - freedAt).toBeGreaterThan(100); // it did wait for the dead waiter's lease: the order held
    await clock.run(lock.release());
  });

  it("a released fair lock leaves its ticket nowhere, even where a node had denied and queued it", async () => {
    const { clock, nodes, redlock } = setup();
    nodes[4].set("k", "someone-else", 60);
    const lock = await clock.run(redlock.acquire(["k"], 1_000));
    await clock.advance(0);
    expect(waiters(nodes)).toEqual([0, 0, 0, 0, 1]);
    await clock.run(lock.release());
    await clock.drain();
    expect(waiters(nodes)).toEqual([0, 0, 0, 0, 0]);
  });
});

describe("fair acquire: a failed attempt keeps the waiter's place", () => {
  it("where the attempt was granted, its undoing puts the ticket back in line (a grant took it out)", async () => {
    const { clock, nodes } = setup();
    nodes.slice(2).forEach((n) => n.set("k", "someone-else", 300)); // nodes 0 and 1 free: they grant, 2–4 refuse
    const { own, afterRequeue } = watchRequeues(nodes, Q);
    const lock = await clock.run(new Redlock(own, { clock, nodeTimeout: 100 }).acquire(["k"], 1_000, { maxWait: 2_000 }));
    expect(lock.attempts).toBeGreaterThan(1);
    // Each failed attempt was granted on nodes 0 and 1: the REQUEUE that undid it left the ticket in line there.
    expect(afterRequeue[0].length).toBeGreaterThan(0);
    expect([...afterRequeue[0], ...afterRequeue[1]].every((n) => n === 1)).toBe(true);
    expect(afterRequeue.slice(2).flat()).toEqual([]); // where it was refused it was never granted: nothing to undo
    await clock.run(lock.release());
    await clock.drain();
    expect(waiters(nodes)).toEqual([0, 0, 0, 0, 0]);
  });
});

describe("fair acquire: several resources", () => {
  it("clients that lock overlapping sets in opposite orders all finish: the global ticket order rules out deadlock", async () => {
    const { clock, nodes } = setup();
    for (const [i, n] of nodes.entries()) n.latency = (r) => 1 + ((r.sentAt + i) % 7);
    const sets = [["x", "y"], ["y", "x"], ["y", "z"], ["z", "x"], ["x"]];
    let sections = 0;
    const clients = sets.map(async (set) => {
      const redlock = new Redlock(nodes, { clock, nodeTimeout: 100 });
      for (let i = 0; i < 5; i++) {
        const lock = await redlock.acquire(set, 1_000, { maxWait: 5_000 });
        sections++;
        await clock.sleep(15);
        await lock.release();
      }
    });
    await clock.run(Promise.all(clients));
    expect(sections).toBe(25);
  });
});

describe("what a refusal tells the caller", () => {
  it("retryAfterMs is the holder's PTTL times one plus the waiters ahead (the median the nodes reported)", () => {
    const votes = [0, 1, 2, 3, 4].map((node) => ({ outcome: "denied" as const, pttl: 1_000, position: node < 3 ? 2 : 4, node }));
    const tally = { attempt: 1, granted: 0, denied: 5, errors: 0, elapsedMs: 2, validityMs: 0, votes };
    expect(new LockAcquisitionError(["k"], [tally]).retryAfterMs).toBe(3_000);
    const first = votes.map((v) => ({ ...v, position: 0 }));
    expect(new LockAcquisitionError(["k"], [{ ...tally, votes: first }]).retryAfterMs).toBe(1_000);
  });
});
