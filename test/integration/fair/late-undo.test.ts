// A fair reader's failed attempt is undone with RW_READ_RELEASE given an entry life, on five real redis-server nodes
// behind the REST bridge. Here that undo (to nodes 0 and 1) is cut at nodeTimeout and still delivered 300 ms later (a
// slow link), so it lands after the same reader won a later attempt: it removes nothing of the holder (its entry stays
// live on every node), and the holder's release clears the member it put back in line.
import { describe, expect, it } from "vitest";
import { Redlock, type RedlockNode } from "../../../src/index.ts";
import { READERS_CLOCK_MEMBER } from "../../../src/scripts/index.ts";
import { loadScripts, settle, useCluster } from "../fixture.ts";

const env = useCluster();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const WRITER = "edge-redlock:rw:writer:late-undo";
const READERS = "edge-redlock:rw:readers:late-undo";
const LINE = "edge-redlock:rw:line:late-undo";

/** The fixture's nodes; a reader's undo (read release with a life) to nodes 0 and 1 is held `ms` and then sent
 * whatever the caller's signal says (the caller sees its timeout, the network delivers anyway). */
function lateUndo(
  nodes: RedlockNode[],
  ms: number,
  landed: { at: number; node: number }[],
  inFlight: Promise<unknown>[],
) {
  return nodes.map(
    (node, i): RedlockNode => ({
      label: node.label,
      run: (script, keys, args, signal) => {
        if (!(script.name === "rw-read-release" && args.length === 3 && i < 2))
          return node.run(script, keys, args, signal);
        const delivered = sleep(ms)
          .then(() => node.run(script, keys, args, AbortSignal.timeout(2_000)))
          .then((reply) => {
            landed.push({ at: Date.now(), node: i });
            return reply;
          });
        inFlight.push(delivered.catch(() => undefined));
        return new Promise((resolve, reject) => {
          delivered.then(resolve, reject);
          signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
        });
      },
    }),
  );
}

describe("a fair reader's undo that lands late (real Redis)", () => {
  it("an undo landing after the reader won removes nothing of the holder; the holder's release clears its put-back member", async () => {
    await loadScripts(env);
    await Promise.all([2, 3, 4].map((i) => env.tcp[i].set(WRITER, "someone-else", "PX", 400)));
    const landed: { at: number; node: number }[] = [];
    const inFlight: Promise<unknown>[] = [];
    // nodeTimeout 250 (below the 300 ms delay, so the undo is cut and still delivered): 100 cut healthy requests on a
    // loaded machine.
    const redlock = new Redlock(lateUndo(env.nodes, 300, landed, inFlight), { nodeTimeout: 250 });
    const doc = redlock.readWriteLock("late-undo");
    const read = await doc.acquireRead(10_000, { maxWait: 4_000 });
    const wonAt = Date.now();
    expect(read.attempts).toBeGreaterThan(1);
    await Promise.all(inFlight);
    await settle(env);
    expect(
      landed.some((l) => l.at > wonAt),
      "an undo landed after the winning attempt",
    ).toBe(true);
    // The holder's entry is live on every node: the late undos carried earlier attempts' values.
    const scores = await Promise.all(env.tcp.map((c) => c.zscore(READERS, read.value)));
    expect(scores.every((s) => s !== null)).toBe(true);
    const members = await Promise.all(
      env.tcp.map(async (c) => (await c.zrange(READERS, 0, -1)).filter((m) => m !== READERS_CLOCK_MEMBER)),
    );
    expect(members).toEqual(Array(5).fill([read.value]));
    expect(read.validityMs).toBeGreaterThan(0);
    // Observation: the late undo put the holder's own member back in line beside its reader entry where it landed.
    const waiting = await Promise.all(env.tcp.map((c) => c.zcard(LINE)));
    console.log("line sizes with the reader holding, after the late undos landed:", waiting);
    await read.release();
    await settle(env);
    expect(await Promise.all(env.tcp.map((c) => c.zcard(LINE)))).toEqual([0, 0, 0, 0, 0]);
    expect(await Promise.all(env.tcp.map((c) => c.exists(READERS)))).toEqual([0, 0, 0, 0, 0]);
  });
});
