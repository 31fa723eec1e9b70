// A waiter that missed its turn, on five real redis-server nodes behind the REST bridge: its LEAVE takes its old ticket
// out on every node, also where its attempt was refused (node 4: a stranger's key, where the refused request had
// enqueued the old ticket; the give-up's LEAVE names the new one). After it gave up nothing of it is left in line, and
// a client that needs the refusing node is served at once; an old ticket could keep a client out for at most one lease
// (2 × the slowest round: here ~400 ms).
// The slow waiter S runs on a clock that jumps by its ttl at the first reply of each of its acquire rounds: each of
// its rounds wins nodes 0-3 with no validity left (a missed turn), deterministically. After S gave up and the
// stranger's key is gone, a client F that reaches only nodes 2-4 needs node 4.
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, Redlock, type Clock, type RedlockNode } from "../../../src/index.ts";
import { systemClock } from "../../../src/support/clock.ts";
import { loadScripts, settle, useCluster } from "../fixture.ts";

const env = useCluster();
const KEY = "missed-turn";
const QUEUE = `edge-redlock:queue:${KEY}`;
const TTL = 200;

async function scenario() {
  await loadScripts(env);
  await env.tcp[4].set(KEY, "stranger", "PX", 60_000);
  let extra = 0;
  const jumped = new Set<string>();
  const jumping: Clock = { ...systemClock, now: () => systemClock.now() + extra };
  const slowNodes = env.nodes.map(
    (node): RedlockNode => ({
      label: node.label,
      run: async (script, keys, args, signal) => {
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
  const leftOnNode4 = await env.tcp[4].zcard(QUEUE);
  await env.tcp[4].del(KEY);
  const gaveUp = Date.now();
  // F: nodes 0 and 1 unreachable, so it needs node 4.
  const fastNodes = env.nodes.map(
    (node, i): RedlockNode =>
      i < 2 ? { label: node.label, run: () => Promise.reject(new TypeError("fetch failed")) } : node,
  );
  const fast = new Redlock(fastNodes, { nodeTimeout: 150 });
  const lock = await fast.acquire(KEY, 5_000, { maxWait: 3_000 });
  const waited = Date.now() - gaveUp;
  await lock.release();
  await settle(env);
  return { outcome, leftOnNode4, waited };
}

describe("the old ticket of a waiter that missed its turn (real Redis)", () => {
  // Node 4 refused S's last attempt, which enqueued its old ticket there; the missed turn's LEAVE goes to the refusing
  // nodes too, so F, which needs node 4, does not wait a lease (~400 ms) behind a waiter that is gone.
  it("after the waiter gave up, nothing of it is left in line and a client needing the refusing node is served at once", async () => {
    const { leftOnNode4, waited } = await scenario();
    expect(leftOnNode4).toBe(0);
    expect(waited).toBeLessThan(150);
  });

  it("the old ticket keeps a client out for at most one lease (2 × S's slowest round, ~400 ms)", async () => {
    const { waited } = await scenario();
    expect(waited).toBeLessThan(2 * (TTL + 150) + 250);
  });
});
