// Fair waiting on five real redis-server nodes through the REST bridge: a herd that starts at once is served one at a
// time, steady contention serves everyone and never two inside, a waiter killed mid-queue holds the next one up only
// until its entry lapses; over slow links a live waiter's entry never lapses and the line is served in ticket order
// through handovers; the queue's clock rebases without dropping a live waiter or reviving a lapsed one, and a queue key
// that loses its expiry or is deleted mid-wait forms again in ticket order. These assert outcomes (mutual exclusion,
// everyone served, nothing left behind); the figures are bench/run.ts's `contention` scenario.
// The two slow-link tests time waits against a 300 ms lease: on a loaded 2-core machine (the whole suite at once)
// timers run late and entries lapse for that reason alone. They run with SLOW_LINK_TIMING=1, alone; the deterministic
// form of the first is in test/unit/fair/waiting.test.ts (virtual clock).
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, Redlock, type Lock, type RedlockNode } from "../../../src/index.ts";
import { loadScripts, settle, useCluster } from "../fixture.ts";

const env = useCluster();
const timing = process.env.SLOW_LINK_TIMING === "1";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const QUEUE = (key: string) => `edge-redlock:queue:${key}`;

/** Records sections and fails on two at once. */
function sections() {
  let inside = 0;
  let overlaps = 0;
  const per = new Map<number, number>();
  return {
    async run(client: number, lock: Lock, holdMs: number) {
      inside++;
      if (inside > 1) overlaps++;
      per.set(client, (per.get(client) ?? 0) + 1);
      await sleep(holdMs);
      inside--;
      await lock.release();
    },
    get overlaps() {
      return overlaps;
    },
    per,
  };
}

describe("fair waiting on the real cluster", () => {
  it("a herd of 16 that start at once: every one is served, one at a time, and the queues end empty", async () => {
    const seen = sections();
    const attempts: number[] = [];
    await Promise.all(
      Array.from({ length: 16 }, async (_, client) => {
        const lock = await new Redlock(env.nodes, { retryCount: -1 }).acquire(["herd"], 2_000, { maxWait: 20_000 });
        attempts.push(lock.attempts);
        await seen.run(client, lock, 20);
      }),
    );
    expect(seen.overlaps).toBe(0);
    expect(seen.per.size).toBe(16);
    await settle(env);
    expect(await Promise.all(env.tcp.map((c) => c.zcard(QUEUE("herd"))))).toEqual([0, 0, 0, 0, 0]);
    expect(await Promise.all(env.tcp.map((c) => c.exists("herd")))).toEqual([0, 0, 0, 0, 0]);
  });

  it("steady contention: 8 clients loop for 2 s with maxWait 3 s; none gives up, all are served, never two inside", async () => {
    const seen = sections();
    let gaveUp = 0;
    const end = Date.now() + 2_000;
    await Promise.all(
      Array.from({ length: 8 }, async (_, client) => {
        const redlock = new Redlock(env.nodes);
        while (Date.now() < end) {
          let lock: Lock;
          try {
            lock = await redlock.acquire(["steady"], 2_000, { maxWait: 3_000 });
          } catch {
            gaveUp++;
            continue;
          }
          await seen.run(client, lock, 10);
        }
      }),
    );
    expect({ overlaps: seen.overlaps, gaveUp, served: seen.per.size }).toEqual({ overlaps: 0, gaveUp: 0, served: 8 });
  });

  it("a waiter killed mid-queue: the next waiter is served once its entry lapses, and nothing of it stays", async () => {
    const holder = await new Redlock(env.nodes).acquire(["killed"], 5_000);
    let killed = false;
    const killable: RedlockNode[] = env.nodes.map((node) => ({
      label: node.label,
      run: (script, keys, args, signal) =>
        killed
          ? new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason)))
          : node.run(script, keys, args, signal),
    }));
    const stopDoomed = new AbortController();
    const doomed = new Redlock(killable, { retryCount: -1 })
      .acquire(["killed"], 5_000, { signal: stopDoomed.signal })
      .catch(() => undefined);
    // It is in line on every node before the next waiter comes.
    for (
      let i = 0;
      i < 200 && (await Promise.all(env.tcp.map((c) => c.zcard(QUEUE("killed"))))).some((n) => n !== 1);
      i++
    )
      await sleep(5);
    const next = new Redlock(env.nodes, { retryCount: -1 }).acquire(["killed"], 5_000, { maxWait: 10_000 });
    await sleep(50);
    expect(await Promise.all(env.tcp.map((c) => c.zcard(QUEUE("killed"))))).toEqual([2, 2, 2, 2, 2]);
    killed = true; // from now on the first waiter sends nothing (and never leaves the line)
    await holder.release();
    const lock = await next;
    expect(lock.attempts).toBeGreaterThan(1);
    await lock.release();
    await settle(env);
    // Its entry is only removed lazily: a script that looks at the queue drops it once its lease ran out.
    await sleep(350);
    const probe = await new Redlock(env.nodes, { retryCount: 0 }).acquire(["killed"], 1_000);
    await probe.release();
    await settle(env);
    expect(await Promise.all(env.tcp.map((c) => c.zcard(QUEUE("killed"))))).toEqual([0, 0, 0, 0, 0]);
    stopDoomed.abort(); // the test's own clean-up: its retry loop would run on
    await doomed;
  });
});

