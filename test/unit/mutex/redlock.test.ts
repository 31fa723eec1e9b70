// The Redlock algorithm on the simulator (fair: false): acquire holds on a quorum with one fresh 160-bit value, sends
// to every node at the same instant, decides as soon as the quorum grants or cannot, never counts a hung, failing or
// garbage node as a grant, holds only with validity left (ttl − elapsed − drift), retries after a random delay and
// releases a failed attempt wherever it may have landed; release deletes only this lock's value, without waiting for a
// hung node; extend never shortens a key and never sets it again where it was lost; invalid input is refused before
// any request.
import { describe, expect, it } from "vitest";
import {
  InvalidArgumentError,
  LockAcquisitionError,
  LockExtensionError,
  Redlock,
  type RedlockOptions,
} from "../../../src/index.ts";
import { simCluster, type SimNode } from "../../sim/sim-node.ts";
import { VirtualClock } from "../../sim/virtual-clock.ts";

function setup(options: RedlockOptions = {}) {
  const clock = new VirtualClock();
  const nodes = simCluster(clock);
  const redlock = new Redlock(nodes, { clock, nodeTimeout: 100, fair: false, ...options });
  return { clock, nodes, redlock };
}

const holders = (nodes: SimNode[], key: string) => nodes.map((n) => n.get(key));

