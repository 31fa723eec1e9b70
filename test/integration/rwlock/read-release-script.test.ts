// RW_READ_RELEASE with and without an entry life, through the REST bridge (which enforces Upstash's key-locking rules
// on real Redis), against a MemoryNode running the same requests: every shape gives the same reply and state on both,
// takes out only its own reader and touches no undeclared key; with a life the put-back member gets a deadline that
// many ms past the node's TIME and stops a later writer, and once the resource is free and that writer asks, for its
// claim window (200 ms) only.
import { describe, expect, it } from "vitest";
import type { RedlockNode } from "../../../src/index.ts";
import {
  READERS_CLOCK_MEMBER,
  RW_READ_ACQUIRE,
  RW_READ_RELEASE,
  RW_WRITE_ACQUIRE,
  type Script,
} from "../../../src/scripts/index.ts";
import { MemoryNode } from "../../../src/memory/memory-node.ts";
import { LINE_KEEP_STEP_MS, LINE_LINGER_MS } from "../../../src/scripts/queue.ts";
import { loadScripts, useCluster } from "../fixture.ts";

const env = useCluster(1);
const WRITER = "edge-redlock:rw:writer:read-release";
const READERS = "edge-redlock:rw:readers:read-release";
const LINE = "edge-redlock:rw:line:read-release";
const RW = [WRITER, READERS, LINE];
/** What the library sends a reader's release and undo: the reader set, the line, the writer key. */
const RELEASE_KEYS = [READERS, LINE, WRITER];
const LIFE = 5_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const signal = () => AbortSignal.timeout(2_000);
/** A line member: 16 digits of epoch ms, 16 hex digits, a 200 ms claim window, the kind. */
const ticket = (offset: number, kind: string) =>
  `${String(Date.now() + offset).padStart(16, "0")}${"0".repeat(16)}00200${kind}`;
/** The line on the real node, read atomically: its TIME (ms), its members with their deadlines, its key's PTTL. */
const READ_LINE = `local t = redis.call("TIME")
return {tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), redis.call("ZRANGE", KEYS[1], 0, -1, "WITHSCORES"), redis.call("PTTL", KEYS[1])}`;

async function both(real: RedlockNode, memory: MemoryNode, script: Script, keys: string[], args: string[]) {
  const r = await real.run(script, keys, args, signal()).then(
    (v) => ({ ok: v }),
    (e: unknown) => ({ error: String(e).slice(0, 160) }),
  );
  const m = await memory.run(script, keys, args, signal()).then(
    (v) => ({ ok: v }),
    (e: unknown) => ({ error: String(e).slice(0, 160) }),
  );
  return { r, m };
}

async function realState() {
  const readers = (await env.tcp[0].zrange(READERS, 0, -1)).filter((v) => v !== READERS_CLOCK_MEMBER).sort();
  const line = (await env.tcp[0].zrange(LINE, 0, -1)).sort();
  return { readers, line };
}
function memState(memory: MemoryNode) {
  return {
    readers: [...memory.readers(READERS).keys()].sort(),
    line: [...(memory.queue(LINE)?.keys() ?? [])].sort(),
  };
}

