// The lone-request path (a request goes through @upstash/redis's `request` function) on the real cluster, with
// `batching: false` so that every request (EVALSHA, the NOSCRIPT fallback, the flagless EVAL, releases) is a plain
// request. What must hold: an unknown outcome (HTTP error, garbage, timeout, cut, script error) is never a vote for;
// no lock is reported held without a quorum; nothing is left after a failed attempt or a release (stragglers
// and requests that reached a paused Redis included); no token, lock value or command in any error or log.
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, Redlock, type Lock } from "../../../src/index.ts";
import { capturedWarnings, loadScripts, releaseOvertakingStragglers, settle, textsOf, useCluster } from "../fixture.ts";

const env = useCluster();
const config = () => env.cluster.nodes.map(({ url, token }) => ({ url, token }));
const held = async (key: string) => (await Promise.all(env.tcp.map((t) => t.exists(key)))).reduce((a, b) => a + b, 0);

const logged = capturedWarnings();

type Fault = {
  status?: number;
  garbage?: "html" | "text" | "json-shape" | "truncated" | "empty";
  cut?: boolean;
  hang?: boolean;
  latencyMs?: number;
};

describe("lone requests (batching: false) under every fault: errors only, never a vote for", () => {
  const faults: [string, Fault][] = [
    ["HTTP 500", { status: 500 }],
    ["HTTP 401", { status: 401 }],
    ["HTTP 200 html", { garbage: "html" }],
    ["HTTP 200 text", { garbage: "text" }],
    ["HTTP 200 json of another shape", { garbage: "json-shape" }],
    ["HTTP 200 truncated json", { garbage: "truncated" }],
    ["HTTP 200 empty body", { garbage: "empty" }],
    ["cut", { cut: true }],
    ["hang", { hang: true }],
    ["slower than nodeTimeout", { latencyMs: 400 }],
  ];
  for (const loaded of [true, false]) {
    it(`3 of 5 nodes faulty, scripts ${loaded ? "loaded" : "not loaded (NOSCRIPT → EVAL)"}: refused, faulty votes are errors, nothing left, no secret anywhere`, async () => {
      const tokens = env.cluster.nodes.map((n) => n.token);
      for (const [name, fault] of faults) {
        await Promise.all(env.tcp.map((c) => c.script("FLUSH")));
        if (loaded) await loadScripts(env);
        await Promise.all([0, 1, 2].map((i) => env.admins[i].faults(fault)));
        const values: string[] = [];
        const redlock = new Redlock(config(), { batching: false, retryCount: 0, nodeTimeout: 150 });
        const key = `lone:${loaded}:${name}`;
        const outcome = await redlock.acquire([key], 5_000).then(
          (lock) => {
            values.push(lock.value);
            return lock;
          },
          (e: unknown) => e,
        );
        expect(outcome, name).toBeInstanceOf(LockAcquisitionError);
        const error = outcome as LockAcquisitionError;
        const votes = error.attempts[0].votes;
        for (const i of [0, 1, 2])
          expect(votes[i].outcome, `${name}: node ${i} ${JSON.stringify(votes[i])}`).toBe("error");
        for (const i of [3, 4]) expect(["granted", "unanswered"], `${name}: node ${i}`).toContain(votes[i].outcome);
        expect(error.attempts[0].granted, name).toBeLessThanOrEqual(2);
        // The healthy nodes granted: the attempt's cleanup must take those keys back.
        await Promise.all([0, 1, 2].map((i) => env.admins[i].reset()));
        await settle(env);
        await new Promise((r) => setTimeout(r, 50));
        expect(await held(key), `${name}: keys left`).toBe(0);
        const all = [...textsOf(error), ...textsOf(error.attempts), ...logged];
        for (const text of all) {
          for (const t of tokens) expect(text, name).not.toContain(t);
          expect(text, name).not.toMatch(/command was/);
          expect(text, name).not.toMatch(/[0-9a-f]{40}/); // a lock value (160-bit hex) or a script SHA
        }
      }
    });
  }

  it("a script error in a 400 reply (WRONGTYPE) on lone EXTEND and RELEASE requests: error votes without the command, the value or the Lua", async () => {
    const redlock = new Redlock(config(), { batching: false, retryCount: 0 });
    const lock = await redlock.acquire(["lone:typed"], 5_000);
    const value = lock.value;
    for (const i of [0, 1, 2]) {
      await env.tcp[i].del("lone:typed");
      await env.tcp[i].hset("lone:typed", "f", "v");
    }
    const extension = await lock.extend(5_000).catch((e: unknown) => e);
    expect(extension).toBeInstanceOf(Error);
    const released = await lock.release();
    await released.pending;
    for (const i of [0, 1, 2])
      expect(released.votes[i]).toMatchObject({ outcome: "error", cause: expect.stringMatching(/^WRONGTYPE/) });
    for (const text of [...textsOf(extension), ...textsOf(released), ...logged]) {
      expect(text).not.toContain(value);
      expect(text).not.toMatch(/command was|redis\.call/);
    }
    await settle(env);
    expect(await env.tcp[3].exists("lone:typed")).toBe(0);
  });
});

