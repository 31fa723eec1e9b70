// Waiting costs a request per handover, not per millisecond: a waiter in line sleeps until a release wakes it over
// Pub/Sub, or until the holder's time is up when the wakeup is lost; a dead head is skipped within its claim window;
// an outage is not turned into a flood; a client's clock buys no priority; `fair: false` does not jump the line;
// `maxWait` and `maxRequests` decide as documented; a line key does not outlive its waiters. Real redis-server behind
// the bridge, real @upstash/redis.
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, Redlock } from "../../../src/index.ts";
import { FAIR_ACQUIRE } from "../../../src/scripts/index.ts";
import { LINE_KEEP_STEP_MS, LINE_LINGER_MS } from "../../../src/scripts/queue.ts";
import { systemClock, type Clock } from "../../../src/support/clock.ts";
import { settle, useCluster } from "../fixture.ts";

const fixture = useCluster();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Requests (scripts and subscriptions) sent through the fixture's nodes in this test so far. */
const calls = () => fixture.sent.flat().length;
const redlock = (options: ConstructorParameters<typeof Redlock>[1] = {}) =>
  new Redlock(fixture.nodes, { warnings: false, ...options });
/** A clock `offsetMs` away from this host's wall clock (monotonic time unchanged). */
const skewed = (offsetMs: number): Clock => ({ ...systemClock, epoch: () => Date.now() + offsetMs });
/** A ticket in the line's form, taken `agoMs` before now, with a claim window of `claimMs`. */
const ticket = (agoMs: number, claimMs = 200) =>
  `${String(Date.now() - agoMs).padStart(16, "0")}${"f".repeat(16)}${String(claimMs).padStart(5, "0")}`;

describe("woken waiting", () => {
  it("a waiter behind a holder sends at most 20 requests, and the release wakes it", async () => {
    const holder = await redlock().acquire("res", 10_000);
    await settle(fixture);
    const start = calls();
    const waiting = redlock().acquire("res", 10_000, { maxWait: 8_000 });
    await sleep(1_500);
    const released = Date.now();
    await holder.release();
    const lock = await waiting;
    const servedAfter = Date.now() - released;
    const sent = fixture.sent.flat();
    // Its first attempt, two streams, the granting attempt; the holder's release (5 requests) is not the waiter's.
    expect(calls() - start - 5, sent.join(" ")).toBeLessThanOrEqual(20);
    expect(sent.filter((name) => name === "subscribe").length).toBe(2);
    // Woken by the release, not by its fallback at the holder's PTTL (8.5 s later).
    expect(servedAfter).toBeLessThan(2_000);
    await lock.release();
  });

  it("a lost wakeup is covered by the fallback at the holder's expiry: the waiter never hangs", async () => {
    await Promise.all(fixture.admins.map((a) => a.faults({ dropMessages: 100 })));
    const holder = await redlock().acquire("res", 1_500);
    const began = Date.now();
    const waiting = redlock().acquire("res", 10_000, { maxWait: 6_000 });
    await sleep(300);
    await holder.release();
    const lock = await waiting;
    const waited = Date.now() - began;
    // No wakeup arrived: it asked again when the holder's time (1.5 s) was up, plus a round.
    expect(waited).toBeGreaterThan(1_000);
    expect(waited).toBeLessThan(3_000);
    await lock.release();
  });

  it("a dead first in line is skipped within its claim window once the resource is free", async () => {
    const holder = await redlock().acquire("res", 10_000);
    // A waiter that joined the line and died: its entry would live 30 s.
    const ghost = ticket(1_000);
    await Promise.all(
      fixture.nodes.map((node) =>
        node.run(
          FAIR_ACQUIRE,
          ["res", "edge-redlock:line:res"],
          ["ghost", "10000", "1", ghost, "30000", "1", "1000"],
          AbortSignal.timeout(500),
        ),
      ),
    );
    const waiting = redlock().acquire("res", 10_000, { maxWait: 8_000 });
    await sleep(300);
    const released = Date.now();
    await holder.release();
    const lock = await waiting;
    // Told it is next, it asked once the ghost's 200 ms window was over.
    expect(Date.now() - released).toBeLessThan(1_500);
    await lock.release();
  });

  it("an outage (3 of 5 nodes answer 503): one acquire with default options sends at most 120 requests", async () => {
    await Promise.all(fixture.admins.slice(0, 3).map((a) => a.faults({ status: 503 })));
    const start = calls();
    const error = await redlock()
      .acquire("res", 10_000)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockAcquisitionError);
    expect((error as LockAcquisitionError).reason).toBe("unreachable");
    await sleep(600); // its LEAVE
    const sent = fixture.sent.flat();
    expect(calls() - start).toBeLessThanOrEqual(120);
    expect(sent.filter((name) => name === "subscribe")).toEqual([]);
  }, 60_000);

  it("an outage's growing back-off does not give up before maxWait: it asks once more then", async () => {
    await Promise.all(fixture.admins.slice(0, 3).map((a) => a.faults({ status: 503 })));
    const began = Date.now();
    const error = await redlock({ retryDelay: 200, retryJitter: 0 })
      .acquire("res", 10_000, { maxWait: 1_300 })
      .catch((e: unknown) => e);
    const failedAfter = Date.now() - began;
    expect(error).toBeInstanceOf(LockAcquisitionError);
    expect((error as LockAcquisitionError).reason).toBe("unreachable");
    // Back-off 200, 400, 800 ms: the third would end past 1.3 s; it is cut there, and the last ask fails at once.
    expect(failedAfter).toBeGreaterThanOrEqual(1_250);
    expect(failedAfter).toBeLessThan(1_800);
  });
});

