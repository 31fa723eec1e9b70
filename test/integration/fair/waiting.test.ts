// Fair waiting on five real redis-server nodes through the REST bridge: a herd that starts at once is served one at a
// time, steady contention serves everyone and never two inside, a waiter killed mid-line holds the next one up only
// for its claim window once the resource is free; over slow links a live waiter's entry never lapses and the line is
// served in ticket order through handovers; an entry lives its waiter's maxWait + 2 s and a line key 5–6 s past its last
// deadline; a line key deleted mid-wait forms again in ticket order on the waiters' next attempts. These assert
// outcomes (mutual exclusion, everyone served, nothing left behind); the figures are bench/run.ts's `contention`
// scenario. The two slow-link tests time claims against the 200 ms claim window: on a loaded 2-core machine (the
// whole suite at once) timers run late and a woken waiter misses its window for that reason alone. They run with
// SLOW_LINK_TIMING=1, alone.
import { describe, expect, it } from "vitest";
import { Redlock, type Lock, type RedlockNode } from "../../../src/index.ts";
import { CLAIM_MS } from "../../../src/lock/line.ts";
import { LINE_KEEP_STEP_MS, LINE_LINGER_MS } from "../../../src/scripts/queue.ts";
import { loadScripts, settle, useCluster } from "../fixture.ts";