/** Live entries of a queue on one node, read atomically: deadline after the queue's own clock. */
const LIVE = `local left = redis.call("PTTL", KEYS[1])
if left < 0 then return 0 end
return redis.call("ZCOUNT", KEYS[1], "(" .. (3600 * 1000 - left), "+inf")`;

describe("fair waiting over slow links (real cluster)", () => {
  it.runIf(timing)(
    "a live waiter's entry never lapses while it waits, also when a round trip takes 160 ms",
    async () => {
      await loadScripts(env);
      await Promise.all(env.admins.map((a) => a.faults({ latencyMs: 160 })));
      const holder = await new Redlock(env.nodes).acquire(["slow-line"], 4_000);
      const served: number[] = [];
      const waiters = Array.from({ length: 8 }, async (_, i) => {
        await sleep(20 * i); // tickets in this order
        const lock = await new Redlock(env.nodes, { retryCount: -1 }).acquire(["slow-line"], 3_000, {
          maxWait: 20_000,
        });
        served.push(i);
        await sleep(20);
        await lock.release();
      });
      // Everyone in line on node 0 (its first attempt landed), then watch the line on every node for 2 s while the key is held.
      for (let i = 0; i < 300 && Number(await env.tcp[0].eval(LIVE, 1, QUEUE("slow-line"))) < 8; i++) await sleep(5);
      const seen: number[] = [];
      const end = Date.now() + 2_000;
      while (Date.now() < end) {
        seen.push(
          Math.min(...(await Promise.all(env.tcp.map((c) => c.eval(LIVE, 1, QUEUE("slow-line"))))).map(Number)),
        );
        await sleep(5);
      }
      await holder.release();
      await Promise.all(waiters);
      await Promise.all(env.admins.map((a) => a.reset()));
      await settle(env);
      console.log(
        `live entries on any node: fewest ${Math.min(...seen)} of 8 in ${seen.length} samples; served ${served.join(",")}`,
      );
      expect({ fewest: Math.min(...seen), samples: seen.length > 50 }).toEqual({ fewest: 8, samples: true });
    },
  );

  it.runIf(timing)(
    "the line is served in ticket order through handovers (split votes) when a round trip takes 160 ms",
    async () => {
      await loadScripts(env);
      await Promise.all(env.admins.map((a) => a.faults({ latencyMs: 160 })));
      const holder = await new Redlock(env.nodes).acquire(["slow-order"], 4_000);
      const served: number[] = [];
      const waiters = Array.from({ length: 8 }, async (_, i) => {
        await sleep(20 * i); // tickets in this order
        const lock = await new Redlock(env.nodes, { retryCount: -1 }).acquire(["slow-order"], 3_000, {
          maxWait: 20_000,
        });
        served.push(i);
        await sleep(20);
        await lock.release();
      });
      for (let i = 0; i < 300 && Number(await env.tcp[0].eval(LIVE, 1, QUEUE("slow-order"))) < 8; i++) await sleep(5);
      await holder.release();
      await Promise.all(waiters);
      await Promise.all(env.admins.map((a) => a.reset()));
      await settle(env);
      console.log(`served ${served.join(",")}`);
      expect(served).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    },
  );
});

