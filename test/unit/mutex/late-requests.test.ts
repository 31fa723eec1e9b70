// What lands late cannot make two holders: late extension replies, an extension racing a release,
// replies of the wrong shape. Exact timing on the simulator; test/integration/mutex/late-requests.test.ts runs the
// same orderings on real Redis.
import { describe, expect, it } from "vitest";
import {
  InvalidArgumentError,
  LockAcquisitionError,
  LockExtensionError,
  Redlock,
  type RedlockNode,
  type RedlockOptions,
} from "../../../src/index.ts";
import { simCluster, type SimNode } from "../../sim/sim-node.ts";
import { VirtualClock } from "../../sim/virtual-clock.ts";

function setup(options: RedlockOptions = {}) {
  const clock = new VirtualClock();
  const nodes = simCluster(clock);
  const redlock = new Redlock(nodes, { clock, nodeTimeout: 500, fair: false, ...options });
  return { clock, nodes, redlock };
}

const holders = (nodes: SimNode[], key: string) => nodes.map((n) => n.get(key));

describe("a late, shorter extension", () => {
  it("never shortens the key: a contender cannot take a majority while the holder's reported validity lasts", async () => {
    const { clock, nodes, redlock } = setup();
    const lock = await clock.run(redlock.acquire(["k"], 10_000));
    await clock.drain();
    // extend(1000) is decided on {0,1,2}; its requests to 3 and 4 land 300 ms later.
    for (const n of nodes.slice(3)) n.latency = 300;
    await clock.run(lock.extend(1_000));
    // extend(10000) is decided on {0,1,3} while node 2 hangs.
    for (const n of nodes.slice(3)) n.latency = 1;
    nodes[2].mode = "hang";
    await clock.run(lock.extend(10_000));
    const reported = clock.now() + lock.validityMs;
    nodes[2].mode = "up";
    await clock.advance(1_500); // the first extension's PX 1000 replies have landed on 3 and 4, and its ttl has passed
    expect(lock.validityMs).toBeGreaterThan(8_000);
    // Every node that granted the last extension still holds the key until the reported validity ends.
    expect(
      nodes.filter((n) => n.get("k") === lock.value && clock.now() + n.pttl("k") >= reported).length,
    ).toBeGreaterThanOrEqual(3);
    const contender = new Redlock(nodes, { clock, nodeTimeout: 500, retryCount: 0 });
    const outcome = await clock.run(contender.acquire(["k"], 5_000)).catch((e: unknown) => e);
    expect(outcome).toBeInstanceOf(LockAcquisitionError);
    expect((outcome as LockAcquisitionError).reason).toBe("held");
  });
});

describe("a released lock is dead", () => {
  it("extend() after release() throws LockExtensionError at once and sends nothing", async () => {
    const { clock, nodes, redlock } = setup();
    const lock = await clock.run(redlock.acquire(["k"], 5_000));
    await clock.run(lock.release());
    await clock.drain();
    const sent = nodes.map((n) => n.requests.length);
    const error = await clock.run(lock.extend(5_000)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockExtensionError);
    expect((error as LockExtensionError).reason).toBe("released");
    expect(nodes.map((n) => n.requests.length)).toEqual(sent);
    expect(lock.validityMs).toBeLessThanOrEqual(0);
    expect(holders(nodes, "k")).toEqual(Array(5).fill(undefined));
  });

  it("an extension in flight when release() is called leaves no key behind and does not report success", async () => {
    const { clock, nodes, redlock } = setup();
    const lock = await clock.run(redlock.acquire(["k"], 5_000));
    await clock.drain();
    for (const n of nodes) n.latency = (r) => (r.script === "extend" ? 50 : 1);
    const extension = lock.extend(5_000).then(
      () => "extended",
      (e: unknown) => e,
    );
    const result = await clock.run(lock.release());
    expect(result.released).toBe(3);
    await clock.run(result.pending);
    const outcome = await clock.run(extension);
    expect(outcome).toBeInstanceOf(LockExtensionError);
    expect((outcome as LockExtensionError).reason).toBe("released");
    await clock.drain();
    expect(nodes.map((n) => n.requests.filter((r) => r.script === "extend" && r.ranAt === 51).length)).toEqual([
      1, 1, 1, 1, 1,
    ]);
    expect(holders(nodes, "k")).toEqual(Array(5).fill(undefined));
    const next = await clock.run(new Redlock(nodes, { clock, nodeTimeout: 500, retryCount: 0 }).acquire(["k"], 1_000));
    expect(next.resources).toEqual(["k"]);
  });

  it("an extension that lands after release on a node that lost the key does not set it again", async () => {
    const { clock, nodes, redlock } = setup();
    const lock = await clock.run(redlock.acquire(["k"], 5_000));
    await clock.drain();
    nodes[4].set("k", "gone", 1); // node 4 loses the key (e.g. a restart)
    await clock.advance(2);
    nodes[4].latency = (r) => (r.script === "extend" ? 300 : 1);
    await clock.run(lock.extend(5_000));
    const result = await clock.run(lock.release());
    await clock.run(result.pending);
    await clock.drain(); // the extension lands on node 4 after the release
    expect(nodes[4].requests.find((r) => r.script === "extend")?.ranAt).toBeGreaterThan(
      nodes[4].requests.find((r) => r.script === "leave")?.ranAt ?? Infinity,
    );
    expect(holders(nodes, "k")).toEqual(Array(5).fill(undefined));
  });
});

