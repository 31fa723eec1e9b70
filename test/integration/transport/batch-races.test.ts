// Batches stay correct under the orderings a batch allows, on the real cluster: acquire, extend and release of one lock
// (and of a lock and a permit of the same name) mixed in one pipeline, NOSCRIPT and key-locking fallbacks in the middle
// of a batch, a node that flips between accepting and rejecting the flag, release decided at a quorum while acquire
// stragglers (on their fallback path) are still out; and no secret in batched errors.
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, LockExtensionError, Redlock, type Lock, type RedlockNode } from "../../../src/index.ts";
import { loadScripts, settle, useCluster } from "../fixture.ts";

const env = useCluster();
const config = () => env.cluster.nodes.map(({ url, token }) => ({ url, token }));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const held = async (key: string) => (await Promise.all(env.tcp.map((t) => t.exists(key)))).reduce((a, b) => a + b, 0);
const counters = async () => (await Promise.all(env.admins.map((a) => a.state()))).map((s) => s.counters);

describe("one batch, one lock (real cluster)", () => {
  it("extend and release of the same lock in one turn (one pipeline per node, scripts not loaded: NOSCRIPT mid-batch)", async () => {
    const redlock = new Redlock(config(), { retryCount: 0 });
    const locks = await Promise.all(["mix:a", "mix:b", "mix:c"].map((k) => redlock.acquire([k], 5_000)));
    await settle(env);
    await env.tcp[0].script("FLUSH"); // node 0 has forgotten every script: the whole batch falls back there
    await Promise.all(env.admins.map((a) => a.resetCounters()));
    const outcomes = await Promise.all(
      locks.flatMap((lock) => [
        lock.extend(8_000).then(
          () => "extended",
          (e: unknown) => (e instanceof LockExtensionError ? e.reason : String(e)),
        ),
        lock.release().then(async (r) => {
          await r.pending;
          return `released ${r.released}`;
        }),
      ]),
    );
    await settle(env);
    expect(outcomes.filter((_, i) => i % 2 === 0)).toEqual(["released", "released", "released"]);
    for (const k of ["mix:a", "mix:b", "mix:c"]) expect(await held(k)).toBe(0);
    const c = await counters();
    expect(c.map((x) => x.pipelines).every((p) => p >= 1)).toBe(true);
  });

  it("a lock and a permit of the same name, plus another lock's release, in one pipeline: each gets its own vote", async () => {
    await loadScripts(env);
    const redlock = new Redlock(config(), { retryCount: 0 });
    const other = await redlock.acquire(["same:other"], 5_000);
    const s = redlock.semaphore("same", 1);
    const [lock, permit, rel] = await Promise.all([
      redlock.acquire(["same"], 5_000),
      s.acquire(5_000),
      other.release(),
    ]);
    expect(lock.resources).toEqual(["same"]);
    expect(permit.slot).toBe(0);
    expect(rel.released).toBeGreaterThanOrEqual(3);
    // The lock and the permit are different keys; a second permit is refused, a second lock too.
    expect(await s.acquire(1_000).catch((e: unknown) => (e as LockAcquisitionError).reason)).toBe("held");
    expect(await redlock.acquire(["same"], 1_000).catch((e: unknown) => (e as LockAcquisitionError).reason)).toBe(
      "held",
    );
    await Promise.all([lock, permit].map(async (l) => (await l.release()).pending));
    await rel.pending;
    await settle(env);
    for (const k of ["same", "same:other", "edge-redlock:semaphore:same:0"]) expect(await held(k)).toBe(0);
  });
});

