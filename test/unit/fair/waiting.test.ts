// Fair waiting on the simulator: the line costs one request per node when nobody waits; a waiter waits out maxWait
// (a holder may release early), gives up on time and leaves; the first in line asks again within a round trip or two;
// a split vote has a winner by round two; clients that lock overlapping sets in any order all finish (the global
// ticket order rules out deadlock); a refusal's retryAfterMs counts the waiters ahead; a live waiter's entry never
// lapses while it waits (without maxWait it asks at least every 10 s, and its entry lives 12 s). docs/SAFETY.md,
// "Fair waiting", lists who may touch each key.
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, Redlock, type RedlockNode } from "../../../src/index.ts";
import { simCluster } from "../../sim/sim-node.ts";
import { VirtualClock } from "../../sim/virtual-clock.ts";
import { LINE_OF_K, holdEverywhere, lineWaiters, simSetup } from "../../sim/sim-redlock.ts";

const Q = LINE_OF_K;

describe("fair acquire: the uncontended path", () => {
  it("costs one request per node and leaves no queue behind", async () => {
    const { clock, nodes, redlock } = simSetup();
    const lock = await clock.run(redlock.acquire(["k"], 1_000));
    await clock.drain();
    expect(nodes.map((n) => n.requests.map((r) => r.script))).toEqual(Array(5).fill(["fair-acquire"]));
    expect(lineWaiters(nodes)).toEqual([0, 0, 0, 0, 0]);
    await clock.run(lock.release());
    await clock.drain();
    expect(nodes.map((n) => n.get("k"))).toEqual(Array(5).fill(undefined));
  });
});

describe("fair acquire: informed waits", () => {
  it("waits out maxWait even when a quorum reports the holder past it: its last attempt, at maxWait, finds a holder gone early", async () => {
    const { clock, nodes, redlock } = simSetup();
    holdEverywhere(nodes, "k", 5_000);
    // The holder's keys go after 400 ms, long before their PTTL ends, without a release (nobody is woken).
    void clock.sleep(400).then(() => {
      for (const n of nodes) n.delete("k");
    });
    const lock = await clock.run(redlock.acquire(["k"], 1_000, { maxWait: 1_000 }));
    // Listening, it sleeps until the holder's time is up but no longer than its maxWait, then asks once more.
    expect(clock.now()).toBeGreaterThanOrEqual(1_000);
    expect(clock.now()).toBeLessThan(1_000 + 10);
    expect(lock.attempts).toBeGreaterThan(1);
    await clock.run(lock.release());
  });

  it("gives up once maxWait is spent, and leaves the line", async () => {
    const { clock, nodes, redlock } = simSetup();
    holdEverywhere(nodes, "k", 5_000);
    const error = await clock.run(redlock.acquire(["k"], 1_000, { maxWait: 600 })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockAcquisitionError);
    expect(clock.now()).toBeLessThanOrEqual(600 + 100);
    await clock.drain();
    expect(lineWaiters(nodes)).toEqual([0, 0, 0, 0, 0]); // it left the line
  });

  it("does not give up on the holder's time when only a minority reported it", async () => {
    const { clock, nodes, redlock } = simSetup();
    for (const n of nodes.slice(0, 2)) n.set("k", "someone-else", 5_000);
    for (const n of nodes.slice(2)) n.mode = "down";
    const error = (await clock
      .run(redlock.acquire(["k"], 1_000, { maxWait: 300 }))
      .catch((e: unknown) => e)) as LockAcquisitionError;
    expect(error.attempts.length).toBeGreaterThan(1);
  });

  it("the first in line asks again within a round trip or two; the holder's expiry bounds every wait", async () => {
    const { clock, nodes, redlock } = simSetup();
    for (const n of nodes) n.latency = 5;
    holdEverywhere(nodes, "k", 120);
    const lock = await clock.run(redlock.acquire(["k"], 1_000));
    expect(clock.now()).toBeLessThan(120 + 5 + 40 + 10);
    expect(lock.attempts).toBeGreaterThan(1);
  });

  it("after a split vote the partial grants are released before a quick retry, and a winner comes by round two", async () => {
    const { clock, nodes } = simSetup();
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

describe("fair acquire: several resources", () => {
  it("clients that lock overlapping sets in opposite orders all finish: the global ticket order rules out deadlock", async () => {
    const { clock, nodes } = simSetup();
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
    const votes = [0, 1, 2, 3, 4].map((node) => ({
      outcome: "denied" as const,
      pttl: 1_000,
      position: node < 3 ? 2 : 4,
      node,
    }));
    const tally = { attempt: 1, granted: 0, denied: 5, errors: 0, elapsedMs: 2, validityMs: 0, votes };
    expect(new LockAcquisitionError(["k"], [tally]).retryAfterMs).toBe(3_000);
    const first = votes.map((v) => ({ ...v, position: 0 }));
    expect(new LockAcquisitionError(["k"], [{ ...tally, votes: first }]).retryAfterMs).toBe(1_000);
  });
});

describe("fair waiting on slow links", () => {
  it("a live waiter's entry never lapses while it waits: it asks at least every 10 s, its entry lives 12 s, also when a round trip takes 160 ms", async () => {
    const clock = new VirtualClock();
    const nodes = simCluster(clock);
    for (const node of nodes) node.latency = 160;
    for (const n of nodes) n.set("k", "someone-else", 60_000);
    const stop = new AbortController();
    const waiters = Array.from({ length: 8 }, async (_, i) => {
      await clock.sleep(20 * i);
      await new Redlock(nodes, { clock, retryCount: -1 })
        .acquire(["k"], 1_000, { signal: stop.signal })
        .catch(() => undefined);
    });
    await clock.advance(600); // everyone's first attempt has run on every node
    let fewest = 8;
    // Past two entry lives: each entry holds only because its waiter refreshed it.
    for (let t = 0; t < 30_000; t += 20) {
      await clock.advance(20);
      fewest = Math.min(fewest, ...nodes.map((n) => n.liveWaiters(Q).length));
    }
    const asked = nodes[0].requests.filter((r) => r.script === "fair-acquire").length;
    stop.abort();
    await clock.run(Promise.all(waiters));
    expect(fewest).toBe(8);
    // Nobody asked often: listening, each slept until its heartbeat (the holder's PTTL is longer).
    expect(asked).toBeLessThanOrEqual(8 * (2 + 4));
  });
});
