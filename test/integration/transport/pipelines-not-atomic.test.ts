// Upstash's pipelines are not atomic (docs: REST API, Pipelining): other clients' commands can run
// between two members. The bridge runs members one by one; a `pipelineGapMs` fault widens the gap so a
// test can aim at it. Then the library, whose batches go out as one pipeline per node, must stay a
// mutex when another client's batch interleaves with its own.
import { describe, expect, it } from "vitest";
import { Redlock, type Lock } from "../../../src/index.ts";
import { loadScripts, settle, until, useCluster } from "../fixture.ts";

const env = useCluster();
const config = () => env.cluster.nodes.map(({ url, token }) => ({ url, token }));
const post = (i: number, path: string, body: unknown) =>
  fetch(env.cluster.nodes[i].url + path, {
    method: "POST",
    headers: { authorization: `Bearer ${env.cluster.nodes[i].token}` },
    body: JSON.stringify(body),
  });

describe("pipelines are not atomic (real Redis behind the bridge)", () => {
  it("another client's command lands between two members of one pipeline", async () => {
    await env.admins[0].faults({ pipelineGapMs: 400 });
    const pipeline = post(0, "/pipeline", [
      ["set", "k", "first"],
      ["get", "k"],
      ["set", "k", "last"],
    ]).then((r) => r.json());
    await until(async () => (await env.tcp[0].get("k")) === "first"); // member 1 ran; member 2 waits out the gap
    expect(await (await post(0, "/", ["set", "k", "intruder"])).json()).toEqual({ result: "OK" });
    expect(await pipeline).toEqual([{ result: "OK" }, { result: "intruder" }, { result: "OK" }]);
    expect(await env.tcp[0].get("k")).toBe("last");
  });

  it("without a gap, members still run one by one: an interleaved client can see a half-applied pipeline", async () => {
    // 300 members; a reader polling in parallel must see the list part-way at least once.
    const members = Array.from({ length: 300 }, (_, i) => ["rpush", "list", String(i)]);
    const seen = new Set<number>();
    let done = false;
    const reader = (async () => {
      while (!done) seen.add(((await (await post(0, "/", ["llen", "list"])).json()) as { result: number }).result);
    })();
    await post(0, "/pipeline", members);
    done = true;
    await reader;
    expect([...seen].some((n) => n > 0 && n < 300)).toBe(true);
  });

  it("two clients' batched acquisitions of the same 20 resources interleave member by member: each resource has one holder", async () => {
    await loadScripts(env);
    await Promise.all(env.admins.map((a) => a.faults({ pipelineGapMs: 5 })));
    const keys = Array.from({ length: 20 }, (_, i) => `race:${i}`);
    const alice = new Redlock(config(), { retryCount: 0 });
    const bob = new Redlock(config(), { retryCount: 0 });
    // Alice's batch goes first in key order; Bob's starts while hers runs, in reverse order, so on every
    // node their members meet in the middle of both pipelines.
    const aliceTries = Promise.allSettled(keys.map((key) => alice.acquire([key], 10_000)));
    await until(async () => (await env.tcp[0].exists("race:0")) === 1);
    const bobTries = Promise.allSettled([...keys].reverse().map((key) => bob.acquire([key], 10_000)));
    const granted = (results: PromiseSettledResult<Lock>[]) =>
      results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    const aliceLocks = granted(await aliceTries);
    const bobLocks = granted(await bobTries);
    await settle(env);

    const holders = new Map<string, string[]>();
    for (const [who, locks] of [
      ["alice", aliceLocks],
      ["bob", bobLocks],
    ] as const) {
      for (const lock of locks) holders.set(lock.resources[0], [...(holders.get(lock.resources[0]) ?? []), who]);
    }
    for (const [key, who] of holders) expect(who, key).toHaveLength(1); // mutual exclusion
    expect(aliceLocks.length).toBeGreaterThan(0);
    expect(bobLocks.length).toBeGreaterThan(0); // the pipelines did interleave: atomic ones would give Alice all 20
    // Each granted lock's value is what a majority of nodes hold for its resource.
    for (const lock of [...aliceLocks, ...bobLocks]) {
      const values = await Promise.all(env.tcp.map((t) => t.get(lock.resources[0])));
      expect(values.filter((v) => v === lock.value).length, lock.resources[0]).toBeGreaterThanOrEqual(3);
    }
    const released = await Promise.all([...aliceLocks, ...bobLocks].map((lock) => lock.release()));
    await Promise.all(released.map((r) => r.pending));
    await settle(env);
    for (const key of keys)
      expect(await env.tcp.reduce(async (n, t) => (await n) + (await t.exists(key)), Promise.resolve(0)), key).toBe(0);
  });
});