describe("one line for every client", () => {
  it("a fair: false client is not granted ahead of a live waiter", async () => {
    const holder = await redlock().acquire("res", 10_000);
    const order: string[] = [];
    const fair = redlock()
      .acquire("res", 10_000, { maxWait: 8_000 })
      .then((l) => {
        order.push("fair");
        return l;
      });
    await sleep(200);
    const random = redlock({ fair: false, retryDelay: 20, retryJitter: 10 })
      .acquire("res", 10_000, { maxWait: 8_000 })
      .then((l) => {
        order.push("random");
        return l;
      });
    await sleep(300);
    await holder.release();
    const first = await fair;
    await sleep(200);
    expect(order).toEqual(["fair"]);
    await first.release();
    await (await random).release();
    expect(order).toEqual(["fair", "random"]);
  });

  it("a client whose clock is an hour behind is not served ahead of an honest waiter", async () => {
    const holder = await redlock().acquire("res", 10_000);
    const order: string[] = [];
    const honest = redlock()
      .acquire("res", 10_000, { maxWait: 8_000 })
      .then((l) => {
        order.push("honest");
        return l;
      });
    await sleep(200);
    const behind = redlock({ clock: skewed(-3_600_000) })
      .acquire("res", 10_000, { maxWait: 8_000 })
      .then((l) => {
        order.push("behind");
        return l;
      });
    await sleep(300);
    await holder.release();
    await (await honest).release();
    await (await behind).release();
    expect(order).toEqual(["honest", "behind"]);
  });

  it("a client whose clock is an hour ahead is served within its maxWait", async () => {
    const holder = await redlock().acquire("res", 10_000);
    const ahead = redlock({ clock: skewed(3_600_000) }).acquire("res", 10_000, { maxWait: 5_000 });
    await sleep(500);
    await holder.release();
    await (await ahead).release();
  });

  it("readers whose clocks are an hour behind, reading back to back, do not keep a writer out", async () => {
    const doc = (clock?: Clock) => redlock(clock ? { clock } : {}).readWriteLock("doc");
    let stop = false;
    let reads = 0;
    // Staggered, so that a reader always holds: without the clock check their tickets (an hour old) would always sort
    // ahead of the writer's, and a reader at the head of the line joins the readers that hold.
    const reader = async (r: number) => {
      const rw = doc(skewed(-3_600_000));
      await sleep(r * 20);
      while (!stop) {
        const lock = await rw.acquireRead(2_000, { maxWait: 5_000 });
        reads++;
        await sleep(50);
        await lock.release();
      }
    };
    const readers = [0, 1, 2].map(reader);
    await sleep(300);
    const asked = Date.now();
    const write = await doc().acquireWrite(2_000, { maxWait: 3_000 });
    const waited = Date.now() - asked;
    await write.release();
    stop = true;
    await Promise.all(readers);
    // Served behind the readers that were in before it, not after every read the readers keep starting.
    expect(reads).toBeGreaterThan(2);
    expect(waited).toBeLessThan(1_000);
  });
});