describe("RW_READ_RELEASE argument shapes (real Redis through the bridge vs MemoryNode)", () => {
  const shapes: [string, (mine: string, member: string) => [string[], string[]]][] = [
    ["3 keys, 3 args (a waiting reader's undo: back in line)", (v, m) => [RELEASE_KEYS, [v, m, String(LIFE)]]],
    ["3 keys, 2 args (a held reader's release; a waiter that gives up)", (v, m) => [RELEASE_KEYS, [v, m]]],
    [
      "2 keys, 3 args (no writer key: the line is not woken)",
      (v, m) => [
        [READERS, LINE],
        [v, m, String(LIFE)],
      ],
    ],
    [
      "2 keys, 2 args",
      (v, m) => [
        [READERS, LINE],
        [v, m],
      ],
    ],
    ["1 key, 1 arg (the undo of a reader that cannot reach a quorum)", (v) => [[READERS], [v]]],
    ["1 key, 3 args (line not declared: the life is ignored)", (v, m) => [[READERS], [v, m, String(LIFE)]]],
  ];
  for (const [name, shape] of shapes) {
    it(`${name}: same reply and state; only its own reader taken out; no undeclared key`, async () => {
      await loadScripts(env);
      const memory = new MemoryNode("m");
      const node = env.nodes[0];
      const mine = ticket(0, "r");
      const other = ticket(-5, "r");
      for (const [value, member] of [
        ["reader-mine-000000", mine],
        ["reader-other-00000", other],
      ]) {
        const { r, m } = await both(node, memory, RW_READ_ACQUIRE, RW, [value, "5000", member, String(LIFE), "1", "0"]);
        expect(r).toEqual({ ok: [1] });
        expect(m).toEqual(r);
      }
      // A writer waits in line on this node (the readers hold it), so the line exists.
      const probe = ticket(10, "w");
      await node.run(RW_WRITE_ACQUIRE, RW, ["w-probe", "5000", probe, String(LIFE), "1", "0"], signal());
      await memory.run(RW_WRITE_ACQUIRE, RW, ["w-probe", "5000", probe, String(LIFE), "1", "0"], signal());
      const [keys, args] = shape("reader-mine-000000", mine);
      const { r, m } = await both(node, memory, RW_READ_RELEASE, keys, args);
      expect(r).toEqual({ ok: 1 });
      expect(m).toEqual(r);
      const real = await realState();
      expect(real.readers).toEqual(["reader-other-00000"]);
      expect(memState(memory).readers).toEqual(real.readers);
      expect(memState(memory).line).toEqual(real.line);
      expect(real.line).toContain(probe);
      if (args.length === 3 && keys.length >= 2) expect(real.line).toContain(mine);
      else expect(real.line).not.toContain(mine);
    });
  }

  it("a life: the put-back member gets a deadline that many ms past TIME and stops a later writer; the writer's refusal (the resource is free) cuts it to its claim window, then the writer is admitted (memory node alike)", async () => {
    await loadScripts(env);
    const memory = new MemoryNode("m");
    const node = env.nodes[0];
    const mine = ticket(0, "r");
    const later = ticket(1, "w");
    for (const n of [node, memory]) {
      expect(
        await n.run(RW_READ_ACQUIRE, RW, ["reader-mine-000000", "5000", mine, String(LIFE), "1", "0"], signal()),
      ).toEqual([1]);
      expect(await n.run(RW_READ_RELEASE, [READERS, LINE], ["reader-mine-000000", mine, String(LIFE)], signal())).toBe(
        1,
      );
    }
    const [now, entries, pttl] = (await env.tcp[0].eval(READ_LINE, 1, LINE)) as [number, string[], number];
    expect(entries[0]).toBe(mine);
    const left = Number(entries[1]) - now;
    expect(left).toBeGreaterThan(LIFE - 1_000);
    expect(left).toBeLessThanOrEqual(LIFE);
    // The line key lives 5 s past its last deadline rounded up to a second.
    expect(pttl - left - LINE_LINGER_MS).toBeGreaterThanOrEqual(-5);
    expect(pttl - left - LINE_LINGER_MS).toBeLessThanOrEqual(LINE_KEEP_STEP_MS + 5);
    const memLeft = (memory.queue(LINE)?.get(mine) ?? 0) - memory.time();
    expect(memLeft).toBeGreaterThan(LIFE - 1_000);
    expect(memLeft).toBeLessThanOrEqual(LIFE);
    const write = (n: RedlockNode | MemoryNode) =>
      n.run(RW_WRITE_ACQUIRE, RW, ["w", "5000", later, String(LIFE), "0", "0"], signal());
    for (const n of [node, memory]) expect(await write(n)).toEqual([0, -2, 1]);
    const [cut, shrunk] = (await env.tcp[0].eval(READ_LINE, 1, LINE)) as [number, string[], number];
    expect(Number(shrunk[1]) - cut).toBeLessThanOrEqual(200);
    expect((memory.queue(LINE)?.get(mine) ?? 0) - memory.time()).toBeLessThanOrEqual(200);
    await sleep(250);
    for (const n of [node, memory]) expect(await write(n)).toEqual([1]);
  });

  // Shapes the library never sends (it always sends a member and a decimal life): the Lua errors after taking the
  // reader out, and the memory node fails them the same way (not answering 1 and keeping the member for a life of ""
  // or "abc").
  const odd: [string, string[], string[]][] = [
    ["2 keys, 1 arg (no member)", [READERS, LINE], ["reader-mine-000000"]],
    ["2 keys, life ''", [READERS, LINE], ["reader-mine-000000", "M", ""]],
    ["2 keys, life 'abc'", [READERS, LINE], ["reader-mine-000000", "M", "abc"]],
    ["2 keys, life '0'", [READERS, LINE], ["reader-mine-000000", "M", "0"]],
  ];
  for (const [name, keys, args] of odd) {
    it(`odd shape, ${name}: memory node and real Redis agree`, async () => {
      await loadScripts(env);
      const memory = new MemoryNode("m");
      const node = env.nodes[0];
      const member = ticket(0, "r");
      const realArgs = args.map((a) => (a === "M" ? member : a));
      for (const n of [node, memory])
        await n.run(RW_READ_ACQUIRE, RW, ["reader-mine-000000", "5000", member, String(LIFE), "1", "0"], signal());
      const { r, m } = await both(node, memory, RW_READ_RELEASE, keys, realArgs);
      expect("error" in r ? "error" : "ok").toBe("error" in m ? "error" : "ok");
      expect(memState(memory)).toEqual(await realState());
    });
  }
});
