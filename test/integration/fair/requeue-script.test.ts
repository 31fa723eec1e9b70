// REQUEUE (a waiter's undo of a failed attempt) through the REST bridge on real Redis (which enforces Upstash's
// key-locking rules), against a MemoryNode running the same requests: the shape the library sends (value, ticket,
// life) returns 1 per resource and puts the ticket back with a deadline `life` ms past the node's TIME, the line key
// living 5 s past that deadline (rounded up to a second); shapes it never sends fail alike on both and leave the same keys behind (the Lua
// releases a resource before it fails at that resource's line). On the read-write lock's keys it deletes only its own
// writer value and puts back a member the read-write scripts count as a writer ahead, until the resource is free and
// someone asks: then for its claim window only.
import { describe, expect, it } from "vitest";
import { ACQUIRE, FAIR_ACQUIRE, REQUEUE, RW_READ_ACQUIRE } from "../../../src/scripts/index.ts";
import { LINE_KEEP_STEP_MS, LINE_LINGER_MS } from "../../../src/scripts/queue.ts";
import { MemoryNode } from "../../../src/memory/memory-node.ts";
import { loadScripts, useCluster } from "../fixture.ts";

const env = useCluster(1);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const signal = () => AbortSignal.timeout(2_000);
/** A ticket in the line's form: 16 digits of epoch ms, 16 hex digits, a 200 ms claim window (and a kind). */
const ticket = (offset: number, kind = "") =>
  `${String(Date.now() + offset).padStart(16, "0")}${"0".repeat(14)}aa00200${kind}`;
/** One line on the real node, read atomically: its TIME (ms), its members with their deadlines, its key's PTTL. */
const READ_LINE = `local t = redis.call("TIME")
return {tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), redis.call("ZRANGE", KEYS[1], 0, -1, "WITHSCORES"), redis.call("PTTL", KEYS[1])}`;
const LIFE = 5_000;

type Reply = { ok: unknown } | { error: string };
const outcomeOf = (reply: Promise<unknown>): Promise<Reply> =>
  reply.then(
    (ok) => ({ ok }),
    (error: unknown) => ({ error: String(error).slice(0, 160) }),
  );