describe("acquire", () => {
  it("holds the lock on a quorum with one fresh 160-bit value on every granting node", async () => {
    const { clock, nodes, redlock } = setup();
    const lock = await clock.run(redlock.acquire(["k"], 1_000));
    expect(lock.value).toMatch(/^[0-9a-f]{40}$/);
    expect(lock.validityMs).toBe(1_000 - 1 - (1_000 * 0.01 + 2));
    expect(lock.expiresAt).toBe(clock.epoch() + lock.validityMs);
    await clock.drain();
    expect(holders(nodes, "k")).toEqual(Array(5).fill(lock.value));
  });

  it("sends the acquire script to all nodes at the same instant", async () => {
    const { clock, nodes, redlock } = setup();
    clock.schedule(0, () => {});
    await clock.advance(37);
    await clock.run(redlock.acquire(["k"], 1_000));
    expect(nodes.map((n) => n.requests[0].sentAt)).toEqual([37, 37, 37, 37, 37]);
  });

  it("resolves when the quorum grants, before the slow minority answers", async () => {
    const { clock, nodes, redlock } = setup({ nodeTimeout: 900 });
    nodes[3].latency = 600;
    nodes[4].latency = 800;
    const lock = await clock.run(redlock.acquire(["k"], 5_000));
    expect(clock.now()).toBe(1);
    expect(nodes[3].requests[0].ranAt).toBeUndefined();
    expect(lock.validityMs).toBeGreaterThan(4_000);
  });

  it("fails as soon as the quorum is impossible and reports the holder's PTTL", async () => {
    const { clock, nodes, redlock } = setup({ retryCount: 0 });
    for (const n of nodes.slice(0, 3)) n.set("k", "other", 700);
    nodes[4].latency = 50;
    const error = await clock.run(redlock.acquire(["k"], 1_000)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockAcquisitionError);
    const failure = error as LockAcquisitionError;
    expect(failure.reason).toBe("held");
    expect(failure.attempts[0].elapsedMs).toBe(1);
    expect(failure.retryAfterMs).toBe(699);
    expect(failure.attempts[0].votes.filter((v) => v.outcome === "denied")).toHaveLength(3);
  });

  it("never counts a hung, failing or garbage node as a grant", async () => {
    const { clock, nodes, redlock } = setup({ retryCount: 0 });
    nodes[0].mode = "hang";
    nodes[1].mode = "garbage";
    nodes[2].mode = "down";
    const error = (await clock.run(redlock.acquire(["k"], 1_000)).catch((e: unknown) => e)) as LockAcquisitionError;
    expect(error.reason).toBe("unreachable");
    const votes = error.attempts[0].votes;
    expect(votes.map((v) => v.outcome)).toEqual(["error", "error", "error", "granted", "granted"]);
    expect(votes[0]).toMatchObject({ cause: "timeout" });
    expect(votes[1]).toMatchObject({ outcome: "error", cause: "unexpected reply (object)" });
    expect(votes[2]).toMatchObject({ outcome: "error", cause: "network: fetch failed (ECONNREFUSED)" });
    expect(nodes[3].liveKeys()).toEqual([]);
    expect(nodes[4].liveKeys()).toEqual([]);
  });

  it("is not held when validity is exactly 0, and is held with 1 ms left (validity = ttl − elapsed − drift)", async () => {
    // ttl 1000, drift 1000 * 0.01 + 2 = 12: the round must take < 988 ms.
    for (const [latency, held] of [
      [988, false],
      [987, true],
    ] as const) {
      const { clock, nodes, redlock } = setup({ retryCount: 0, nodeTimeout: 999 });
      for (const n of nodes) n.latency = latency;
      const outcome = await clock.run(redlock.acquire(["k"], 1_000)).then(
        (lock) => lock.validityMs,
        (e: LockAcquisitionError) => e,
      );
      if (held) expect(outcome).toBe(1);
      else {
        expect(outcome).toBeInstanceOf(LockAcquisitionError);
        expect((outcome as LockAcquisitionError).reason).toBe("expired");
        expect((outcome as LockAcquisitionError).attempts[0].validityMs).toBe(0);
        await clock.drain();
        expect(nodes.flatMap((n) => n.liveKeys())).toEqual([]);
      }
    }
  });

  it("takes t1 at the start of each attempt: a slow failed attempt does not eat the next one's validity", async () => {
    const { clock, nodes, redlock } = setup({ retryCount: 1, retryDelay: 50, retryJitter: 0, nodeTimeout: 500 });
    for (const n of nodes)
      n.latency = (r) => (n.requests.filter((q) => q.script === "fair-acquire").indexOf(r) === 0 ? 400 : 5);
    for (const n of nodes.slice(0, 3)) n.set("k", "other", 450);
    const lock = await clock.run(redlock.acquire(["k"], 1_000));
    expect(lock.attempts).toBe(2);
    expect(lock.validityMs).toBe(1_000 - 5 - 12);
  });

  it("waits retryDelay ± retryJitter between attempts, at random", async () => {
    const { clock, nodes, redlock } = setup({ retryCount: 40, retryDelay: 200, retryJitter: 100 });
    for (const n of nodes) n.set("k", "other", 60_000);
    await clock.run(redlock.acquire(["k"], 1_000)).catch(() => {});
    expect(clock.sleeps).toHaveLength(40);
    for (const ms of clock.sleeps) {
      expect(ms).toBeGreaterThanOrEqual(100);
      expect(ms).toBeLessThanOrEqual(300);
    }
    expect(new Set(clock.sleeps).size).toBeGreaterThan(30);
    expect(Math.min(...clock.sleeps)).toBeLessThan(150);
    expect(Math.max(...clock.sleeps)).toBeGreaterThan(250);
  });

  it("releases a failed attempt everywhere it may have landed, stragglers included", async () => {
    const { clock, nodes, redlock } = setup({ retryCount: 0, nodeTimeout: 500 });
    nodes[0].set("k", "other", 10_000);
    nodes[1].set("k", "other", 10_000);
    nodes[2].mode = "down";
    nodes[3].latency = 300; // lands after the round was decided
    const error = (await clock.run(redlock.acquire(["k"], 1_000)).catch((e: unknown) => e)) as LockAcquisitionError;
    expect(error.reason).toBe("held");
    expect(nodes[3].requests[0].ranAt).toBe(300);
    expect(holders(nodes, "k")).toEqual(["other", "other", undefined, undefined, undefined]);
    // A single try never joined the line: its undo is the plain release, sent only where it may have set the key.
    expect(nodes[3].requests.map((r) => r.script)).toEqual(["fair-acquire", "release"]);
    expect(nodes[0].requests.map((r) => r.script)).toEqual(["fair-acquire"]);
  });

  it("multi-resource: grants all keys or none on each node", async () => {
    const { clock, nodes, redlock } = setup({ retryCount: 0 });
    for (const n of nodes.slice(0, 3)) n.set("b", "other", 10_000);
    await clock.run(redlock.acquire(["a", "b", "c"], 1_000)).catch(() => {});
    await clock.drain();
    expect(nodes.flatMap((n) => [n.get("a"), n.get("c")]).filter(Boolean)).toEqual([]);
  });

  it("stops retrying when the caller's signal aborts, rejects with its reason and leaves nothing set", async () => {
    const { clock, nodes, redlock } = setup({ retryCount: -1, nodeTimeout: 100 });
    for (const n of nodes.slice(0, 3)) n.set("k", "other", 60_000);
    const controller = new AbortController();
    const reason = new Error("caller gave up");
    clock.schedule(1_234, () => controller.abort(reason));
    const error = await clock
      .run(redlock.acquire(["k"], 1_000, { signal: controller.signal }))
      .catch((e: unknown) => e);
    expect(error).toBe(reason);
    expect(clock.now()).toBeLessThanOrEqual(1_234 + 100);
    await clock.drain();
    expect(nodes.slice(3).flatMap((n) => n.liveKeys())).toEqual([]);
  });

  it("cuts the requests in flight when the caller's signal aborts mid-round", async () => {
    const { clock, nodes, redlock } = setup({ nodeTimeout: 900 });
    for (const n of nodes) n.latency = 500;
    const controller = new AbortController();
    clock.schedule(100, () => controller.abort(new Error("stop")));
    await expect(clock.run(redlock.acquire(["k"], 5_000, { signal: controller.signal }))).rejects.toThrow("stop");
    expect(nodes.map((n) => n.requests[0].cutAt)).toEqual([100, 100, 100, 100, 100]);
    expect(nodes.every((n) => n.requests[0].ranAt === undefined)).toBe(true);
  });
});