describe("the queue's own clock and key (real cluster)", () => {
  it("the queue clock rebases after half an hour without dropping a live waiter or reviving a lapsed one", async () => {
    await loadScripts(env);
    const q = QUEUE("clock");
    const EARLY = `${"0".repeat(16)}${"0".repeat(16)}`; // smaller than any real ticket
    const LAPSED = `${"0".repeat(16)}${"0".repeat(15)}1`;
    // A queue 30 min minus 10 ms old (clock 1 799 990): one waiter live for 2 s more, one lapsed 5 ms ago.
    await Promise.all(
      env.tcp.map(async (c) => {
        await c.zadd(q, 1_799_990 + 2_000, EARLY, 1_799_990 - 5, LAPSED);
        await c.pexpire(q, 1_800_010);
      }),
    );
    await sleep(30); // past half the epoch: the next script rebases
    const once = new Redlock(env.nodes, { retryCount: 0 });
    await expect(once.acquire(["clock"], 1_000)).rejects.toBeInstanceOf(LockAcquisitionError);
    for (const c of env.tcp) {
      const pttl = await c.pttl(q);
      expect(pttl).toBeGreaterThan(3_600_000 - 1_000);
      const entries = await c.zrange(q, 0, -1, "WITHSCORES");
      expect(entries[0]).toBe(EARLY);
      expect(entries.length).toBe(2); // the lapsed one is gone
      const now = 3_600_000 - pttl;
      expect(Number(entries[1]) - now).toBeGreaterThan(1_800); // still ~1.97 s to live, on the new clock
      expect(Number(entries[1]) - now).toBeLessThanOrEqual(2_000);
    }
    await Promise.all(env.tcp.map((c) => c.zrem(q, EARLY)));
    const lock = await once.acquire(["clock"], 1_000);
    await lock.release();
    await settle(env);
  });

  it("a queue key that loses its expiry, or is deleted, mid-wait: the line forms again in ticket order", async () => {
    await loadScripts(env);
    const q = QUEUE("tamper");
    const holder = await new Redlock(env.nodes).acquire(["tamper"], 3_000);
    const served: number[] = [];
    const waiters = Array.from({ length: 4 }, async (_, i) => {
      await sleep(15 * i);
      const lock = await new Redlock(env.nodes, { retryCount: -1 }).acquire(["tamper"], 2_000, { maxWait: 10_000 });
      served.push(i);
      await sleep(10);
      await lock.release();
    });
    for (let i = 0; i < 300 && Number(await env.tcp[0].eval(LIVE, 1, q)) < 4; i++) await sleep(5);
    await Promise.all(env.tcp.slice(0, 3).map((c) => c.persist(q))); // no expiry: not ours, dropped by the next script
    await Promise.all(env.tcp.slice(3).map((c) => c.del(q)));
    await sleep(150); // the waiters come back with the same tickets
    expect(await Promise.all(env.tcp.map((c) => c.eval(LIVE, 1, q).then(Number)))).toEqual([4, 4, 4, 4, 4]);
    // (A FLUSHDB that also takes the holder's key does not keep the order: whoever asks first once the key is gone
    // wins, before the earlier waiters re-register. No node can know of a waiter it forgot.)
    await holder.release();
    await Promise.all(waiters);
    await settle(env);
    expect(served).toEqual([0, 1, 2, 3]);
  });
});
