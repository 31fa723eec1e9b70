// A database that refuses PUBLISH from a script loses wakeups, nothing else. Where only a flagged script is refused
// (Upstash's key-locking rules may say so), the first script that publishes finds it out with a probe in its own
// pipeline request, and the scripts that publish go without the flag from then on: a release wakes the waiter at
// once. Where every script is refused, the fair scripts still grant, release and keep the line (their PUBLISH is a
// pcall), and the waiter is served by its fallback when the holder's time is up. Real redis-server behind the bridge
// (its `refuseScriptPublish` fault, or a proxy that refuses PUBLISH in every script), real @upstash/redis.
import { describe, expect, it } from "vitest";
import { Redlock, upstashNode, type EventHandler } from "../../../src/index.ts";
import { settle, useCluster } from "../fixture.ts";
import { refusingEngine } from "../refusing-engine.ts";

const fixture = useCluster();

/** A Redlock with nodes of its own (as an isolate has): what it learned of a node is not shared. */
function fresh(urls: readonly string[], onEvent?: EventHandler): Redlock {
  const nodes = fixture.cluster.nodes.map((n, i) => upstashNode({ url: urls[i], token: n.token }));
  return new Redlock(nodes, { warnings: false, onEvent });
}

/** Resolves once a waiter's retry sleeps past 1 s: on the holder's time, a subscription alive (else it is shorter). */
function onFallback(): { onEvent: EventHandler; done: Promise<void> } {
  let done!: () => void;
  const promise = new Promise<void>((resolve) => {
    done = resolve;
  });
  return { onEvent: (event) => event.type === "retry" && event.waitMs > 1_000 && done(), done: promise };
}

/** A waiter behind a 1.5-s holder that releases once the waiter sleeps: ms from the release to the grant. */
async function handover(urls: readonly string[]): Promise<{ afterRelease: number; afterExpiry: number }> {
  const holder = await fresh(urls).acquire("res", 1_500);
  const expires = Date.now() + 1_500;
  const asleep = onFallback();
  const waiting = fresh(urls, asleep.onEvent).acquire("res", 5_000, { maxWait: 6_000 });
  // Released once the waiter sleeps on its fallback with a stream open: only a wakeup could end that sleep early.
  await asleep.done;
  const releasedAt = Date.now();
  const { released } = await holder.release();
  expect(released).toBeGreaterThanOrEqual(3);
  const lock = await waiting;
  const grantedAt = Date.now();
  expect((await lock.release()).released).toBeGreaterThanOrEqual(3);
  return { afterRelease: grantedAt - releasedAt, afterExpiry: grantedAt - expires };
}

/** Nothing left behind: no resource key, and the line holds no one. */
async function nothingLeft(): Promise<void> {
  await settle(fixture);
  expect(await Promise.all(fixture.tcp.map((t) => t.exists("res")))).toEqual([0, 0, 0, 0, 0]);
  const lines = await Promise.all(fixture.tcp.map((t) => t.keys("edge-redlock:line:*")));
  for (const [i, keys] of lines.entries())
    for (const key of keys) expect(await fixture.tcp[i].zcard(key), `${key} on node ${i}`).toBe(0);
}

const direct = () => fixture.cluster.nodes.map((n) => n.url);

describe("a node that refuses PUBLISH from a flagged script", () => {
  it("is found out by a probe in the first publishing script's request, at no request more", async () => {
    await Promise.all(fixture.admins.map((a) => a.faults({ refuseScriptPublish: true })));
    await Promise.all(fixture.admins.map((a) => a.resetCounters()));
    const redlock = fresh(direct());
    await (await redlock.acquire("res", 5_000)).release();
    const first = (await Promise.all(fixture.admins.map((a) => a.state()))).map((s) => s.counters);
    for (const c of first) {
      // The acquire and the release: two requests, the acquire a pipeline of the probe and the script.
      expect(c.received).toBe(2);
      expect(c.pipelines).toBe(1);
      expect(c.commands.eval).toBe(3);
    }
    // From then on the node is known: no probe, the same requests as before.
    await Promise.all(fixture.admins.map((a) => a.resetCounters()));
    await (await redlock.acquire("res", 5_000)).release();
    for (const { counters: c } of await Promise.all(fixture.admins.map((a) => a.state()))) {
      expect(c.received).toBe(2);
      expect(c.pipelines).toBe(0);
      expect((c.commands.eval ?? 0) + (c.commands.evalsha ?? 0)).toBe(2);
      // The scripts that publish (both are fair scripts) now go without the flag.
      expect(c.flaggedScripts).toBe(0);
    }
    await nothingLeft();
  });

  it("sends the scripts that publish without the flag from then on: a release wakes the waiter at once", async () => {
    await Promise.all(fixture.admins.map((a) => a.faults({ refuseScriptPublish: true })));
    const { afterRelease } = await handover(direct());
    expect(afterRelease).toBeLessThan(500);
    await nothingLeft();
  });

  it("with the fault off, the same release wakes the waiter at once", async () => {
    const { afterRelease } = await handover(direct());
    expect(afterRelease).toBeLessThan(500);
    await nothingLeft();
  });
});

describe("a node that refuses PUBLISH in every script", () => {
  it("costs the waiter its wakeup, not the lock: grants and releases go through, the fallback serves it", async () => {
    const engines = await Promise.all(fixture.cluster.nodes.map((n) => refusingEngine(n.url, "publish")));
    try {
      const { afterRelease, afterExpiry } = await handover(engines.map((e) => e.url));
      // No wakeup came: it asked again when the holder's 1.5 s were up, and not long after.
      expect(afterExpiry).toBeGreaterThan(-200);
      expect(afterRelease).toBeLessThan(2_500);
      await nothingLeft();
    } finally {
      await Promise.all(engines.map((e) => e.stop()));
    }
  });
});