describe("release and extend", () => {
  it("release deletes only this lock's value and reports how many nodes released", async () => {
    const { clock, nodes, redlock } = setup();
    const lock = await clock.run(redlock.acquire(["k"], 1_000));
    nodes[0].set("k", "someone-else", 1_000);
    nodes[1].mode = "down";
    nodes[4].latency = 50;
    const result = await clock.run(lock.release());
    // Decided once a quorum answered (node 0 denied, 2 and 3 released); node 4 is still on its way.
    expect(clock.now()).toBe(2);
    expect(result).toMatchObject({ released: 2, errors: 1 });
    expect(result.votes.map((v) => v.outcome)).toEqual(["denied", "error", "granted", "granted", "unanswered"]);
    await clock.run(result.pending);
    expect(clock.now()).toBe(1 + 50);
    expect(holders(nodes, "k")).toEqual(["someone-else", lock.value, undefined, undefined, undefined]);
  });

  it("release does not wait for a hung node: it resolves once a quorum answered; pending ends at nodeTimeout", async () => {
    const { clock, nodes, redlock } = setup({ nodeTimeout: 100 });
    const lock = await clock.run(redlock.acquire(["k"], 1_000));
    nodes[2].mode = "hang";
    const started = clock.now();
    const result = await clock.run(lock.release());
    expect(clock.now() - started).toBe(1);
    expect(result.votes[2]).toMatchObject({ outcome: "unanswered" });
    await clock.run(result.pending);
    expect(clock.now() - started).toBe(100);
  });

  it("release waits for every node when fewer than a quorum can answer, and never throws", async () => {
    const { clock, nodes, redlock } = setup({ nodeTimeout: 100 });
    const lock = await clock.run(redlock.acquire(["k"], 1_000));
    for (const n of nodes.slice(0, 3)) n.mode = "hang";
    const started = clock.now();
    const result = await clock.run(lock.release());
    expect(clock.now() - started).toBe(100);
    expect(result).toMatchObject({ released: 2, errors: 3 });
    expect(result.votes.slice(0, 3)).toEqual([0, 1, 2].map((node) => ({ outcome: "error", cause: "timeout", node })));
  });

  it("release undoes an acquire that lands after the lock was granted and released", async () => {
    const { clock, nodes, redlock } = setup({ nodeTimeout: 500 });
    nodes[4].latency = 300;
    const lock = await clock.run(redlock.acquire(["k"], 5_000));
    const result = await clock.run(lock.release());
    await clock.run(result.pending);
    expect(nodes[4].requests[0].ranAt).toBe(300);
    expect(holders(nodes, "k")).toEqual(Array(5).fill(undefined));
  });

  it("extend moves the expiry where the key is held and does not set it again on a node that lost it", async () => {
    const { clock, nodes, redlock } = setup();
    const lock = await clock.run(redlock.acquire(["k"], 1_000));
    await clock.advance(500);
    nodes[0].set("k", "x", 1);
    await clock.advance(2);
    expect(nodes[0].get("k")).toBeUndefined();
    await clock.run(lock.extend(3_000));
    expect(lock.validityMs).toBe(3_000 - 1 - 32);
    await clock.drain();
    expect(nodes[0].get("k")).toBeUndefined();
    expect(nodes[0].requests.at(-1)).toMatchObject({ script: "extend", ranAt: 504 });
    expect(nodes.slice(1).map((n) => n.pttl("k"))).toEqual(Array(4).fill(3_000 - (clock.now() - 504)));
  });

  it("extend never shortens the key: a shorter ttl leaves the longer expiry in place", async () => {
    const { clock, nodes, redlock } = setup();
    const lock = await clock.run(redlock.acquire(["k"], 5_000));
    await clock.drain();
    await clock.run(lock.extend(1_000));
    await clock.drain();
    expect(nodes.map((n) => n.pttl("k"))).toEqual(Array(5).fill(5_000 - (clock.now() - 1)));
    expect(lock.validityMs).toBe(1_000 - 1 - 12); // what the library reports stays what the extension proved
  });

  it("extend resolves at a quorum and lets the slow node's extension land too", async () => {
    const { clock, nodes, redlock } = setup({ nodeTimeout: 500 });
    const lock = await clock.run(redlock.acquire(["k"], 1_000));
    await clock.drain();
    nodes[4].latency = (r) => (r.script === "extend" ? 300 : 1);
    const started = clock.now();
    await clock.run(lock.extend(3_000));
    expect(clock.now() - started).toBe(1);
    await clock.drain();
    const late = nodes[4].requests.find((r) => r.script === "extend");
    expect(late?.ranAt).toBe(started + 300);
    expect(late?.cutAt).toBeUndefined();
    expect(nodes[4].pttl("k")).toBe(3_000 - (clock.now() - (started + 300)));
  });

  it("release sends a follow-up release only where an acquire reply was still out and the release found nothing to delete", async () => {
    const { clock, nodes, redlock } = setup({ nodeTimeout: 500 });
    nodes[4].latency = 300;
    const lock = await clock.run(redlock.acquire(["k"], 5_000));
    await clock.drain(); // node 4's acquire reply is in before the release: the release round covers it
    const early = await clock.run(lock.release());
    await clock.run(early.pending);
    // A lock that waited in line releases with LEAVE (its keys and its line).
    expect(nodes[4].requests.map((r) => r.script)).toEqual(["fair-acquire", "leave"]);
    // Node 4 (300 ms for everything): its release lands after its acquire and deletes the key.
    nodes[3].latency = (r) => (r.script === "fair-acquire" ? 300 : 1); // node 3: the release overtakes the acquire
    const again = await clock.run(redlock.acquire(["k2"], 5_000));
    const late = await clock.run(again.release()); // the acquire replies of nodes 3 and 4 are still out
    expect(late.votes.map((v) => v.outcome)).toEqual(["granted", "granted", "granted", "unanswered", "unanswered"]);
    await clock.run(late.pending);
    // Node 3's release found nothing (its acquire came later): one follow-up. Node 4's release deleted the key: none.
    expect(nodes[4].requests.filter((r) => r.keys[0] === "k2").map((r) => r.script)).toEqual(["fair-acquire", "leave"]);
    expect(nodes[3].requests.filter((r) => r.keys[0] === "k2").map((r) => r.script)).toEqual([
      "fair-acquire",
      "leave",
      "leave",
    ]);
    await clock.drain();
    expect(holders(nodes, "k2")).toEqual(Array(5).fill(undefined));
  });

  it("extend after expiry fails with LockExtensionError without sending anything", async () => {
    const { clock, nodes, redlock } = setup();
    const lock = await clock.run(redlock.acquire(["k"], 1_000));
    await clock.advance(1_000);
    const before = nodes[0].requests.length;
    const error = await clock.run(lock.extend(1_000)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockExtensionError);
    expect((error as LockExtensionError).reason).toBe("lost");
    expect(nodes[0].requests.length).toBe(before);
  });

  it("extend fails when another holder took the key on a majority", async () => {
    const { clock, nodes, redlock } = setup();
    const lock = await clock.run(redlock.acquire(["k"], 1_000));
    for (const n of nodes.slice(0, 3)) n.set("k", "thief", 5_000);
    const error = (await clock.run(lock.extend(1_000)).catch((e: unknown) => e)) as LockExtensionError;
    expect(error).toBeInstanceOf(LockExtensionError);
    expect(error.reason).toBe("held");
  });
});

