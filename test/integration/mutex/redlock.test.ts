// The Redlock algorithm on five real redis-server nodes through the REST bridge: exactly one of two contenders holds,
// with its value and a PTTL ≤ ttl on each node; one request per node per attempt in steady state (one more on a script
// miss); a quorum of live nodes suffices and a lost quorum fails as unreachable; acquire does not wait for slow nodes;
// hung, garbage and failing nodes are never grants; a refused multi-resource lock leaves nothing set; an expired lock
// releases nothing and cannot be extended; extend reaches every node; any string is a key; no error or tally holds the
// REST token or a lock value.
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, LockExtensionError, Redlock } from "../../../src/index.ts";
import { loadScripts, settle, useCluster } from "../fixture.ts";

const env = useCluster();
const redlock = (options: ConstructorParameters<typeof Redlock>[1] = {}) => new Redlock(env.nodes, options);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("Redlock on five real redis-server nodes through the REST bridge", () => {
  it("two contenders: exactly one holds; after release the other gets it", async () => {
    const a = redlock({ retryCount: 0 });
    const b = redlock({ retryCount: 0 });
    const outcomes = await Promise.allSettled([a.acquire(["job"], 10_000), b.acquire(["job"], 10_000)]);
    const won = outcomes.filter((o) => o.status === "fulfilled");
    const lost = outcomes.filter((o) => o.status === "rejected");
    expect(won).toHaveLength(1);
    expect((lost[0] as PromiseRejectedResult).reason).toBeInstanceOf(LockAcquisitionError);
    expect(((lost[0] as PromiseRejectedResult).reason as LockAcquisitionError).reason).toBe("held");
    const holder = (won[0] as PromiseFulfilledResult<Awaited<ReturnType<Redlock["acquire"]>>>).value;
    await expect(b.acquire(["job"], 10_000)).rejects.toBeInstanceOf(LockAcquisitionError);
    const { released } = await holder.release();
    expect(released).toBeGreaterThanOrEqual(3);
    const next = await b.acquire(["job"], 10_000);
    expect(next.value).not.toBe(holder.value);
    await next.release();
  });

  it("each node holds the key with the lock's value and a PTTL ≤ ttl (seen over plain TCP)", async () => {
    const lock = await redlock().acquire(["orders:42"], 10_000);
    await settle(env); // let the two nodes not needed for the quorum finish too
    for (const tcp of env.tcp) {
      expect(await tcp.get("orders:42")).toBe(lock.value);
      const pttl = await tcp.pttl("orders:42");
      expect(pttl).toBeGreaterThan(9_000);
      expect(pttl).toBeLessThanOrEqual(10_000);
    }
    expect(lock.expiresAt).toBeGreaterThan(Date.now() + 9_000);
    expect(lock.expiresAt).toBeLessThanOrEqual(Date.now() + 10_000);
    await lock.release();
    for (const tcp of env.tcp) expect(await tcp.exists("orders:42")).toBe(0);
  });

  it("sends exactly one request per node per attempt in steady state (EVALSHA), one more on a script miss", async () => {
    const lock1 = await redlock().acquire(["warm"], 5_000);
    await (await lock1.release()).pending;
    let states = await Promise.all(env.admins.map((a) => a.state()));
    for (const s of states) expect(s.counters.commands).toEqual({ evalsha: 2, eval: 2 });
    await Promise.all(env.admins.map((a) => a.resetCounters()));

    const lock = await redlock().acquire(["steady"], 5_000);
    await settle(env);
    states = await Promise.all(env.admins.map((a) => a.state()));
    expect(states.map((s) => s.counters.received)).toEqual([1, 1, 1, 1, 1]);
    for (const s of states) expect(s.counters.commands).toEqual({ evalsha: 1 });
    await lock.release();
    states = await Promise.all(env.admins.map((a) => a.state()));
    expect(states.map((s) => s.counters.received)).toEqual([2, 2, 2, 2, 2]);
  });

  it("2 of 5 nodes killed: acquire still works; 3 killed: fails as quorum unreachable", async () => {
    await env.admins[0].kill();
    await env.admins[1].kill();
    const lock = await redlock({ retryCount: 0 }).acquire(["k"], 5_000);
    await lock.release();
    await env.admins[2].kill();
    const error = (await redlock({ retryCount: 1, retryDelay: 10 })
      .acquire(["k"], 5_000)
      .catch((e: unknown) => e)) as LockAcquisitionError;
    expect(error).toBeInstanceOf(LockAcquisitionError);
    expect(error.reason).toBe("unreachable");
    expect(error.attempts).toHaveLength(2);
    expect(error.attempts[1].votes.slice(0, 3).map((v) => v.outcome)).toEqual(["error", "error", "error"]);
    for (const tcp of env.tcp.slice(3)) expect(await tcp.exists("k")).toBe(0);
  });

  it("2 of 5 nodes delayed by 2 s: acquire resolves while those two requests are still waiting at their bridges", async () => {
    await env.admins[3].faults({ latencyMs: 2_000 });
    await env.admins[4].faults({ latencyMs: 2_000 });
    const lock = await redlock({ nodeTimeout: 5_000 }).acquire(["slow"], 20_000);
    expect(env.outstanding.size).toBe(2); // the requests to nodes 3 and 4 are still out
    const states = await Promise.all(env.admins.map((a) => a.state()));
    expect(states.map((s) => s.counters.answered > 0)).toEqual([true, true, true, false, false]);
    await lock.release();
  });

  it("a hung node: its request is cut at nodeTimeout and counted as an error, not a grant", async () => {
    await env.admins[0].faults({ hang: true });
    const nodeTimeout = 300;
    const rl = redlock({ nodeTimeout, retryCount: 0 });
    const lock = await rl.acquire(["hung"], 5_000);
    await settle(env); // node 0's request is cut at nodeTimeout, and its bridge sees the client leave
    let state = await env.admins[0].state();
    expect(state.counters).toMatchObject({ received: 1, answered: 0, abandoned: 1, waiting: 0 });
    const released = await lock.release();
    // Decided once a quorum answered: the hung node's request is still out (not waited for), in pending.
    expect(released.votes[0]).toMatchObject({ outcome: "unanswered" });
    expect(released.released).toBeGreaterThanOrEqual(3);
    await released.pending;
    await settle(env);
    state = await env.admins[0].state();
    expect(state.counters).toMatchObject({ received: 2, answered: 0, abandoned: 2, waiting: 0 });
  });

  it("garbage and HTTP 500 replies are never counted as grants", async () => {
    const kinds = ["html", "text", "json-shape", "truncated", "empty"] as const;
    for (const kind of kinds) {
      await env.admins[0].faults({ garbage: kind });
      await env.admins[1].faults({ status: 500 });
      await env.admins[2].faults({ status: 503 });
      const error = (await redlock({ retryCount: 0 })
        .acquire(["g"], 5_000)
        .catch((e: unknown) => e)) as LockAcquisitionError;
      expect(error, kind).toBeInstanceOf(LockAcquisitionError);
      expect(error.reason).toBe("unreachable");
      const votes = error.attempts[0].votes;
      expect(votes.filter((v) => v.outcome === "granted").length).toBeLessThanOrEqual(2);
      expect(votes.slice(0, 3).every((v) => v.outcome === "error")).toBe(true);
      await Promise.all(env.admins.map((a) => a.reset()));
      await settle(env);
      for (const tcp of env.tcp) expect(await tcp.exists("g")).toBe(0);
    }
  });

  it("multi-resource: when another client holds one key, nothing is left set on any node", async () => {
    const other = await redlock().acquire(["b"], 10_000);
    const error = await redlock({ retryCount: 2, retryDelay: 20 })
      .acquire(["a", "b", "c"], 10_000)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockAcquisitionError);
    await settle(env);
    for (const tcp of env.tcp) {
      expect(await tcp.exists("a", "c")).toBe(0);
      expect(await tcp.get("b")).toBe(other.value);
    }
    const both = await redlock().acquire(["a", "c"], 10_000);
    await settle(env);
    for (const tcp of env.tcp) expect(await tcp.mget("a", "c")).toEqual([both.value, both.value]);
  });

  it("releasing an expired lock deletes nothing; extending it fails with LockExtensionError", async () => {
    const rl = redlock({ nodeTimeout: 200 });
    const first = await rl.acquire(["exp"], 400);
    await sleep(450);
    const second = await rl.acquire(["exp"], 10_000);
    const error = (await first.extend(1_000).catch((e: unknown) => e)) as LockExtensionError;
    expect(error).toBeInstanceOf(LockExtensionError);
    expect(error.reason).toBe("lost");
    const { released } = await first.release();
    expect(released).toBe(0);
    await settle(env);
    for (const tcp of env.tcp) expect(await tcp.get("exp")).toBe(second.value);
    expect(((await first.extend(1_000).catch((e: unknown) => e)) as LockExtensionError).reason).toBe("released");
  });

  it("extend moves the expiry on every node, also on the one that answers after the quorum", async () => {
    const lock = await redlock().acquire(["ext"], 2_000);
    await settle(env);
    const before = lock.expiresAt;
    await loadScripts(env);
    await env.admins[4].faults({ latencyMs: 150 }); // nodes 0-3 extend first; the round is decided without node 4
    await lock.extend(30_000);
    expect(lock.expiresAt).toBeGreaterThan(before + 20_000);
    await settle(env);
    for (const tcp of env.tcp) expect(await tcp.pttl("ext")).toBeGreaterThan(29_000);
  });

  it("any string is a key: spaces, unicode, quotes, braces, newlines, Lua-looking text", async () => {
    const keys = [
      "a b",
      "ключ-🔒",
      `quote"'`,
      "{tag}:x",
      "line\nbreak",
      "'); redis.call('FLUSHALL') --",
      "x".repeat(512),
    ];
    const lock = await redlock().acquire(keys, 5_000);
    await settle(env);
    for (const tcp of env.tcp) expect(await tcp.mget(...keys)).toEqual(keys.map(() => lock.value));
    const { released, pending } = await lock.release();
    expect(released).toBeGreaterThanOrEqual(3);
    await pending;
    for (const tcp of env.tcp) expect(await tcp.exists(...keys)).toBe(0);
  });

  it("no error message or tally contains the REST token or a lock value", async () => {
    const token = env.cluster.nodes[0].token;
    await env.tcp[0].hset("typed", "f", "v"); // WRONGTYPE for GET in the release script
    const lock = await redlock().acquire(["other"], 5_000);
    await env.admins[1].faults({ status: 500 });
    await env.admins[2].faults({ garbage: "html" });
    await env.admins[3].kill();
    const error = await redlock({ retryCount: 1, retryDelay: 10 })
      .acquire(["typed", "other"], 5_000)
      .catch((e: unknown) => e);
    const result = await lock.release();
    const texts = [
      String(error),
      (error as Error).stack ?? "",
      JSON.stringify(error),
      JSON.stringify((error as LockAcquisitionError).attempts),
      JSON.stringify(result.votes),
      JSON.stringify(lock),
    ];
    for (const text of texts) {
      expect(text).not.toContain(token);
      expect(text).not.toContain(lock.value);
      expect(text).not.toMatch(/[0-9a-f]{40}/);
    }
  });
});