describe("lone requests that land late (batching: false)", () => {
  it("stragglers on two slow nodes that reject the flag (NOSCRIPT → EVAL → flagless EVAL, each a lone request): release, then nothing left", async () => {
    await Promise.all([3, 4].map((i) => env.admins[i].faults({ rejectKeyLocking: true, latencyMs: 60 })));
    const redlock = new Redlock(config(), { batching: false, retryCount: 0, nodeTimeout: 1_000 });
    const keys = Array.from({ length: 6 }, (_, i) => `lone-strag:${i}`);
    const locks: Lock[] = await Promise.all(keys.map((k) => redlock.acquire([k], 10_000)));
    const results = await Promise.all(locks.map((l) => l.release()));
    await Promise.all(results.map((r) => r.pending));
    await settle(env);
    for (const k of keys) expect(await held(k), k).toBe(0);
  });

  it("acquire stragglers that land after the release's own request on their node (release overtakes them): the follow-up release takes them back", async () => {
    await loadScripts(env);
    const redlock = new Redlock(config(), { batching: false, retryCount: 0, nodeTimeout: 1_000 });
    await releaseOvertakingStragglers(env, redlock, "lone-overtaken", 4);
  });

  it("an extension still on its way when the release overtakes it on every node: the extension fails, reports released, re-creates nothing", async () => {
    await loadScripts(env);
    const redlock = new Redlock(config(), { batching: false, retryCount: 0, nodeTimeout: 1_000 });
    const keys = Array.from({ length: 4 }, (_, i) => `lone-ext-rel:${i}`);
    const locks = await Promise.all(keys.map((k) => redlock.acquire([k], 10_000)));
    await Promise.all(env.admins.map((a) => a.faults({ latencyMs: 250 })));
    const extensions = locks.map((l) =>
      l.extend(20_000).then(
        () => "extended",
        (e: unknown) => (e as { reason?: string }).reason ?? String(e),
      ),
    );
    await new Promise((r) => setTimeout(r, 20));
    await Promise.all(env.admins.map((a) => a.faults({ latencyMs: 0 })));
    const results = await Promise.all(locks.map((l) => l.release()));
    // Every node that answered in time deleted the keys (a node the loaded machine kept past nodeTimeout is left
    // to `pending`, and the end of the test checks it too).
    for (const r of results) {
      expect(r.votes.filter((v) => v.outcome === "denied")).toEqual([]);
      expect(r.released).toBeGreaterThanOrEqual(2);
    }
    expect(await Promise.all(extensions)).toEqual(keys.map(() => "released"));
    for (const l of locks) expect(l.validityMs).toBeLessThanOrEqual(0);
    await Promise.all(results.map((r) => r.pending));
    await settle(env);
    for (const k of keys) expect(await held(k), k).toBe(0);
  });

  it("requests that reach a paused Redis on two nodes (cut by nodeTimeout, run on resume): held on the other three, released, nothing left", async () => {
    await loadScripts(env);
    const redlock = new Redlock(config(), { batching: false, retryCount: 0, nodeTimeout: 200 });
    await Promise.all([3, 4].map((i) => env.admins[i].pause()));
    const keys = Array.from({ length: 4 }, (_, i) => `lone-paused:${i}`);
    const locks = await Promise.all(keys.map((k) => redlock.acquire([k], 10_000)));
    for (const lock of locks) expect(lock.validityMs).toBeGreaterThan(0);
    const results = await Promise.all(locks.map((l) => l.release()));
    for (const r of results) expect(r.released).toBe(3);
    await Promise.all(results.map((r) => r.pending));
    await Promise.all([3, 4].map((i) => env.admins[i].resume()));
    await settle(env);
    await new Promise((r) => setTimeout(r, 100));
    for (const k of keys) expect(await held(k), k).toBe(0);
  });

  it("a caller's abort while every lone request is inside @upstash/redis's request (slow nodes): refused, no unhandled rejection, nothing left", async () => {
    await loadScripts(env);
    await Promise.all(env.admins.map((a) => a.faults({ latencyMs: 150 })));
    const redlock = new Redlock(config(), { batching: false, retryCount: 0, nodeTimeout: 1_000 });
    const keys = Array.from({ length: 4 }, (_, i) => `lone-abort:${i}`);
    const controller = new AbortController();
    const outcomes = Promise.all(
      keys.map((k) =>
        redlock.acquire([k], 5_000, { signal: controller.signal }).then(
          () => "held",
          (e: unknown) => (e as Error).name,
        ),
      ),
    );
    setTimeout(() => controller.abort(), 40);
    expect(await outcomes).not.toContain("held");
    await Promise.all(env.admins.map((a) => a.reset()));
    await settle(env);
    await new Promise((r) => setTimeout(r, 50));
    for (const k of keys) expect(await held(k), k).toBe(0);
  });
});
