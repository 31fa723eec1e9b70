// using() on the real cluster: it extends while the routine runs and releases after (also when the routine throws, and
// at the end of an `await using` scope, once a quorum answered, undoing a slow node's late acquire in the background);
// it aborts the routine's signal when too few nodes remain, when the nodes pause past the validity, and at maxHold;
// aborting mid-retry returns within one node timeout and leaves no key behind.
import { describe, expect, it } from "vitest";
import { LockExtensionError, MaxHoldError, Redlock } from "../../../src/index.ts";
import { loadScripts, settle, until, useCluster } from "../fixture.ts";

const env = useCluster();
const redlock = (options: ConstructorParameters<typeof Redlock>[1] = {}) =>
  new Redlock(env.nodes, { nodeTimeout: 150, ...options });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const untilAborted = (signal: AbortSignal, capMs: number) =>
  new Promise<unknown>((resolve) => {
    const timer = setTimeout(() => resolve("not aborted"), capMs);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve(signal.reason);
    });
  });
const extendsAt = async () =>
  (await Promise.all(env.admins.map((a) => a.state()))).map((s) => s.counters.commands.evalsha ?? 0);

describe("using on the real cluster", () => {
  it("extends automatically while the routine runs (counted at the nodes) and releases after", async () => {
    const rl = redlock({ nodeTimeout: 300 }); // room for an extension round on a loaded machine
    await (await rl.acquire(["warm"], 1_000)).release(); // load the scripts
    await settle(env);
    await Promise.all(env.admins.map((a) => a.resetCounters()));
    const result = await rl.using(["using:a"], 600, async (signal) => {
      await sleep(1_500);
      return signal.aborted ? "lost" : "kept";
    });
    expect(result).toBe("kept");
    await settle(env);
    const evalsha = await extendsAt();
    // 1 acquire + extensions + 1 release on every node: every ~250 ms over 1.5 s is 5 extensions; the 600 ms ttl
    // needs 2 to last, and an overloaded machine that fires the timers late still sends 3.
    for (const count of evalsha) expect(count).toBeGreaterThanOrEqual(5);
    for (const tcp of env.tcp) expect(await tcp.exists("using:a")).toBe(0);
  });

  it("aborts the routine's signal with LockExtensionError when 3 of 5 nodes are killed mid-routine", async () => {
    const reason = await redlock().using(["using:b"], 600, async (signal) => {
      await Promise.all([env.admins[0].kill(), env.admins[1].kill(), env.admins[2].kill()]);
      return untilAborted(signal, 3_000);
    });
    expect(reason).toBeInstanceOf(LockExtensionError);
    expect((reason as LockExtensionError).reason).toBe("unreachable");
  });

  it("aborts when the nodes are paused past the validity", async () => {
    const started = performance.now();
    let validUntil = 0;
    const reason = await redlock().using(["using:c"], 600, async (signal, lock) => {
      validUntil = performance.now() + lock.validityMs;
      for (const server of env.cluster.servers) server.pause();
      return untilAborted(signal, 3_000);
    });
    expect(reason).toBeInstanceOf(LockExtensionError);
    expect(performance.now()).toBeLessThan(validUntil + 1_000);
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it("aborts with MaxHoldError at maxHold", async () => {
    const started = performance.now();
    const reason = await redlock().using(["using:d"], 600, (signal) => untilAborted(signal, 3_000), { maxHold: 800 });
    expect(reason).toBeInstanceOf(MaxHoldError);
    expect(performance.now() - started).toBeGreaterThanOrEqual(790);
  });

  it("releases after the routine throws", async () => {
    const boom = new Error("failed inside");
    await expect(
      redlock().using(["using:e"], 5_000, async () => {
        throw boom;
      }),
    ).rejects.toBe(boom);
    await settle(env); // the release resolved once a quorum answered; the rest lands now
    for (const tcp of env.tcp) expect(await tcp.exists("using:e")).toBe(0);
  });

  it("await using releases at scope exit", async () => {
    {
      await using lock = await redlock().acquire(["using:f"], 5_000);
      // A quorum granted it; the other nodes' acquire replies may still be on their way.
      const holders = (await Promise.all(env.tcp.map((tcp) => tcp.get("using:f")))).filter((v) => v === lock.value);
      expect(holders.length).toBeGreaterThanOrEqual(3);
    }
    for (const tcp of env.tcp) expect(await tcp.exists("using:f")).toBe(0);
  });

  /** Node 4's acquire (EVALSHA, 3rd request) lands at its node after its release: pending undoes it. */
  const lateAcquireUndone = async (key: string) => {
    await until(async () => {
      const { received, inFlight } = (await env.admins[4].state()).counters;
      return received === 3 && inFlight === 0; // acquire, release, follow-up release
    });
    for (const tcp of env.tcp) expect(await tcp.exists(key)).toBe(0);
  };

  it("await using leaves the scope once a quorum answered the release; a slow node's late acquire is undone in the background", async () => {
    await loadScripts(env); // one EVALSHA per request: the latency below delays each request once
    await Promise.all(env.admins.map((a) => a.resetCounters()));
    await env.admins[4].faults({ latencyMs: 400 }); // node 4's acquire waits at its bridge; 0-3 grant first
    {
      await using lock = await redlock({ nodeTimeout: 1_000 }).acquire(["using:late"], 5_000);
      expect(lock.resources).toEqual(["using:late"]);
      await env.admins[4].faults({ latencyMs: 0 }); // the release reaches node 4 before the acquire does
    }
    // The scope was left without waiting for node 4: its acquire is still held at its bridge...
    expect((await env.admins[4].state()).counters.waiting).toBe(1);
    // ...and the release's pending work undoes it once it lands.
    await lateAcquireUndone("using:late");
  });

  it("using resolves once a quorum answered the release; a slow node's late acquire is undone in the background", async () => {
    await loadScripts(env);
    await Promise.all(env.admins.map((a) => a.resetCounters()));
    await env.admins[4].faults({ latencyMs: 400 });
    const result = await redlock({ nodeTimeout: 1_000 }).using(["using:late2"], 5_000, async () => {
      await env.admins[4].faults({ latencyMs: 0 });
      return "done";
    });
    expect(result).toBe("done");
    expect((await env.admins[4].state()).counters.waiting).toBe(1);
    await lateAcquireUndone("using:late2");
  });

  it("aborting mid-retry returns within one node timeout and leaves no key behind", async () => {
    // Another holder on nodes 0-2; nodes 3-4 free, so every attempt sets keys there and must undo them.
    for (const tcp of env.tcp.slice(0, 3)) await tcp.set("using:g", "third-party", "PX", 10_000);
    await loadScripts(env); // one EVALSHA per request: the latency below delays each request once
    // Its acquire lands after the round is decided. The abort waits for the last one to land and for its
    // release (each delayed alike): 2 × 80 ms at most, inside the bound below with room for the machine (with
    // 100 ms the worst case was 200 ms plus overheads, over the bound whenever the abort followed a send).
    await env.admins[3].faults({ latencyMs: 80 });
    const controller = new AbortController();
    const waiting = redlock({ retryCount: -1, retryDelay: 30, retryJitter: 10 }).acquire(["using:g"], 10_000, {
      signal: controller.signal,
    });
    await sleep(420);
    const reason = new Error("caller gave up");
    const abortedAt = performance.now();
    controller.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    expect(performance.now() - abortedAt).toBeLessThan(150 + 50);
    const attempts = (await env.admins[4].state()).counters.commands.evalsha ?? 0;
    expect(attempts).toBeGreaterThan(3);
    await settle(env);
    for (const tcp of env.tcp.slice(3)) expect(await tcp.exists("using:g")).toBe(0);
  });
});
