// The semaphore on the deterministic simulator: permits, refusals that name the free slots, the lock-like permit.
import { describe, expect, it } from "vitest";
import {
  InvalidArgumentError,
  LockAcquisitionError,
  type LockExtensionError,
  Permit,
  Redlock,
  type RedlockOptions,
} from "../../../src/index.ts";
import { simCluster } from "../../sim/sim-node.ts";
import { VirtualClock } from "../../sim/virtual-clock.ts";

function setup(options: RedlockOptions = {}) {
  const clock = new VirtualClock();
  const nodes = simCluster(clock);
  const redlock = new Redlock(nodes, { clock, nodeTimeout: 100, retryCount: 0, ...options });
  return { clock, nodes, redlock };
}

const slotKey = (key: string, slot: number) => `edge-redlock:semaphore:${key}:${slot}`;

describe("semaphore", () => {
  it("hands out `limit` permits on distinct slots, then refuses with reason held and when the soonest expires", async () => {
    const { clock, nodes, redlock } = setup({ retryCount: 10, retryDelay: 10, retryJitter: 0 });
    const renders = redlock.semaphore("renders", 3);
    const permits: Permit[] = [];
    for (let i = 0; i < 3; i++) permits.push(await clock.run(renders.acquire(2_000 + i * 1_000)));
    await clock.drain(); // the slowest two nodes' grants land after each quorum
    expect(new Set(permits.map((p) => p.slot)).size).toBe(3);
    for (const p of permits) {
      expect(p).toBeInstanceOf(Permit);
      expect(p.resources).toEqual(["renders"]);
      expect(nodes.map((n) => n.get(slotKey("renders", p.slot)))).toEqual(Array(5).fill(p.value));
    }
    const error = (await clock
      .run(redlock.semaphore("renders", 3).acquire(1_000, { retryCount: 0 }))
      .catch((e: unknown) => e)) as LockAcquisitionError;
    expect(error).toBeInstanceOf(LockAcquisitionError);
    expect(error.reason).toBe("held");
    expect(error.message).toMatch(/every permit is held/);
    // The soonest permit (ttl 2000, taken first) expires in about 2000 ms minus the time since.
    expect(error.retryAfterMs).toBeGreaterThan(1_900);
    expect(error.retryAfterMs).toBeLessThanOrEqual(2_000);
  });

  it("a refusal names the free slots, so the next attempt takes a slot free on a quorum", async () => {
    const { clock, nodes, redlock } = setup({ retryCount: 5, retryDelay: 10, retryJitter: 0 });
    // Slots 0..3 held by others everywhere: only slot 4 is free.
    for (const n of nodes) for (const slot of [0, 1, 2, 3]) n.set(slotKey("s", slot), `other-${slot}`, 60_000);
    const permit = await clock.run(redlock.semaphore("s", 5).acquire(1_000));
    expect(permit.slot).toBe(4);
    expect(permit.attempts).toBeLessThanOrEqual(2); // a random first try, then the free slot the refusals named
  });

  it("a permit is a lock on its slot: extend, release, validity, and dead after release", async () => {
    const { clock, nodes, redlock } = setup();
    const permit = await clock.run(redlock.semaphore("p", 2).acquire(1_000));
    await clock.advance(300);
    await clock.run(permit.extend(5_000));
    expect(permit.validityMs).toBe(5_000 - 1 - (5_000 * 0.01 + 2));
    await clock.drain();
    expect(nodes.map((n) => n.pttl(slotKey("p", permit.slot)))).toEqual(Array(5).fill(5_000 - (clock.now() - 302)));
    const result = await clock.run(permit.release());
    await clock.run(result.pending);
    expect(nodes.map((n) => n.get(slotKey("p", permit.slot)))).toEqual(Array(5).fill(undefined));
    expect(((await clock.run(permit.extend(1_000)).catch((e: unknown) => e)) as LockExtensionError).reason).toBe(
      "released",
    );
    expect(JSON.stringify(permit)).not.toContain(permit.value);
    expect(JSON.parse(JSON.stringify(permit))).toMatchObject({ semaphore: "p", slot: permit.slot });
  });

  it("using() keeps the permit while the routine runs and frees it after", async () => {
    const { clock, nodes, redlock } = setup();
    const semaphore = redlock.semaphore("u", 1);
    const result = await clock.run(
      semaphore.using(1_000, async (signal, permit) => {
        await clock.sleep(2_500, signal); // past the ttl: kept only by extension
        return { slot: permit.slot, aborted: signal.aborted };
      }),
    );
    expect(result).toEqual({ slot: 0, aborted: false });
    expect(nodes[0].requests.filter((r) => r.script === "extend").length).toBeGreaterThanOrEqual(4);
    await clock.drain();
    expect(nodes.flatMap((n) => n.liveKeys())).toEqual([]);
  });

  it("a failed attempt releases the slot wherever it may have been set", async () => {
    const { clock, nodes, redlock } = setup();
    // Slot 0 held by another on nodes 0-2: the attempt on slot 0 gets 2 grants (nodes 3, 4), which it must undo.
    for (const n of nodes.slice(0, 3)) n.set(slotKey("f", 0), "other", 60_000);
    const error = await clock.run(redlock.semaphore("f", 1).acquire(1_000)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockAcquisitionError);
    await clock.drain();
    expect(nodes.map((n) => n.get(slotKey("f", 0)))).toEqual(["other", "other", "other", undefined, undefined]);
  });

  it("inspect counts the permits a quorum holds and when the soonest ends; the lock's inspect too", async () => {
    const { clock, nodes, redlock } = setup();
    const semaphore = redlock.semaphore("i", 3);
    expect(await clock.run(semaphore.inspect())).toMatchObject({ held: 0, limit: 3, soonestExpiresInMs: undefined });
    const a = await clock.run(semaphore.acquire(4_000));
    await clock.run(semaphore.acquire(2_000, { retryCount: 3, retryDelay: 10, retryJitter: 0 })); // a random first slot may be a's
    await clock.drain();
    nodes[0].mode = "down";
    const seen = await clock.run(semaphore.inspect());
    expect(seen.held).toBe(2);
    expect(seen.soonestExpiresInMs).toBeGreaterThan(1_900);
    expect(seen.soonestExpiresInMs).toBeLessThanOrEqual(2_000);
    expect(seen.nodes[0]).toMatchObject({ node: 0, error: expect.stringContaining("network") });
    expect(seen.nodes.slice(1).map((n) => n.held)).toEqual([2, 2, 2, 2]);
    await clock.run(a.release());
    nodes[0].mode = "up";

    const lock = await clock.run(redlock.acquire(["k"], 3_000));
    await clock.drain();
    nodes[3].set("k", "someone-else", 500); // a minority with another holder
    const view = await clock.run(redlock.inspect("k"));
    expect(view.heldByQuorum).toBe(true);
    expect(view.nodes.map((n) => n.held)).toEqual([true, true, true, true, true]);
    expect(new Set(view.nodes.slice(0, 3).map((n) => n.holder)).size).toBe(1);
    expect(view.nodes[3].holder).not.toBe(view.nodes[0].holder);
    expect(JSON.stringify(view)).not.toContain(lock.value);
    expect(view.freeInMs).toBeGreaterThan(2_900);
    await clock.run(lock.release());
    await clock.drain();
    const free = await clock.run(redlock.inspect("k"));
    expect(free).toMatchObject({ heldByQuorum: false, freeInMs: 0 });
  });

  it("refuses bad arguments before any request", async () => {
    const { clock, nodes, redlock } = setup();
    for (const make of [
      () => redlock.semaphore("", 2),
      () => redlock.semaphore("s", 0),
      () => redlock.semaphore("s", 1.5),
      () => redlock.semaphore("s", 101),
      () => redlock.semaphore("edge-redlock:x", 2),
    ]) {
      expect(make).toThrow(InvalidArgumentError);
    }
    const semaphore = redlock.semaphore("s", 2);
    for (const call of [
      () => semaphore.acquire(50),
      () => semaphore.acquire(1_000, { fencing: true }),
      () => semaphore.acquire(1_000, { retryCount: -2 }),
      () => semaphore.using(1_000, "x" as never),
    ]) {
      await expect(clock.run(call())).rejects.toBeInstanceOf(InvalidArgumentError);
    }
    expect(nodes.map((n) => n.requests.length)).toEqual([0, 0, 0, 0, 0]);
  });
});