describe("what ends an acquisition", () => {
  it("maxWait decides, not retryCount: one retry allowed, yet it waits for a holder of 1.5 s", async () => {
    const holder = await redlock().acquire("res", 10_000);
    const waiting = redlock({ fair: false }).acquire("res", 10_000, { retryCount: 1, maxWait: 5_000 });
    await sleep(1_500);
    await holder.release();
    await (await waiting).release();
  });

  it("maxRequests ends it with reason budget before the cap is passed", async () => {
    const holder = await redlock().acquire("res", 10_000);
    const start = calls();
    const error = await redlock({ fair: false, retryDelay: 20, retryJitter: 0 })
      .acquire("res", 10_000, { maxWait: 5_000, maxRequests: 30 })
      .catch((e: unknown) => e);
    await sleep(600);
    expect(error).toBeInstanceOf(LockAcquisitionError);
    expect((error as LockAcquisitionError).reason).toBe("budget");
    expect((error as Error).message).toMatch(/maxRequests/);
    expect(calls() - start).toBeLessThanOrEqual(30);
    await holder.release();
  });

  it("a line key expires within 6 s of its last entry's deadline", async () => {
    const holder = await redlock().acquire("res", 10_000);
    await redlock()
      .acquire("res", 10_000, { maxWait: 300 })
      .catch(() => undefined);
    // Left: the entry is gone at once; a crashed waiter's would live its maxWait + 2 s; the key 5 s more, rounded up
    // to a second.
    const pttls = await Promise.all(fixture.tcp.map((c) => c.pttl("edge-redlock:line:res")));
    for (const pttl of pttls) expect(pttl).toBeLessThanOrEqual(300 + 2_000 + LINE_LINGER_MS + LINE_KEEP_STEP_MS);
    await holder.release();
  });

  it("after a storm of waiters that died, every key left has an expiry within its ttl + 60 s (fence counters aside)", async () => {
    const holder = await redlock().acquire("storm", 2_000, { fencing: true });
    // 25 waiters that joined the line and died (no LEAVE): with maxWait (life 5 s) and without (life 12 s).
    await Promise.all(
      Array.from({ length: 25 }, (_, i) =>
        Promise.all(
          fixture.nodes.map((node) =>
            node.run(
              FAIR_ACQUIRE,
              ["storm", "edge-redlock:line:storm"],
              [`dead-${i}`, "2000", "1", ticket(1_000 - i), i % 2 === 0 ? "5000" : "12000", "1", "0"],
              AbortSignal.timeout(1_000),
            ),
          ),
        ),
      ),
    );
    await sleep(3_000);
    for (const tcp of fixture.tcp) {
      for (const key of await tcp.keys("*")) {
        const pttl = await tcp.pttl(key);
        if (key.startsWith("edge-redlock:fence:")) continue;
        expect(pttl, `${key} has no expiry`).toBeGreaterThan(0);
        // The lock's ttl is 2 s; a line key lives 5 s past its last deadline (12 s).
        expect(pttl, key).toBeLessThanOrEqual(12_000 + 5_000 + 60_000);
      }
    }
    await holder.release();
  });
});
