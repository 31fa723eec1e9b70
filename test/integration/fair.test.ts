// Fair waiting on five real redis-server nodes through the REST bridge: a herd, steady contention, and a
// waiter killed mid-queue. These assert outcomes (mutual exclusion, everyone served, nothing left behind),
// never timings: the figures are bench/run.ts's `contention` scenario.
import { describe, expect, it } from "vitest";
import { Redlock, type Lock, type RedlockNode } from "../../src/index.ts";
import { settle, useCluster } from "./fixture.ts";

const env = useCluster();
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
  it("a failed attempt granted on nodes 0 and 1 puts the ticket back in line there (REQUEUE), and leaves none once held", async () => {
    await Promise.all([2, 3, 4].map((n) => env.tcp[n].set("requeue", "someone-else", "PX", 400)));
    const inLine: number[][] = env.nodes.map(() => []);
    const watched: RedlockNode[] = env.nodes.map((node, i) => ({
      label: node.label,
      run: (script, keys, args, signal) =>
        node.run(script, keys, args, signal).then(async (reply) => {
          if (script.name === "requeue") inLine[i].push(await env.tcp[i].zcard(QUEUE("requeue")));
          return reply;
        }),
    }));
    const lock = await new Redlock(watched).acquire(["requeue"], 2_000, { maxWait: 3_000 });
    expect(lock.attempts).toBeGreaterThan(1);
    expect(inLine[0].length).toBeGreaterThan(0);
    expect([...inLine[0], ...inLine[1]].every((n) => n === 1)).toBe(true);
    expect(inLine.slice(2).flat()).toEqual([]);
    await lock.release();
    await settle(env);
    expect(await Promise.all(env.tcp.map((c) => c.zcard(QUEUE("requeue"))))).toEqual([0, 0, 0, 0, 0]);
  });

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
        killed ? new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason))) : node.run(script, keys, args, signal),
    }));
    const stopDoomed = new AbortController();
    const doomed = new Redlock(killable, { retryCount: -1 }).acquire(["killed"], 5_000, { signal: stopDoomed.signal }).catch(() => undefined);
    // It is in line on every node before the next waiter comes.
    for (let i = 0; i < 200 && (await Promise.all(env.tcp.map((c) => c.zcard(QUEUE("killed"))))).some((n) => n !== 1); i++) await sleep(5);
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