describe("release at a quorum while acquire stragglers are on their fallback path (real cluster)", () => {
  it("stragglers on nodes that reject the flag (3 requests each), slow: release, then nothing left anywhere", async () => {
    // no scripts loaded: a flag-rejecting node answers NOSCRIPT, then the flag error, then the flagless EVAL
    await Promise.all([3, 4].map((i) => env.admins[i].faults({ rejectKeyLocking: true, latencyMs: 80 })));
    const redlock = new Redlock(config(), { retryCount: 0, nodeTimeout: 1_000 });
    const keys = Array.from({ length: 6 }, (_, i) => `strag:${i}`);
    const locks: Lock[] = await Promise.all(keys.map((k) => redlock.acquire([k], 10_000)));
    // decided on {0,1,2}; on 3 and 4 every acquire is still on its way (EVALSHA → EVAL → EVAL)
    const early = await counters();
    expect([early[3].commands.eval ?? 0, early[4].commands.eval ?? 0]).toEqual([0, 0]);
    const results = await Promise.all(locks.map((l) => l.release()));
    for (const r of results)
      expect(r.votes.filter((v) => v.outcome === "unanswered" || v.node < 3).length).toBeGreaterThanOrEqual(3);
    await Promise.all(results.map((r) => r.pending));
    await settle(env);
    for (const k of keys) expect(await held(k), k).toBe(0);
  });

  it("a node that flips between accepting and rejecting the flag every 40 ms: 30 lock cycles, every one held on a quorum, none left", async () => {
    const redlock = new Redlock(config(), { retryCount: 3, retryDelay: 20, retryJitter: 10 });
    let flips = 0;
    let stop = false;
    const flipper = (async () => {
      while (!stop) {
        await env.admins[2].faults({ rejectKeyLocking: flips++ % 2 === 0 });
        await sleep(40);
      }
    })();
    // At least 10 rounds of 3 locks, and on until the flag has flipped a few times (a fast machine does 10 rounds in under 100 ms).
    let rounds = 10;
    for (let i = 0; i < rounds; i++) {
      if (i === rounds - 1 && flips <= 3 && rounds < 200) rounds++;
      const locks = await Promise.all([0, 1, 2].map((j) => redlock.acquire([`flip:${i}:${j}`], 3_000)));
      for (const l of locks) expect(l.validityMs).toBeGreaterThan(0);
      await Promise.all(locks.map(async (l) => (await l.release()).pending));
    }
    stop = true;
    await flipper;
    await settle(env);
    for (let i = 0; i < rounds; i++) for (let j = 0; j < 3; j++) expect(await held(`flip:${i}:${j}`)).toBe(0);
    expect(flips).toBeGreaterThan(2);
  });
});

describe("secrets in batched failures (real cluster)", () => {
  it("a whole pipeline answered with an HTTP error, garbage or a cut: no member's cause, error or JSON holds any lock value or token", async () => {
    await loadScripts(env);
    const values = new Set<string>();
    // The fixture's nodes are the library's batched upstashNode; this wrapper only records each value sent.
    const spying = env.nodes.map(
      (node): RedlockNode => ({
        label: node.label,
        run: (script, keys, args, signal) => {
          values.add(args[0]);
          return node.run(script, keys, args, signal);
        },
      }),
    );
    const redlock = new Redlock(spying, { retryCount: 0, nodeTimeout: 300 });
    const tokens = env.cluster.nodes.map((n) => n.token);
    for (const fault of [
      { status: 500 },
      { garbage: "truncated" as const },
      { garbage: "json-shape" as const },
      { cut: true },
    ]) {
      await Promise.all([0, 1, 2].map((i) => env.admins[i].faults(fault)));
      const errors = await Promise.all(
        Array.from({ length: 4 }, (_, i) =>
          redlock.acquire([`secret:${i}`], 2_000).then(
            () => "held",
            (e: unknown) => e as LockAcquisitionError,
          ),
        ),
      );
      for (const error of errors) {
        expect(error).toBeInstanceOf(LockAcquisitionError);
        const text = `${(error as Error).message} ${JSON.stringify(error)} ${JSON.stringify((error as LockAcquisitionError).attempts)}`;
        for (const t of tokens) expect(text).not.toContain(t);
        for (const v of values) expect(text).not.toContain(v);
        expect(text).not.toMatch(/command was/);
      }
      await Promise.all([0, 1, 2].map((i) => env.admins[i].reset()));
    }
    expect(values.size).toBeGreaterThanOrEqual(16);
    await settle(env);
  });
});