describe("replies of the wrong shape", () => {
  /** A node that answers what the simulator would, rewritten by `reshape`. */
  const reshaped = (node: SimNode, reshape: (reply: unknown) => unknown): RedlockNode => ({
    label: node.label,
    run: async (script, keys, args, signal) => reshape(await node.run(script, keys, args, signal)),
  });

  it("a plain acquire counts only exactly [1] as a grant, never [1, digits]", async () => {
    const { clock, nodes } = setup();
    const redlock = new Redlock(
      nodes.map((n) =>
        reshaped(n, (reply) => (Array.isArray(reply) && reply.length === 1 && reply[0] === 1 ? [1, "12"] : reply)),
      ),
      { clock, nodeTimeout: 500, retryCount: 0 },
    );
    const error = (await clock.run(redlock.acquire(["k"], 1_000)).catch((e: unknown) => e)) as LockAcquisitionError;
    expect(error).toBeInstanceOf(LockAcquisitionError);
    expect(error.reason).toBe("unreachable");
    const votes = error.attempts[0].votes.map((v) => v.outcome);
    expect(votes).not.toContain("granted");
    expect(votes.filter((v) => v === "error").length).toBeGreaterThanOrEqual(3);
    await clock.drain();
    expect(nodes.flatMap((n) => n.liveKeys())).toEqual([]); // the keys the script did set are released
  });

  it("with fencing, grants without a token are errors and the attempt is cleaned up", async () => {
    const { clock, nodes } = setup();
    const redlock = new Redlock(
      nodes.map((n) => reshaped(n, (reply) => (Array.isArray(reply) && reply[0] === 1 ? [1] : reply))),
      { clock, nodeTimeout: 500, retryCount: 0 },
    );
    const error = (await clock
      .run(redlock.acquire(["k"], 1_000, { fencing: true }))
      .catch((e: unknown) => e)) as LockAcquisitionError;
    expect(error).toBeInstanceOf(LockAcquisitionError);
    expect(error.reason).toBe("unreachable");
    await clock.drain();
    expect(nodes.flatMap((n) => n.liveKeys())).toEqual([]);
  });
});

describe("reserved names", () => {
  it("a resource in the library's own namespace (a fence counter) is refused before any request", async () => {
    const { clock, nodes, redlock } = setup();
    for (const key of ["edge-redlock:fence:orders", "edge-redlock:anything"]) {
      await expect(clock.run(redlock.acquire(["ok", key], 1_000))).rejects.toBeInstanceOf(InvalidArgumentError);
    }
    expect(nodes.map((n) => n.requests.length)).toEqual([0, 0, 0, 0, 0]);
  });

  it("a sparse resources array is refused, not locked as a key named null", async () => {
    const { clock, nodes, redlock } = setup();
    // biome-ignore lint: the hole is the point
    const sparse = ["a", , "b"] as string[];
    await expect(clock.run(redlock.acquire(sparse, 1_000))).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(nodes.map((n) => n.requests.length)).toEqual([0, 0, 0, 0, 0]);
  });
});
