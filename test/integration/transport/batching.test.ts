// Per-node batching and Upstash's key-locking flag through the real @upstash/redis, against real Redis.
import { Redis } from "@upstash/redis";
import { describe, expect, it } from "vitest";
import { Redlock, type RedlockOptions } from "../../../src/index.ts";
import { loadScripts, settle, until, useCluster } from "../fixture.ts";

const env = useCluster();
const config = () => env.cluster.nodes.map(({ url, token }) => ({ url, token }));
const counters = async () => (await Promise.all(env.admins.map((a) => a.state()))).map((s) => s.counters);
const resetCounters = () => Promise.all(env.admins.map((a) => a.resetCounters()));
const keys = (prefix: string, n = 20) => Array.from({ length: n }, (_, i) => `${prefix}:${i}`);
const held = async (key: string) => (await Promise.all(env.tcp.map((t) => t.exists(key)))).reduce((a, b) => a + b, 0);

/** Takes a lock on each key with Promise.all, waits until every node answered, then releases them all. */
async function lockAll(redlock: Redlock, items: string[], expectedPerNode: number): Promise<void> {
  const locks = await Promise.all(items.map((key) => redlock.acquire([key], 5_000)));
  // Every node has answered the acquisitions (so no acquire reply is still on its way at release time).
  await until(async () => (await counters()).every((c) => c.answered >= expectedPerNode));
  const results = await Promise.all(locks.map((lock) => lock.release()));
  await Promise.all(results.map((result) => result.pending));
}

describe("per-node batching (real Redis)", () => {
  it("20 locks taken and released with Promise.all cost one request per node for each: 10 requests in all", async () => {
    await loadScripts(env);
    await resetCounters();
    await lockAll(new Redlock(config(), { retryCount: 0 }), keys("many"), 1);
    const after = await counters();
    expect(after.map((c) => c.received)).toEqual([2, 2, 2, 2, 2]);
    expect(after.map((c) => c.pipelines)).toEqual([2, 2, 2, 2, 2]);
    // A new Redlock's first run of each script on a node is an EVAL, which loads it: still one request per round. The
    // first acquire's request also carries the probe of PUBLISH from a flagged script, once per node.
    for (const c of after) expect(c.commands).toEqual({ eval: 41 });
    for (const key of keys("many")) expect(await held(key)).toBe(0);
  });

  it("with batching off, each lock costs one request per node per round: 200 requests", async () => {
    await loadScripts(env);
    await resetCounters();
    await lockAll(new Redlock(config(), { retryCount: 0, batching: false }), keys("unbatched"), 20);
    const after = await counters();
    expect(after.map((c) => c.received)).toEqual([40, 40, 40, 40, 40]);
    expect(after.map((c) => c.pipelines)).toEqual([0, 0, 0, 0, 0]);
  });

  it("a lone request is a plain request, not a pipeline", async () => {
    await loadScripts(env);
    const redlock = new Redlock(config(), { retryCount: 0 });
    // A new Redlock's first publishing script carries a probe of PUBLISH from a flagged script: a pipeline of two.
    await lockAll(redlock, ["first"], 1);
    expect((await counters()).map((c) => c.pipelines)).toEqual([1, 1, 1, 1, 1]);
    await resetCounters();
    await lockAll(redlock, ["alone"], 1);
    const after = await counters();
    expect(after.map((c) => c.received)).toEqual([2, 2, 2, 2, 2]);
    expect(after.map((c) => c.pipelines)).toEqual([0, 0, 0, 0, 0]);
  });

  it("each command of a batch falls back from NOSCRIPT to EVAL on its own, and the fallbacks go out together", async () => {
    // A Redlock that ran its scripts, then nodes that lost them (a restart): every EVALSHA misses.
    const redlock = new Redlock(config(), { retryCount: 0 });
    await lockAll(redlock, ["noscript:warm"], 1);
    await Promise.all(env.tcp.map((c) => c.script("FLUSH")));
    await resetCounters();
    await lockAll(redlock, keys("noscript"), 2);
    const after = await counters();
    expect(after.map((c) => c.received)).toEqual([4, 4, 4, 4, 4]); // acquire: EVALSHA + EVAL pipelines; release: the same
    for (const c of after) expect(c.commands).toEqual({ evalsha: 40, eval: 40 });
    for (const key of keys("noscript")) expect(await held(key)).toBe(0);
  });

  it("a member whose caller gives up stops waiting at once; the others in its batch get their locks", async () => {
    await loadScripts(env);
    await Promise.all(env.admins.map((a) => a.faults({ latencyMs: 300 })));
    await resetCounters();
    const redlock = new Redlock(config(), { retryCount: 0 });
    const quitter = new AbortController();
    const [kept, gaveUp] = await Promise.all([
      redlock.acquire(["abort:kept"], 5_000),
      redlock.acquire(["abort:quit"], 5_000, { signal: quitter.signal }).catch((e: unknown) => e),
      new Promise((r) => setTimeout(r, 50)).then(() => quitter.abort(new Error("caller gave up"))),
    ]);
    expect(gaveUp).toEqual(new Error("caller gave up"));
    // Both acquisitions were in one request per node, and that request was not cut by the one who gave up.
    const after = await counters();
    expect(after.map((c) => c.pipelines)).toEqual([1, 1, 1, 1, 1]);
    expect(after.map((c) => c.abandoned)).toEqual([0, 0, 0, 0, 0]);
    expect(kept.resources).toEqual(["abort:kept"]);
    await Promise.all(env.admins.map((a) => a.faults({ latencyMs: 0 })));
    await (await kept.release()).pending;
    // The abandoned attempt ran on the nodes with the batch; its cleanup released it there.
    await until(async () => (await counters()).every((c) => c.inFlight === 0));
    expect(await held("abort:quit")).toBe(0);
    expect(await held("abort:kept")).toBe(0);
  });

  it("a user's Redis instances are used as they are: one request per command, no batching", async () => {
    const clients = env.cluster.nodes.map(
      (n) =>
        new Redis({
          url: n.url,
          token: n.token,
          retry: { retries: 0 },
          enableAutoPipelining: false,
          automaticDeserialization: false,
        }),
    );
    await loadScripts(env);
    await resetCounters();
    await lockAll(new Redlock(clients, { retryCount: 0 }), keys("user", 5), 5);
    expect((await counters()).map((c) => c.received)).toEqual([10, 10, 10, 10, 10]);
  });
});

