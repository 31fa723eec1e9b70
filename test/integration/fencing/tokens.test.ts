// Fencing tokens on the real cluster: successive holders get strictly increasing tokens (one more request per node),
// exact beyond 2^53; a multi-resource lock gets one token above every earlier token of its keys; a holder that paused
// past its validity has its guarded write rejected; fencedRead records the token before reading; a node that restarted
// empty still hands out a larger token (its counter is floored at its clock).
import { Redis } from "@upstash/redis";
import { describe, expect, it } from "vitest";
import { Redlock, compareFences, fenceKey, fencedRead, fencedWrite } from "../../../src/index.ts";
import { loadScripts, settle, useCluster } from "../fixture.ts";

const env = useCluster();
const redlock = (options: ConstructorParameters<typeof Redlock>[1] = {}) =>
  new Redlock(env.nodes, { nodeTimeout: 100, ...options });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("fencing tokens on the real cluster", () => {
  it("successive holders get strictly increasing tokens, at the cost of one more request per node", async () => {
    const rl = redlock();
    // The scripts are loaded on every node first: a warm-up request cut at the 100 ms nodeTimeout (a loaded
    // machine) left a node without a script, and the measured cycle's EVALSHA then took a NOSCRIPT and an EVAL.
    await loadScripts(env);
    await (await rl.acquire(["warm"], 5_000, { fencing: true })).release();
    await settle(env);
    await Promise.all(env.admins.map((a) => a.resetCounters()));
    for (const sent of env.sent) sent.length = 0;
    const fences: string[] = [];
    for (let i = 0; i < 5; i++) {
      const lock = await rl.acquire(["invoice:1"], 5_000, { fencing: true });
      expect(lock.fence).toMatch(/^[1-9][0-9]*$/);
      fences.push(lock.fence!);
      await lock.release();
    }
    for (let i = 1; i < fences.length; i++) expect(compareFences(fences[i], fences[i - 1])).toBe(1);
    await settle(env);
    // Per cycle and node: acquire + write-back + release (and a follow-up release where the acquire reply
    // was still out at release time). The write-back round is decided at a quorum and cuts the rest, so a
    // cut request may never reach its bridge: count what the library sent, then check the bridges agree.
    const count = (sent: string[], name: string) => sent.filter((s) => s === name).length;
    for (const sent of env.sent) {
      expect([count(sent, "fair-acquire"), count(sent, "fence")]).toEqual([5, 5]);
      expect(count(sent, "leave")).toBeGreaterThanOrEqual(5); // a fair lock's release also leaves its queue
    }
    const states = await Promise.all(env.admins.map((a) => a.state()));
    states.forEach((s, node) => {
      expect(s.counters.received).toBeLessThanOrEqual(env.sent[node].length);
      expect(s.counters.received).toBeGreaterThanOrEqual(env.sent[node].length - 5); // only fence requests can be cut
      // One script per request: EVAL the first time a script runs on a node (it loads it), EVALSHA after.
      const { evalsha = 0, eval: evals = 0, ...others } = s.counters.commands;
      expect(others).toEqual({});
      expect(evalsha + evals).toBe(s.counters.received);
      expect(evals).toBeLessThanOrEqual(3);
    });
  });

  it("tokens are exact beyond 2^53 (decimal strings, never floats)", async () => {
    for (const tcp of env.tcp) await tcp.set(fenceKey("big"), "9007199254740993");
    const lock = await redlock().acquire(["big"], 5_000, { fencing: true });
    expect(lock.fence).toBe("9007199254740994");
    await settle(env);
    for (const tcp of env.tcp) expect(await tcp.get(fenceKey("big"))).toBe("9007199254740994");
  });

  it("a multi-resource lock gets one token, above every earlier token of each of its keys", async () => {
    const rl = redlock();
    for (let i = 0; i < 3; i++) await (await rl.acquire(["a"], 5_000, { fencing: true })).release();
    const b = await rl.acquire(["b"], 5_000, { fencing: true });
    await b.release();
    const a = await rl.acquire(["a"], 5_000, { fencing: true });
    await a.release();
    const lastA = a.fence!;
    await (await rl.acquire(["zz"], 5_000)).release();
    const both = await rl.acquire(["a", "b"], 5_000, { fencing: true });
    expect(compareFences(both.fence!, lastA)).toBe(1);
    expect(compareFences(both.fence!, b.fence!)).toBe(1);
  });

  it("a client that pauses past its validity gets its guarded write rejected after the next holder wrote", async () => {
    const db = new Redis({ url: env.cluster.nodes[0].url, token: env.cluster.nodes[0].token });
    const a = await redlock().acquire(["doc"], 400, { fencing: true });
    await sleep(500); // A "pauses" (GC, frozen isolate) past its validity, without knowing
    const b = await redlock({ retryCount: 20, retryDelay: 50 }).acquire(["doc"], 5_000, { fencing: true });
    expect(compareFences(b.fence!, a.fence!)).toBe(1);
    expect(await fencedWrite(db, "doc:data", "written by B", b.fence!)).toBe(true);
    expect(await fencedWrite(db, "doc:data", "written by A", a.fence!)).toBe(false); // A wakes up and tries
    expect(await db.get("doc:data")).toBe("written by B");
    expect(await fencedWrite(db, "doc:data", "B again", b.fence!)).toBe(true); // the same token may write again
  });
});

describe("fencedRead", () => {
  it("records the token before reading, so an older holder's later write is refused before the newer one writes", async () => {
    const db = new Redis({ url: env.cluster.nodes[0].url, token: env.cluster.nodes[0].token });
    const older = await redlock().acquire(["rmw"], 400, { fencing: true });
    const first = await fencedRead(db, "rmw:data", older.fence!);
    expect(first).toEqual({ accepted: true, value: null });
    await new Promise((r) => setTimeout(r, 500)); // the older holder pauses past its validity
    const newer = await redlock({ retryCount: 20, retryDelay: 50 }).acquire(["rmw"], 5_000, { fencing: true });
    expect(await fencedRead(db, "rmw:data", newer.fence!)).toEqual({ accepted: true, value: null });
    expect(await fencedWrite(db, "rmw:data", "1", older.fence!)).toBe(false); // refused although the newer one has not written
    expect(await fencedRead(db, "rmw:data", older.fence!)).toEqual({ accepted: false });
    expect(await fencedWrite(db, "rmw:data", "1", newer.fence!)).toBe(true);
    expect(await fencedRead(db, "rmw:data", newer.fence!)).toEqual({ accepted: true, value: "1" });
  });
});

describe("fencing tokens when nodes lose their data", () => {
  it("a node that restarted empty still hands out a larger token (its counter is floored at its clock)", async () => {
    const first = await redlock().acquire(["restart"], 5_000, { fencing: true });
    await (await first.release()).pending;
    await settle(env); // nothing of the first lock is still on its way when the nodes restart
    await Promise.all(env.admins.map((a) => a.restart())); // every counter gone
    const second = await redlock({ retryCount: 3, retryDelay: 50 }).acquire(["restart"], 5_000, { fencing: true });
    expect(compareFences(second.fence!, first.fence!)).toBe(1);
  });
});