describe("invalid input", () => {
  it("is rejected with InvalidArgumentError before any request", async () => {
    const { clock, nodes, redlock } = setup();
    const bad: [string, () => Promise<unknown>][] = [
      ["empty resources", () => redlock.acquire([], 1_000)],
      ["empty key", () => redlock.acquire([""], 1_000)],
      ["duplicate keys", () => redlock.acquire(["a", "a"], 1_000)],
      ["non-string key", () => redlock.acquire([42 as unknown as string], 1_000)],
      ["NaN ttl", () => redlock.acquire(["a"], Number.NaN)],
      ["negative ttl", () => redlock.acquire(["a"], -5)],
      ["fractional ttl", () => redlock.acquire(["a"], 1_000.5)],
      ["huge ttl", () => redlock.acquire(["a"], 2 ** 40)],
      ["ttl not above nodeTimeout", () => redlock.acquire(["a"], 100)],
      ["bad retryCount", () => redlock.acquire(["a"], 1_000, { retryCount: -2 })],
      ["bad signal", () => redlock.acquire(["a"], 1_000, { signal: {} as AbortSignal })],
    ];
    for (const [name, call] of bad) {
      await expect(clock.run(call()), name).rejects.toBeInstanceOf(InvalidArgumentError);
    }
    expect(nodes.map((n) => n.requests.length)).toEqual([0, 0, 0, 0, 0]);
    const sync = [
      () => new Redlock([]),
      () => new Redlock([{ url: "not a url", token: "t" }]),
      () => new Redlock([{ url: "https://a.example", token: "" }]),
      () =>
        new Redlock([
          { url: "https://a.example", token: "t" },
          { url: "https://a.example/", token: "t" },
        ]),
      () => new Redlock(nodes, { nodeTimeout: 0 }),
      () => new Redlock(nodes, { driftFactor: 1 }),
      () => new Redlock(nodes, { retryDelay: Number.POSITIVE_INFINITY }),
    ];
    for (const make of sync) expect(make).toThrow(InvalidArgumentError);
  });

  it("a ttl of 0 or below names the bound that works (above nodeTimeout), not 1", async () => {
    const { clock, redlock } = setup();
    for (const ttl of [0, -5, 1, 100])
      await expect(clock.run(redlock.acquire(["a"], ttl)), String(ttl)).rejects.toThrow(
        `ttl must be greater than nodeTimeout (${redlock.options.nodeTimeout} ms); got ${ttl}`,
      );
  });
});
