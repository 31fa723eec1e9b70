// A database that refuses PUBLISH from a flagged script loses the wakeups, nothing else: the fair scripts still
// grant, release and keep the line (their PUBLISH is a pcall), and a waiter behind a holder that releases early is
// served by its fallback when the holder's time is up. Real redis-server behind the bridge (its
// `refuseScriptPublish` fault), real @upstash/redis.
import { describe, expect, it } from "vitest";
import { Redlock, type EventHandler } from "../../../src/index.ts";
import { settle, useCluster } from "../fixture.ts";

const fixture = useCluster();
const redlock = (onEvent?: EventHandler) => new Redlock(fixture.nodes, { warnings: false, onEvent });

/** Resolves once a waiter's retry sleeps past 1 s: on the holder's time, a subscription alive (else it is shorter). */
function onFallback(): { onEvent: EventHandler; done: Promise<void> } {
  let done!: () => void;
  const promise = new Promise<void>((resolve) => {
    done = resolve;
  });
  return { onEvent: (event) => event.type === "retry" && event.waitMs > 1_000 && done(), done: promise };
}

describe("a node that refuses PUBLISH from a flagged script", () => {
  it("costs the waiter its wakeup, not the lock: grants and releases go through, the fallback serves it", async () => {
    await Promise.all(fixture.admins.map((a) => a.faults({ refuseScriptPublish: true })));
    const holder = await redlock().acquire("res", 1_500);
    const expires = Date.now() + 1_500;
    const asleep = onFallback();
    const waiting = redlock(asleep.onEvent).acquire("res", 5_000, { maxWait: 6_000 });
    // Released once the waiter sleeps on its fallback with a stream open: only a wakeup could end that sleep early.
    await asleep.done;
    const releasedAt = Date.now();
    const { released } = await holder.release();
    // The release's script publishes to the waiter's line: refused there, the release still frees the nodes.
    expect(released).toBeGreaterThanOrEqual(3);
    const lock = await waiting;
    // No wakeup came: it asked again when the holder's 1.5 s were up, and not long after.
    expect(Date.now()).toBeGreaterThan(expires - 200);
    expect(Date.now() - releasedAt).toBeLessThan(2_500);
    expect((await lock.release()).released).toBeGreaterThanOrEqual(3);
    await settle(fixture);
    // Nothing left behind: no resource key, and the line holds no one.
    expect(await Promise.all(fixture.tcp.map((t) => t.exists("res")))).toEqual([0, 0, 0, 0, 0]);
    const lines = await Promise.all(fixture.tcp.map((t) => t.keys("edge-redlock:line:*")));
    for (const [i, keys] of lines.entries())
      for (const key of keys) expect(await fixture.tcp[i].zcard(key), `${key} on node ${i}`).toBe(0);
  });

  it("with the fault off, the same release wakes the waiter at once (the fault is what delayed it)", async () => {
    const holder = await redlock().acquire("res", 1_500);
    const asleep = onFallback();
    const waiting = redlock(asleep.onEvent).acquire("res", 5_000, { maxWait: 6_000 });
    await asleep.done;
    const releasedAt = Date.now();
    await holder.release();
    const lock = await waiting;
    expect(Date.now() - releasedAt).toBeLessThan(500);
    await lock.release();
  });
});