describe("Upstash key-based locking (real Redis)", () => {
  const options: RedlockOptions = { retryCount: 0 };

  it("every script the lock sends carries #!lua flags=allow-key-locking where the node accepts it", async () => {
    await loadScripts(env); // through the bridges, so they know each SHA the lock sends is a flagged script's
    await resetCounters();
    const redlock = new Redlock(env.nodes, options); // counted: settle() waits for every request, stragglers too
    const lock = await redlock.acquire(["flag:k"], 5_000, { fencing: true });
    await lock.extend(6_000);
    await (await lock.release()).pending;
    await settle(env);
    for (const c of await counters()) {
      const scripts = (c.commands.evalsha ?? 0) + (c.commands.eval ?? 0);
      expect(scripts).toBeGreaterThanOrEqual(3); // acquire, fence, extend, release (a node may miss the cut fence round)
      expect(c.flaggedScripts).toBe(scripts); // all of them
    }
  });

  it("falls back, per node, to scripts without the flag where a node rejects it, and remembers it", async () => {
    await env.admins[2].faults({ rejectKeyLocking: true }); // a REST proxy in front of plain Redis 7
    await resetCounters();
    const redlock = new Redlock(config(), options);
    const first = await redlock.acquire(["fallback:1"], 5_000);
    // Each node: an EVAL (a first run); node 2 one more (the flagged EVAL is rejected, then the plain one).
    await until(async () => (await counters()).every((c, i) => c.received === (i === 2 ? 2 : 1) && c.inFlight === 0));
    expect(await env.tcp[2].get("fallback:1")).toBe(first.value); // node 2 granted with the plain script
    let node2 = (await counters())[2];
    // The probe of PUBLISH from a flagged script and EVAL (flagged) → "Unexpected flag"; EVAL without the flag →
    // granted.
    expect(node2.commands).toEqual({ eval: 3 });
    expect(node2.flaggedScripts).toBe(2);
    await resetCounters();
    const second = await redlock.acquire(["fallback:2"], 5_000);
    await until(async () => (await counters()).every((c) => c.received === 1 && c.inFlight === 0));
    node2 = (await counters())[2];
    expect(node2.commands).toEqual({ evalsha: 1 }); // remembered: straight to the plain script's SHA
    expect(node2.flaggedScripts).toBe(0);
    expect((await counters())[0].flaggedScripts).toBe(1); // the other nodes still get the flag
    expect(await env.tcp[2].get("fallback:2")).toBe(second.value);
    await Promise.all([first, second].map(async (lock) => (await lock.release()).pending));
  });

  it("three nodes that reject the flag still make a quorum once they fell back", async () => {
    await Promise.all([0, 1, 2].map((i) => env.admins[i].faults({ rejectKeyLocking: true })));
    await Promise.all([3, 4].map((i) => env.admins[i].faults({ status: 503 })));
    const lock = await new Redlock(config(), options).acquire(["fallback:quorum"], 5_000);
    expect(lock.validityMs).toBeGreaterThan(4_000);
    for (const i of [0, 1, 2]) expect(await env.tcp[i].get("fallback:quorum")).toBe(lock.value);
    await Promise.all(env.admins.map((a) => a.reset()));
    await (await lock.release()).pending;
  });
});
