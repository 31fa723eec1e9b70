// What lands late cannot make two holders, on five real redis-server nodes: a late, shorter extension;
// an extension racing a release. Streamed responses: test/integration/hono/streaming.test.ts.
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, LockExtensionError, Redlock } from "../../../src/index.ts";
import { loadScripts, settle, until, useCluster, type Fixture } from "../fixture.ts";

const env = useCluster();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const holding = async (fixture: Fixture, key: string) =>
  (await Promise.all(fixture.tcp.map((t) => t.exists(key)))).reduce((a, b) => a + b, 0);

describe("a late, shorter extension (real Redis)", () => {
  it("does not shorten the key on a majority: a contender is refused while the holder's validity lasts", async () => {
    await loadScripts(env);
    const lock = await new Redlock(env.nodes, { retryCount: 0 }).acquire(["late:k"], 10_000);
    await settle(env);
    await Promise.all([3, 4].map((i) => env.admins[i].faults({ latencyMs: 300 })));
    await lock.extend(1_000); // decided on {0,1,2}; the requests to 3 and 4 wait 300 ms in their bridges
    await Promise.all([3, 4].map((i) => env.admins[i].faults({ latencyMs: 0 })));
    await env.admins[2].faults({ hang: true });
    await lock.extend(10_000); // decided without node 2
    await settle(env); // the PX 1000 requests have run on 3 and 4; node 2's request was cut
    await env.admins[2].reset();
    await sleep(1_100); // past the first extension's ttl
    const pttls = await Promise.all(env.tcp.map((t) => t.pttl("late:k")));
    expect(lock.validityMs).toBeGreaterThan(7_000);
    expect(pttls.filter((pttl) => pttl >= lock.validityMs).length, `PTTLs ${pttls}`).toBeGreaterThanOrEqual(3);
    const contender = await new Redlock(env.nodes, { retryCount: 0 })
      .acquire(["late:k"], 5_000)
      .catch((e: unknown) => e);
    expect(contender).toBeInstanceOf(LockAcquisitionError);
    expect((contender as LockAcquisitionError).reason).toBe("held");
    await lock.release();
  });
});

describe("a released lock is dead (real Redis)", () => {
  it("an extension slower than the release neither reports success nor brings the keys back", async () => {
    await loadScripts(env);
    const lock = await new Redlock(env.nodes, { retryCount: 0 }).acquire(["race:k"], 5_000);
    await settle(env);
    await Promise.all(env.admins.map((a) => a.faults({ latencyMs: 200 })));
    const extension = lock.extend(5_000).then(
      () => "extended",
      (e: unknown) => e,
    );
    // Every extension request is held in its bridge; the release then overtakes it.
    await until(async () =>
      (await Promise.all(env.admins.map((a) => a.state()))).every((s) => s.counters.waiting === 1),
    );
    await Promise.all(env.admins.map((a) => a.faults({ latencyMs: 0 })));
    const result = await lock.release();
    expect(result.released).toBeGreaterThanOrEqual(3);
    await result.pending;
    const outcome = await extension;
    expect(outcome).toBeInstanceOf(LockExtensionError);
    expect((outcome as LockExtensionError).reason).toBe("released");
    await settle(env);
    expect(await holding(env, "race:k")).toBe(0);
    const next = await new Redlock(env.nodes, { retryCount: 0 }).acquire(["race:k"], 1_000);
    await next.release();
  });

  it("an extension racing a release in both orders at once (release first on 0-2, last on 3-4) reports released and leaves no key", async () => {
    await loadScripts(env);
    const lock = await new Redlock(env.nodes, { retryCount: 0, nodeTimeout: 1_000 }).acquire(["mixed:k"], 5_000);
    await settle(env);
    await Promise.all(env.admins.map((a) => a.faults({ latencyMs: 200 })));
    const extension = lock.extend(8_000).then(
      () => "extended",
      (e: unknown) => e,
    );
    await until(async () =>
      (await Promise.all(env.admins.map((a) => a.state()))).every((s) => s.counters.waiting === 1),
    );
    // The release overtakes the extension on 0-2 and lands 400 ms later on 3-4 (after the extension ran there).
    await Promise.all([0, 1, 2].map((i) => env.admins[i].faults({ latencyMs: 0 })));
    await Promise.all([3, 4].map((i) => env.admins[i].faults({ latencyMs: 400 })));
    const result = await lock.release();
    await result.pending;
    const outcome = await extension;
    await settle(env);
    expect(outcome).toBeInstanceOf(LockExtensionError);
    expect((outcome as LockExtensionError).reason).toBe("released");
    expect(await Promise.all(env.tcp.map((t) => t.pttl("mixed:k")))).toEqual([-2, -2, -2, -2, -2]);
  });

  it("extend() after release() throws at once and sends nothing", async () => {
    const lock = await new Redlock(env.nodes, { retryCount: 0 }).acquire(["dead:k"], 5_000);
    await settle(env);
    await (await lock.release()).pending;
    await Promise.all(env.admins.map((a) => a.resetCounters()));
    const error = await lock.extend(5_000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockExtensionError);
    expect((error as LockExtensionError).reason).toBe("released");
    expect((await Promise.all(env.admins.map((a) => a.state()))).map((s) => s.counters.received)).toEqual([
      0, 0, 0, 0, 0,
    ]);
    expect(await holding(env, "dead:k")).toBe(0);
  });
});
