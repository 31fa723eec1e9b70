// RW_READ_RELEASE with and without the lease, through the REST bridge (which enforces Upstash's key-locking rules on
// real Redis), against a MemoryNode running the same requests: every shape gives the same reply and state on both,
// takes out only its own reader and touches no undeclared key; with the lease the put-back member stops a later
// writer for one lease, then lapses.
import { describe, expect, it } from "vitest";
import type { RedlockNode } from "../../../src/index.ts";
import {
  READERS_CLOCK_MEMBER,
  RW_READ_ACQUIRE,
  RW_READ_RELEASE,
  RW_WRITE_ACQUIRE,
  type Script,
} from "../../../src/scripts/index.ts";
import { MemoryNode } from "../../../src/testing/memory-node.ts";
import { loadScripts, useCluster } from "../fixture.ts";

const env = useCluster(1);
const WRITER = "edge-redlock:rw:writer:read-release";
const READERS = "edge-redlock:rw:readers:read-release";
const QUEUE = "edge-redlock:rw:queue:read-release";
const RW = [WRITER, READERS, QUEUE];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const signal = () => AbortSignal.timeout(2_000);
const ticket = (offset: number, kind: string) =>
  `${String(Date.now() + offset).padStart(16, "0")}0000000000000000${kind}`;

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
  const queue = (await env.tcp[0].zrange(QUEUE, 0, -1)).sort();
  return { readers, queue };
}
function memState(memory: MemoryNode) {
  return {
    readers: [...memory.readers(READERS).keys()].sort(),
    queue: [...(memory.queue(QUEUE)?.keys() ?? [])].sort(),
  };
}

describe("RW_READ_RELEASE argument shapes (real Redis through the bridge vs MemoryNode)", () => {
  const shapes: [string, (mine: string, member: string) => [string[], string[]]][] = [
    [
      "2 keys, 3 args (the reader's undo)",
      (v, m) => [
        [READERS, QUEUE],
        [v, m, "300"],
      ],
    ],
    [
      "2 keys, 2 args (a held reader's release)",
      (v, m) => [
        [READERS, QUEUE],
        [v, m],
      ],
    ],
    ["1 key, 1 arg (the undo of a reader that cannot reach a quorum)", (v) => [[READERS], [v]]],
    ["1 key, 3 args (queue not declared: the lease is ignored)", (v, m) => [[READERS], [v, m, "300"]]],
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
        const { r, m } = await both(node, memory, RW_READ_ACQUIRE, RW, [value, "5000", member, "300", "1"]);
        expect(r).toEqual({ ok: [1] });
        expect(m).toEqual(r);
      }
      // The other reader also waits in line on this node (as if refused elsewhere), so the queue exists.
      const probe = ticket(10, "w");
      await node.run(RW_WRITE_ACQUIRE, RW, ["w-probe", "5000", probe, "300", "1"], signal());
      await memory.run(RW_WRITE_ACQUIRE, RW, ["w-probe", "5000", probe, "300", "1"], signal());
      const [keys, args] = shape("reader-mine-000000", mine);
      const { r, m } = await both(node, memory, RW_READ_RELEASE, keys, args);
      expect(r).toEqual({ ok: 1 });
      expect(m).toEqual(r);
      const real = await realState();
      expect(real.readers).toEqual(["reader-other-00000"]);
      expect(memState(memory).readers).toEqual(real.readers);
      expect(memState(memory).queue).toEqual(real.queue);
      if (args.length === 3 && keys.length === 2) expect(real.queue).toContain(mine);
      else expect(real.queue).not.toContain(mine);
    });
  }

  it("the lease: the put-back member stops a later writer on real Redis for one lease, then lapses (memory node alike)", async () => {
    await loadScripts(env);
    const memory = new MemoryNode("m");
    const node = env.nodes[0];
    const mine = ticket(0, "r");
    const later = ticket(1, "w");
    for (const n of [node, memory]) {
      expect(await n.run(RW_READ_ACQUIRE, RW, ["reader-mine-000000", "5000", mine, "300", "1"], signal())).toEqual([1]);
      expect(await n.run(RW_READ_RELEASE, [READERS, QUEUE], ["reader-mine-000000", mine, "300"], signal())).toBe(1);
    }
    const deadline = Number(await env.tcp[0].zscore(QUEUE, mine));
    const clock = 3_600_000 - (await env.tcp[0].pttl(QUEUE));
    expect(deadline - clock).toBeGreaterThan(250);
    expect(deadline - clock).toBeLessThanOrEqual(300);
    for (const n of [node, memory]) {
      const refused = (await n.run(RW_WRITE_ACQUIRE, RW, ["w", "5000", later, "300", "0"], signal())) as unknown[];
      expect(refused[0]).toBe(0);
      expect(refused[2]).toBe(1);
    }
    await sleep(350);
    expect(await node.run(RW_WRITE_ACQUIRE, RW, ["w", "5000", later, "300", "0"], signal())).toEqual([1]);
  });

  // Shapes the library never sends (it always sends a member and a decimal lease): the Lua errors after taking the
  // reader out, and the memory node fails them the same way (not answering 1 and keeping the member for a lease of ""
  // or "abc").
  const odd: [string, string[], string[]][] = [
    ["2 keys, 1 arg (no member)", [READERS, QUEUE], ["reader-mine-000000"]],
    ["2 keys, lease ''", [READERS, QUEUE], ["reader-mine-000000", "M", ""]],
    ["2 keys, lease 'abc'", [READERS, QUEUE], ["reader-mine-000000", "M", "abc"]],
    ["2 keys, lease '0'", [READERS, QUEUE], ["reader-mine-000000", "M", "0"]],
  ];
  for (const [name, keys, args] of odd) {
    it(`odd shape, ${name}: memory node and real Redis agree`, async () => {
      await loadScripts(env);
      const memory = new MemoryNode("m");
      const node = env.nodes[0];
      const member = ticket(0, "r");
      const realArgs = args.map((a) => (a === "M" ? member : a));
      for (const n of [node, memory])
        await n.run(RW_READ_ACQUIRE, RW, ["reader-mine-000000", "5000", member, "300", "1"], signal());
      const { r, m } = await both(node, memory, RW_READ_RELEASE, keys, realArgs);
      expect("error" in r ? "error" : "ok").toBe("error" in m ? "error" : "ok");
      expect(memState(memory)).toEqual(await realState());
    });
  }
});