describe("REQUEUE shapes: real Redis through the bridge and the memory node agree", () => {
  const shapes: [string, (mine: string) => string[], "ok" | "error"][] = [
    ["value, ticket, life (what the library sends)", (mine) => ["v-mine", mine, String(LIFE)], "ok"],
    ["no life", (mine) => ["v-mine", mine], "error"],
    ["a blank life", (mine) => ["v-mine", mine, " "], "error"],
    ["a life that is no number", (mine) => ["v-mine", mine, "abc"], "error"],
    ["no ticket", () => ["v-mine"], "error"],
  ];
  for (const [name, argsOf, expected] of shapes) {
    it(`${name}: ${expected === "ok" ? "1" : "an error"}; the same locks and lines are left on both`, async () => {
      await loadScripts(env);
      const tag = `${Date.now()}:${Math.random().toString(36).slice(2)}`;
      const [a, b] = [`rq:${tag}:a`, `rq:${tag}:b`];
      const [qa, qb] = [`edge-redlock:line:${a}`, `edge-redlock:line:${b}`];
      const memory = new MemoryNode("m");
      const real = env.nodes[0];
      const other = ticket(-5);
      const mine = ticket(0);
      for (const node of [real, memory]) {
        // Both resources held by this attempt's value; the line of `a` already has another waiter (refused by the
        // holder, it joined for 5 s), that of `b` none.
        expect(await node.run(ACQUIRE, [a, b], ["v-mine", "5000"], signal())).toEqual([1]);
        const refused = await node.run(FAIR_ACQUIRE, [a, qa], ["v-x", "5000", "1", other, "5000", "1", "0"], signal());
        expect((refused as number[])[0]).toBe(0);
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
      // The first resource is released in every shape (before the script reaches its line).
      expect(realState.a).toBeNull();
      if (expected === "ok") {
        expect(realState).toEqual({ a: null, b: null, qa: [other, mine].sort(), qb: [mine] });
        // Behind another waiter (line of `a`), the put-back ticket's deadline is `life` ms past the node's TIME, and
        // the line key lives 5 s past it (rounded up to a second); first in line where the undo freed the resource (line of `b`), its deadline
        // is cut to its claim window (200 ms): the line is woken and it must claim, or the next one is served.
        for (const [q, first] of [
          [qa, other],
          [qb, mine],
        ]) {
          const [now, entries, pttl] = (await tcp.eval(READ_LINE, 1, q)) as [number, string[], number];
          const deadlines = new Map<string, number>();
          for (let i = 0; i < entries.length; i += 2) deadlines.set(entries[i], Number(entries[i + 1]) - now);
          const memNow = memory.time();
          const memDeadlines = new Map([...(memory.queue(q) ?? [])].map(([t, d]) => [t, d - memNow]));
          for (const [left, pttlNow] of [
            [deadlines, pttl],
            [memDeadlines, memory.queuePttl(q)],
          ] as const) {
            expect(left.get(first)).toBeLessThanOrEqual(200);
            if (q === qa) {
              expect(left.get(mine)).toBeGreaterThan(LIFE - 1_000);
              expect(left.get(mine)).toBeLessThanOrEqual(LIFE);
              expect(pttlNow - (left.get(mine) ?? 0) - LINE_LINGER_MS).toBeGreaterThanOrEqual(-5);
              expect(pttlNow - (left.get(mine) ?? 0) - LINE_LINGER_MS).toBeLessThanOrEqual(LINE_KEEP_STEP_MS + 5);
            }
          }
        }
      } else {
        // It failed at the first line: the second resource is still held, and no ticket of this waiter was added.
        expect(realState.b).toBe("v-mine");
        expect(realState.qa).toEqual([other]);
      }
    });
  }
});

describe("REQUEUE on the read-write lock's keys (real Redis)", () => {
  it("on a writer key held by another writer it deletes nothing; its 'w' member stops readers, and once the resource is free for its claim window only", async () => {
    await loadScripts(env);
    const writer = "edge-redlock:rw:writer:requeue-doc";
    const readers = "edge-redlock:rw:readers:requeue-doc";
    const line = "edge-redlock:rw:line:requeue-doc";
    await env.tcp[0].set(writer, "another-writer", "PX", 5_000);
    const node = env.nodes[0];
    const mine = ticket(0, "w");
    const later = ticket(1, "r");
    const read = () =>
      node.run(RW_READ_ACQUIRE, [writer, readers, line], ["r-value", "5000", later, "30000", "0", "0"], signal());
    expect(await node.run(REQUEUE, [writer, line], ["my-failed-value", mine, String(LIFE)], signal())).toBe(0);
    expect(await env.tcp[0].get(writer)).toBe("another-writer");
    expect(await env.tcp[0].zrange(line, 0, -1)).toEqual([mine]);
    // While the writer key is held, a reader with a later ticket is refused behind the held key and the writer ahead.
    const held = (await read()) as number[];
    expect([held[0], held[1] > 0, held[2]]).toEqual([0, true, 1]);
    // A refusal behind a holder does not shorten the writer's entry: it still has about its whole life.
    const [before, waiting] = (await env.tcp[0].eval(READ_LINE, 1, line)) as [number, string[], number];
    expect(Number(waiting[1]) - before).toBeGreaterThan(LIFE - 1_000);
    await env.tcp[0].del(writer);
    // Free now: the requeued writer is a writer ahead (the "w"), so the reader is refused by the line alone, and that
    // refusal cuts the head's entry down to its claim window (200 ms), never more.
    expect(await read()).toEqual([0, -2, 1]);
    const [now, entries] = (await env.tcp[0].eval(READ_LINE, 1, line)) as [number, string[], number];
    expect(entries[0]).toBe(mine);
    expect(Number(entries[1]) - now).toBeLessThanOrEqual(200);
    // The entry was never refreshed: once its claim window is over the reader is admitted.
    await sleep(250);
    expect(await read()).toEqual([1]);
  });
});
