// Review 24 (da73077) on five real redis-server nodes behind the REST bridge.
// 1. A fair semaphore waiter that wins a later try of the same attempt is put back in the semaphore's line by the
//    earlier try's REQUEUE when that lands after the winning try (here: the undo request is held 40 ms on its way,
//    client side, as a slow link would). Before da73077 the undo was RELEASE.
// 2. REQUEUE on the read-write lock's keys (the Lua, on real Redis): deletes only its own writer value, and puts back
//    a member in the format the rw scripts read (WRITERS_AHEAD counts it), for one lease only.
import { describe, expect, it, vi } from "vitest";
import { Redlock, type RedlockNode } from "../../src/index.ts";
import { REQUEUE, RW_READ_ACQUIRE } from "../../src/scripts/index.ts";
import { loadScripts, settle, useCluster } from "./fixture.ts";

vi.mock("../../src/support/random.ts", async (importOriginal) => {
  const original = await importOriginal<typeof import("../../src/support/random.ts")>();
  return { ...original, randomUnit: () => 0 };
});

const env = useCluster();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The fixture's nodes, with every undo request (REQUEUE; RELEASE before da73077) held `ms` before it is sent. */
function slowRequeue(nodes: RedlockNode[], ms: number): RedlockNode[] {
  return nodes.map((node) => ({
    label: node.label,
    run: async (script, keys, args, signal) => {
      if (script.name === "requeue" || script.name === "release") await sleep(ms);
      return node.run(script, keys, args, signal);
    },
  }));
}

describe("review24 (real Redis)", () => {
  it("review 24 (failed on da73077): a semaphore holder whose earlier try's REQUEUE landed late is left waiting in line", async () => {
    await loadScripts(env);
    const queue = "edge-redlock:semaphore-queue:r24";
    // Limit 2: slot 0 held by someone else on nodes 2-4, free on 0 and 1; slot 1 free everywhere.
    await Promise.all([2, 3, 4].map((i) => env.tcp[i].set("edge-redlock:semaphore:r24:0", "someone-else", "PX", 2_000)));
    const redlock = new Redlock(slowRequeue(env.nodes, 40), { nodeTimeout: 200 });
    const permit = await redlock.semaphore("r24", 2).acquire(5_000, { maxWait: 3_000 });
    await settle(env);
    expect(permit.slot).toBe(1); // the first try (slot 0) failed, the second won
    const undo = (name: string) => name === "requeue" || name === "release";
    expect(env.sent.map((s) => s.filter(undo).length)).toEqual([1, 1, 0, 0, 0]);
    // Safety held: the permit's slot holds its value on every node; the failed try's slot 0 is gone on 0 and 1.
    const slot1 = await Promise.all(env.tcp.map((c) => c.get("edge-redlock:semaphore:r24:1")));
    expect(slot1).toEqual(Array(5).fill(permit.value));
    const slot0 = await Promise.all(env.tcp.map((c) => c.get("edge-redlock:semaphore:r24:0")));
    expect(slot0).toEqual([null, null, "someone-else", "someone-else", "someone-else"]);
    // Observed on da73077: [1, 1, 0, 0, 0] — the holder's own ticket, put back by the first try's REQUEUE.
    const waiting = await Promise.all(env.tcp.map((c) => c.zcard(queue)));
    await permit.release();
    expect(waiting).toEqual([0, 0, 0, 0, 0]);
  });

  it("holds: REQUEUE on a writer key of another writer deletes nothing; its 'w' member stops readers for one lease", async () => {
    await loadScripts(env);
    const writer = "edge-redlock:rw:writer:r24doc";
    const readers = "edge-redlock:rw:readers:r24doc";
    const queue = "edge-redlock:rw:queue:r24doc";
    await env.tcp[0].set(writer, "another-writer", "PX", 5_000);
    const node = env.nodes[0];
    const signal = () => AbortSignal.timeout(2_000);
    const now = Date.now();
    const mine = `${String(now).padStart(16, "0")}aaaaaaaaaaaaaaaaw`;
    const later = `${String(now + 1).padStart(16, "0")}00000000000000r`;
    expect(await node.run(REQUEUE, [writer, queue], ["my-failed-value", mine, "300"], signal())).toBe(0);
    expect(await env.tcp[0].get(writer)).toBe("another-writer");
    expect(await env.tcp[0].zrange(queue, 0, -1)).toEqual([mine]);
    await env.tcp[0].del(writer);
    // A reader with a later ticket: the requeued writer is a writer ahead (WRITERS_AHEAD reads the "w").
    const refused = await node.run(RW_READ_ACQUIRE, [writer, readers, queue], ["r-value", "5000", later, "300", "0"], signal());
    expect(refused).toEqual([0, -2, 1]);
    // The entry was never refreshed: after its 300 ms lease the reader is admitted.
    await sleep(350);
    expect(await node.run(RW_READ_ACQUIRE, [writer, readers, queue], ["r-value", "5000", later, "300", "0"], signal())).toEqual([1]);
  });
});
