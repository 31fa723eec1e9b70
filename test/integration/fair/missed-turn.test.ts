// A waiter that missed its turn, on five real redis-server nodes behind the REST bridge: its LEAVE takes its old ticket
// out on every node, also where its attempt was refused (node 4: a stranger's key, where the refused request had
// enqueued the old ticket; the give-up's LEAVE names the new one). After it gave up nothing of it is left in line, and
// a client that needs the refusing node is served at once. Where those LEAVEs are lost, each old ticket left at the
// head keeps that client out for at most its claim window (200 ms) once the resource is free and the client asks.
// The slow waiter S runs on a clock that jumps by its ttl at the first reply of each of its acquire rounds: each of
// its rounds wins nodes 0-3 with no validity left (a missed turn), deterministically. After S gave up and the
// stranger's key is gone, a client F that reaches only nodes 2-4 needs node 4.
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, Redlock, type Clock, type RedlockNode } from "../../../src/index.ts";
import { CLAIM_MS } from "../../../src/lock/line.ts";
import { systemClock } from "../../../src/support/clock.ts";
import { loadScripts, settle, useCluster } from "../fixture.ts";

const env = useCluster();
const KEY = "missed-turn";
const LINE = `edge-redlock:line:${KEY}`;
const TTL = 200;

/** `loseLeaves`: S's LEAVEs to node 4 are lost on the way (never sent), so its old tickets stay in line there. */
async function scenario(loseLeaves = false) {
  await loadScripts(env);
  await env.tcp[4].set(KEY, "stranger", "PX", 60_000);
  let extra = 0;
  const jumped = new Set<string>();
  const jumping: Clock = { ...systemClock, now: () => systemClock.now() + extra };
  const slowNodes = env.nodes.map(
    (node, i): RedlockNode => ({
      label: node.label,
      run: async (script, keys, args, signal) => {
        if (loseLeaves && i === 4 && script.name === "leave") return 0;
        const reply = await node.run(script, keys, args, signal);
        // The round took its whole ttl, as S sees it: once per round, at its first reply (before any decision).
        if (script.name === "fair-acquire" && !jumped.has(args[0])) {
          jumped.add(args[0]);
          extra += TTL;
        }
        return reply;
      },
    }),
  );
  const slow = new Redlock(slowNodes, { clock: jumping, nodeTimeout: 150 });
  const outcome = await slow.acquire(KEY, TTL, { maxWait: 1_500 }).then(
    () => "held",
    (error: unknown) =>
      error instanceof LockAcquisitionError ? `gave up after ${error.attempts.length} attempts` : String(error),
  );
  expect(outcome).toMatch(/^gave up/);
  await settle(env); // the give-up's LEAVE has run everywhere
  const leftOnNode4 = await env.tcp[4].zcard(LINE);
  await env.tcp[4].del(KEY);
  const gaveUp = Date.now();
  // F: nodes 0 and 1 unreachable, so it needs node 4.
  const fastNodes = env.nodes.map(
    (node, i): RedlockNode =>
      i < 2 ? { label: node.label, run: () => Promise.reject(new TypeError("fetch failed")) } : node,
  );
  const fast = new Redlock(fastNodes, { nodeTimeout: 150 });
  const lock = await fast.acquire(KEY, 5_000, { maxWait: 8_000 });
  const waited = Date.now() - gaveUp;
  await lock.release();
  await settle(env);
  return { outcome, leftOnNode4, waited };
}

describe("the old ticket of a waiter that missed its turn (real Redis)", () => {
  // Node 4 refused S's last attempt, which enqueued its old ticket there; the missed turn's LEAVE goes to the refusing
  // nodes too, so F, which needs node 4, does not wait behind a waiter that is gone.
  it("after the waiter gave up, nothing of it is left in line and a client needing the refusing node is served at once", async () => {
    const { leftOnNode4, waited } = await scenario();
    expect(leftOnNode4).toBe(0);
    expect(waited).toBeLessThan(150);
  });

  it("old tickets whose LEAVE was lost keep a client out for at most a claim window each", async () => {
    const { leftOnNode4, waited } = await scenario(true);
    // Every missed turn renewed S's ticket, and each refusal on node 4 had put the ticket of the time there.
    expect(leftOnNode4).toBeGreaterThan(0);
    // Each old ticket at the head: its claim window once F was refused by the line alone, and F's next round (its
    // nodeTimeout, 150 ms; 250 allowed, as an overloaded machine answers late).
    expect(waited).toBeLessThan(leftOnNode4 * (CLAIM_MS + 250) + 500);
  });
});
