// REQUEUE (a fair waiter's undo of a failed attempt) through the REST bridge on real Redis, against a MemoryNode
// running the same requests: the shape the library sends, and shapes it never sends, where both must fail alike
// and leave the same keys behind (the Lua releases a resource before it fails at that resource's queue).
import { describe, expect, it } from "vitest";
import { ACQUIRE, REQUEUE } from "../../src/scripts/index.ts";
import { MemoryNode } from "../../src/testing/memory-node.ts";
import { loadScripts, useCluster } from "./fixture.ts";

const env = useCluster(1);
const signal = () => AbortSignal.timeout(2_000);
const ticket = (offset: number) => `${String(Date.now() + offset).padStart(16, "0")}00000000000000aa`;

type Reply = { ok: unknown } | { error: string };
const settle = (reply: Promise<unknown>): Promise<Reply> =>
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
      const r = await settle(real.run(REQUEUE, [a, b, qa, qb], args, signal()));
      const m = await settle(memory.run(REQUEUE, [a, b, qa, qb], args, signal()));
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
