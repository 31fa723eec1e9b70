// A fair semaphore waiter that wins a later try of the same attempt, on five real redis-server nodes behind the REST
// bridge: the earlier try's undo (REQUEUE) lands after the winning try (the undo request is held 40 ms on its way,
// client side, as a slow link would), yet the holder is not put back in the semaphore's line; the permit's slot holds
// its value everywhere and the failed try's slot is gone where it was set.
import { describe, expect, it, vi } from "vitest";
import { Redlock, type RedlockNode } from "../../../src/index.ts";
import { loadScripts, settle, useCluster } from "../fixture.ts";

vi.mock("../../../src/support/random.ts", async (importOriginal) => {
  const original = await importOriginal<typeof import("../../../src/support/random.ts")>();
  return { ...original, randomUnit: () => 0 };
});

const env = useCluster();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The fixture's nodes, with every undo request (REQUEUE or RELEASE) held `ms` before it is sent. */
function slowRequeue(nodes: RedlockNode[], ms: number): RedlockNode[] {
  return nodes.map((node) => ({
    label: node.label,
    run: async (script, keys, args, signal) => {
      if (script.name === "requeue" || script.name === "release") await sleep(ms);
      return node.run(script, keys, args, signal);
    },
  }));
}

describe("a semaphore waiter that wins a later try of the same attempt (real Redis)", () => {
  it("is not left waiting in the semaphore's line when its earlier try's REQUEUE lands after the winning try", async () => {
    await loadScripts(env);
    const line = "edge-redlock:semaphore-line:later-try";
    // Limit 2: slot 0 held by someone else on nodes 2-4, free on 0 and 1; slot 1 free everywhere.
    await Promise.all(
      [2, 3, 4].map((i) => env.tcp[i].set("edge-redlock:semaphore:later-try:0", "someone-else", "PX", 2_000)),
    );
    const redlock = new Redlock(slowRequeue(env.nodes, 40), { nodeTimeout: 200 });
    const permit = await redlock.semaphore("later-try", 2).acquire(5_000, { maxWait: 3_000 });
    await settle(env);
    expect(permit.slot).toBe(1); // the first try (slot 0) failed, the second won
    const undo = (name: string) => name === "requeue" || name === "release";
    expect(env.sent.map((s) => s.filter(undo).length)).toEqual([1, 1, 0, 0, 0]);
    // Safety held: the permit's slot holds its value on every node; the failed try's slot 0 is gone on 0 and 1.
    const slot1 = await Promise.all(env.tcp.map((c) => c.get("edge-redlock:semaphore:later-try:1")));
    expect(slot1).toEqual(Array(5).fill(permit.value));
    const slot0 = await Promise.all(env.tcp.map((c) => c.get("edge-redlock:semaphore:later-try:0")));
    expect(slot0).toEqual([null, null, "someone-else", "someone-else", "someone-else"]);
    const waiting = await Promise.all(env.tcp.map((c) => c.zcard(line)));
    await permit.release();
    expect(waiting).toEqual([0, 0, 0, 0, 0]);
  });
});