const env = useCluster();
const timing = process.env.SLOW_LINK_TIMING === "1";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const LINE = (key: string) => `edge-redlock:line:${key}`;
/** Entries of a line on every node (raw: lapsed ones included). */
const sizes = (key: string) => Promise.all(env.tcp.map((c) => c.zcard(LINE(key))));
/** Polls every 5 ms, at most ~2 s, until `ready`. */
async function until(ready: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 400 && !(await ready()); i++) await sleep(5);
}

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
  it("a herd of 16 that start at once: every one is served, one at a time, and the lines end empty", async () => {
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
    // A late undo may leave an entry until its deadline (maxWait + 2 s): the line key then goes 5 s after it.
    for (const c of env.tcp) expect(await c.pttl("edge-redlock:line:herd")).toBeLessThanOrEqual(20_000 + 2_000 + 5_000);
    expect((await sizes("herd")).reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(2);
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

  it("a waiter killed mid-line: once the resource is free the next waiter is served after the dead head's claim window, and nothing of it stays", async () => {
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
    await until(async () => (await sizes("killed")).every((n) => n === 1));
    const next = new Redlock(env.nodes, { retryCount: -1 }).acquire(["killed"], 5_000, { maxWait: 10_000 });
    await until(async () => (await sizes("killed")).every((n) => n === 2));
    expect(await sizes("killed")).toEqual([2, 2, 2, 2, 2]);
    killed = true; // from now on the first waiter sends nothing (and never leaves the line)
    const released = Date.now();
    await holder.release();
    const lock = await next;
    const waited = Date.now() - released;
    expect(lock.attempts).toBeGreaterThan(1);
    // Its entry had 12 s to live (no maxWait): the release cut it to its claim window, which the line respected, and
    // no more (the next waiter, told it is next, asked once the window was over).
    expect(waited).toBeGreaterThanOrEqual(CLAIM_MS - 10);
    expect(waited).toBeLessThan(1_500);
    await lock.release();
    await settle(env);
    // The acquires that found its entry past its deadline dropped it: nothing of it stays, the line key is gone.
    expect(await sizes("killed")).toEqual([0, 0, 0, 0, 0]);
    expect(await Promise.all(env.tcp.map((c) => c.exists(LINE("killed"))))).toEqual([0, 0, 0, 0, 0]);
    stopDoomed.abort(); // the test's own clean-up: its retry loop would run on
    await doomed;
  });
});

/** The node's TIME in ms, in a script. */
const NOW = `local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;
/** Live entries of a line on one node, read atomically: deadline after the node's TIME. */
const LIVE = `${NOW}return redis.call("ZCOUNT", KEYS[1], "(" .. now, "+inf")`;
/** A line on one node, read atomically: the node's TIME (ms), the entries by deadline with their deadlines, the PTTL. */
const READ_LINE = `${NOW}return {now, redis.call("ZRANGE", KEYS[1], 0, -1, "WITHSCORES"), redis.call("PTTL", KEYS[1])}`;

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
      for (let i = 0; i < 300 && Number(await env.tcp[0].eval(LIVE, 1, LINE("slow-line"))) < 8; i++) await sleep(5);
      const seen: number[] = [];
      const end = Date.now() + 2_000;
      while (Date.now() < end) {
        seen.push(Math.min(...(await Promise.all(env.tcp.map((c) => c.eval(LIVE, 1, LINE("slow-line"))))).map(Number)));
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
      for (let i = 0; i < 300 && Number(await env.tcp[0].eval(LIVE, 1, LINE("slow-order"))) < 8; i++) await sleep(5);
      await holder.release();
      await Promise.all(waiters);
      await Promise.all(env.admins.map((a) => a.reset()));
      await settle(env);
      console.log(`served ${served.join(",")}`);
      expect(served).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    },
  );
});

describe("the line's deadlines and key (real cluster)", () => {
  it("an entry lives its waiter's maxWait + 2 s past the node's TIME, the line key 5 to 6 s past the last deadline; a line left by all is gone", async () => {
    const holder = await new Redlock(env.nodes).acquire(["linger"], 10_000);
    const stop = new AbortController();
    const wait = (maxWait: number) =>
      new Redlock(env.nodes)
        .acquire(["linger"], 1_000, { maxWait, signal: stop.signal })
        .then((lock) => lock.release())
        .catch(() => undefined);
    const short = wait(3_000);
    await until(async () => (await sizes("linger")).every((n) => n === 1));
    const long = wait(6_000);
    await until(async () => (await sizes("linger")).every((n) => n === 2));
    for (const c of env.tcp) {
      const [now, entries, pttl] = (await c.eval(READ_LINE, 1, LINE("linger"))) as [number, string[], number];
      expect(entries.length).toBe(4);
      // By deadline: the short waiter's entry first, then the long one's (its maxWait ends later).
      const [shortLeft, longLeft] = [Number(entries[1]) - now, Number(entries[3]) - now];
      expect(shortLeft).toBeGreaterThan(5_000 - 1_000);
      expect(shortLeft).toBeLessThanOrEqual(5_000);
      expect(longLeft).toBeGreaterThan(8_000 - 1_000);
      expect(longLeft).toBeLessThanOrEqual(8_000);
      expect(pttl - longLeft - LINE_LINGER_MS).toBeGreaterThanOrEqual(-5);
      expect(pttl - longLeft - LINE_LINGER_MS).toBeLessThanOrEqual(LINE_KEEP_STEP_MS + 5);
    }
    // Both stop waiting: their LEAVEs take the entries out, and the empty line's key goes with the last.
    stop.abort();
    await Promise.all([short, long]);
    await settle(env);
    expect(await Promise.all(env.tcp.map((c) => c.exists(LINE("linger"))))).toEqual([0, 0, 0, 0, 0]);
    await holder.release();
  });

  it("a line key deleted on every node mid-wait: the waiters' next attempts form the line again in ticket order", async () => {
    await loadScripts(env);
    const q = LINE("tamper");
    const holder = await new Redlock(env.nodes).acquire(["tamper"], 3_000);
    const served: number[] = [];
    // Waiters that keep their place by their own retries (every 100-300 ms), with the same ticket each time.
    const waiters = Array.from({ length: 4 }, async (_, i) => {
      await sleep(15 * i);
      const lock = await new Redlock(env.nodes, { fair: false }).acquire(["tamper"], 2_000, { maxWait: 10_000 });
      served.push(i);
      await sleep(10);
      await lock.release();
    });
    const live = () => Promise.all(env.tcp.map((c) => c.eval(LIVE, 1, q).then(Number)));
    await until(async () => (await live()).every((n) => n === 4));
    const before = await env.tcp[0].zrange(q, 0, -1);
    expect(before.length).toBe(4);
    await Promise.all(env.tcp.map((c) => c.del(q)));
    expect(await live()).toEqual([0, 0, 0, 0, 0]);
    // The holder still holds: every waiter's next attempt is refused and joins again, with its own ticket.
    await until(async () => (await live()).every((n) => n === 4));
    expect(await live()).toEqual([4, 4, 4, 4, 4]);
    for (const c of env.tcp) expect((await c.zrange(q, 0, -1)).sort()).toEqual([...before].sort());
    // (A FLUSHDB that also takes the holder's key does not keep the order: whoever asks first once the key is gone
    // wins, before the earlier waiters joined again. No node can know of a waiter it forgot.)
    await holder.release();
    await Promise.all(waiters);
    await settle(env);
    expect(served).toEqual([0, 1, 2, 3]);
  });
});
