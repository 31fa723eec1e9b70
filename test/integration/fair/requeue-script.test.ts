// REQUEUE (a fair waiter's undo of a failed attempt) through the REST bridge on real Redis (which enforces Upstash's
// key-locking rules), against a MemoryNode running the same requests: the shape the library sends returns 1 and puts
// the ticket back for one lease; shapes it never sends fail alike on both and leave the same keys behind (the Lua
// releases a resource before it fails at that resource's queue). On the read-write lock's keys it deletes only its own
// writer value and puts back a member the read-write scripts count as a writer ahead, for one lease.
import { describe, expect, it } from "vitest";
import { ACQUIRE, REQUEUE, RW_READ_ACQUIRE } from "../../../src/scripts/index.ts";
import { MemoryNode } from "../../../src/testing/memory-node.ts";
import { loadScripts, useCluster } from "../fixture.ts";

const env = useCluster(1);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const signal = () => AbortSignal.timeout(2_000);
const ticket = (offset: number) => `${String(Date.now() + offset).padStart(16, "0")}00000000000000aa`;

type Reply = { ok: unknown } | { error: string };
const outcomeOf = (reply: Promise<unknown>): Promise<Reply> =>
  reply.then(
    (ok) => ({ ok }),
    (error: unknown) => ({ error: String(error).slice(0, 160) }),
  );

describe("REQUEUE shapes: real Redis through the bridge and the memory node agree", () => {
  const shapes: [string, (mine: string) => string[], "ok" | "error"][] = [
    ["value, ticket, lease (what the library sends)", (mine) => ["v-mine", mine, "300"], "ok"],
    ["no lease", (mine) => ["v-mine", mine], "error"],
    ["a blank lease", (mine) => ["v-mine", mine, " "], "error"],
    ["a lease that is no number", (mine) => ["v-mine", mine, "abc"], "error"],
    ["no ticket", () => ["v-mine"], "error"],
  ];
  for (const [name, argsOf, expected] of shapes) {
    it(`${name}: ${expected === "ok" ? "1" : "an error"}; the same locks and queues are left on both`, async () => {
      await loadScripts(env);
      const tag = `${Date.now()}:${Math.random().toString(36).slice(2)}`;
      const [a, b] = [`rq:${tag}:a`, `rq:${tag}:b`];
      const [qa, qb] = [`edge-redlock:queue:${a}`, `edge-redlock:queue:${b}`];
      const memory = new MemoryNode("m");
      const real = env.nodes[0];
      const other = ticket(-5);
      const mine = ticket(0);
      for (const node of [real, memory]) {
        // Both resources held by this attempt's value; the queue of `a` already has another waiter, that of `b` none.
        expect(await node.run(ACQUIRE, [a, b], ["v-mine", "5000"], signal())).toEqual([1]);
        expect(await node.run(REQUEUE, [`rq:${tag}:x`, qa], ["v-x", other, "5000"], signal())).toBe(0);
      }
      const args = argsOf(mine);
      const r = await outcomeOf(real.run(REQUEUE, [a, b, qa, qb], args, signal()));
      const m = await outcomeOf(memory.run(REQUEUE, [a, b, qa, qb], args, signal()));
      if (expected === "ok") {
        expect(r).toEqual({ ok: 2 });
        expect(m).toEqual(r);
      } else {
        expect("error" in r).toBe(true);
        expect("error" in m).toBe(true);
      }
      const tcp = env.tcp[0];
      const realState = {
        a: await tcp.get(a),
        b: await tcp.get(b),
        qa: (await tcp.zrange(qa, 0, -1)).sort(),
        qb: (await tcp.zrange(qb, 0, -1)).sort(),
      };
      const memState = {
        a: memory.get(a) ?? null,
        b: memory.get(b) ?? null,
        qa: [...(memory.queue(qa)?.keys() ?? [])].sort(),
        qb: [...(memory.queue(qb)?.keys() ?? [])].sort(),
      };
      expect(memState).toEqual(realState);
      // The first resource is released in every shape (before the script reaches its queue).
      expect(realState.a).toBeNull();
      if (expected === "ok") {
        expect(realState).toEqual({ a: null, b: null, qa: [other, mine].sort(), qb: [mine] });
        // The put-back ticket's deadline is one lease on the queue's clock, on both.
        const clock = 3_600_000 - (await tcp.pttl(qb));
        const deadline = Number(await tcp.zscore(qb, mine));
        expect(deadline - clock).toBeGreaterThan(200);
        expect(deadline - clock).toBeLessThanOrEqual(300);
        expect(memory.queue(qb)?.get(mine)).toBeLessThanOrEqual(300);
      } else {
        // It failed at the first queue: the second resource is still held, and no ticket of this waiter was added.
        expect(realState.b).toBe("v-mine");
        expect(realState.qa).toEqual([other]);
      }
    });
  }
});

describe("REQUEUE on the read-write lock's keys (real Redis)", () => {
  it("on a writer key held by another writer it deletes nothing; its 'w' member stops readers for one lease", async () => {
    await loadScripts(env);
    const writer = "edge-redlock:rw:writer:requeue-doc";
    const readers = "edge-redlock:rw:readers:requeue-doc";
    const queue = "edge-redlock:rw:queue:requeue-doc";
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
    const refused = await node.run(
      RW_READ_ACQUIRE,
      [writer, readers, queue],
      ["r-value", "5000", later, "300", "0"],
      signal(),
    );
    expect(refused).toEqual([0, -2, 1]);
    // The entry was never refreshed: after its 300 ms lease the reader is admitted.
    await sleep(350);
    expect(
      await node.run(RW_READ_ACQUIRE, [writer, readers, queue], ["r-value", "5000", later, "300", "0"], signal()),
    ).toEqual([1]);
  });
});
