// Review 25 (2e5f5fe): a fair reader's failed attempt is undone with RW_READ_RELEASE given a lease (the reader value
// taken out, its "r" member put back in line). What lands late: an undo cut at nodeTimeout that the network still
// delivers lands after the reader's next attempt won, after its release, or after its LEAVE.
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, Redlock } from "../../src/index.ts";
import { simCluster } from "../sim/sim-node.ts";
import { VirtualClock } from "../sim/virtual-clock.ts";

const QUEUE = "edge-redlock:rw:queue:doc";
const WRITER = "edge-redlock:rw:writer:doc";
const READERS = "edge-redlock:rw:readers:doc";
const isUndo = (r: { script: string; keys: string[] }) => r.script === "rw-read-release" && r.keys.length === 2;

/**
 * Someone else's writer key on nodes 2-4 (until `blockedMs`); free on 0 and 1. Reader R is granted on 0 and 1 and
 * refused on 2-4 until the key lapses; its undos (read release with a lease: 2 keys, 3 args) to nodes 0 and 1 take
 * `undoMs` (over nodeTimeout 100: cut, delivered anyway).
 */
function setup(blockedMs: number, undoMs: number) {
  const clock = new VirtualClock();
  const nodes = simCluster(clock);
  for (const [i, node] of nodes.entries()) {
    node.deliverLate = true;
    node.latency = (request) => (request.script === "rw-read-release" && i < 2 && request.keys.length === 2 ? undoMs : 1);
  }
  for (const node of nodes.slice(2)) node.set(WRITER, "someone-else", blockedMs);
  const redlock = new Redlock(nodes, { clock, nodeTimeout: 100 });
  return { clock, nodes, redlock, doc: redlock.readWriteLock("doc") };
}

describe("review25: late reader undos (simulator)", () => {
  it("an undo landing after the same reader won a later attempt leaves the holder's reader entry on every node", async () => {
    const { clock, nodes, doc } = setup(250, 400);
    const read = await clock.run(doc.acquireRead(5_000, { maxWait: 3_000 }));
    expect(read.attempts).toBeGreaterThan(1);
    const won = clock.now();
    await clock.drain();
    // Some undo really landed after the holder was granted (on node 0 or 1).
    const late = nodes.slice(0, 2).flatMap((n) => n.requests.filter((r) => isUndo(r) && (r.ranAt ?? 0) > won));
    expect(late.length, "an undo lands after the winning attempt").toBeGreaterThan(0);
    // Fresh value per attempt: the holder's entry is untouched everywhere.
    for (const n of nodes) expect([...n.readers(READERS).keys()]).toEqual([read.value]);
    await clock.run(read.release());
    await clock.drain();
    expect(nodes.map((n) => n.readers(READERS).size)).toEqual([0, 0, 0, 0, 0]);
  });

  it("an undo landing after the holder released puts its member back: a later writer waits at most one lease after the last landing", async () => {
    const clock = new VirtualClock();
    const nodes = simCluster(clock);
    let readerPhase = true;
    for (const [i, node] of nodes.entries()) {
      node.deliverLate = true;
      node.latency = (r) => {
        if (readerPhase && r.script === "rw-read-release" && r.keys.length === 2 && i < 3) return 400;
        if (readerPhase && r.script === "rw-read-acquire" && i === 2) return 150; // node 2: cut, delivered, granted
        return 1;
      };
    }
    for (const node of nodes.slice(3)) node.set(WRITER, "someone-else", 250);
    const redlock = new Redlock(nodes, { clock, nodeTimeout: 100 });
    const doc = redlock.readWriteLock("doc");
    const reading = doc.acquireRead(5_000, { maxWait: 3_000 });
    await clock.advance(5);
    let writerAt = -1;
    const writing = doc.acquireWrite(1_000, { maxWait: 5_000 }).then((l) => ((writerAt = clock.now()), l));
    const read = await clock.run(reading);
    readerPhase = false;
    await clock.run(read.release());
    const releasedAt = clock.now();
    const write = await clock.run(writing);
    await clock.drain();
    const landings = nodes.flatMap((n) => n.requests.filter((r) => isUndo(r) && r.ranAt !== undefined).map((r) => r.ranAt!));
    const lastLanding = Math.max(...landings);
    expect(lastLanding, "undos land after the release").toBeGreaterThan(releasedAt);
    // Held back by the reader's put-back member on nodes 0-2, but no longer than one lease (300 ms) after it landed.
    expect(writerAt - releasedAt).toBeGreaterThan(100);
    // (the writer's own next ask comes at most a wait cap, 200 ms, after the member lapsed)
    expect(writerAt).toBeLessThanOrEqual(lastLanding + 300 + 200);
    await clock.run(write.release());
  });

  it("a reader that gave up: its late undo lands after LEAVE; its member stops a writer for one lease, never a reader", async () => {
    const clock = new VirtualClock();
    const nodes = simCluster(clock);
    let phase = true;
    for (const [i, node] of nodes.entries()) {
      node.deliverLate = true;
      node.latency = (r) => (phase && r.script === "rw-read-release" && r.keys.length === 2 && i < 2 ? 150 : 1);
    }
    for (const node of nodes.slice(2)) node.set(WRITER, "someone-else", 10_000);
    const redlock = new Redlock(nodes, { clock, nodeTimeout: 100 });
    const doc = redlock.readWriteLock("doc");
    const error = await clock.run(doc.acquireRead(1_000, { maxWait: 250 }).catch((e: unknown) => e));
    expect(error).toBeInstanceOf(LockAcquisitionError);
    await clock.drain();
    phase = false;
    for (const node of nodes.slice(0, 2)) {
      const leave = node.requests.filter((r) => r.script === "leave").at(-1);
      const undo = node.requests.filter(isUndo).at(-1);
      expect(undo?.ranAt).toBeGreaterThan(leave?.ranAt ?? Number.POSITIVE_INFINITY);
    }
    const waiting = nodes.map((n) => n.liveWaiters(QUEUE));
    expect(waiting.map((w) => w.length)).toEqual([1, 1, 0, 0, 0]);
    expect(waiting[0][0].endsWith("r")).toBe(true);
    // Nodes 2-4 free again, node 4 down: a writer needs 0 and 1, where the stray reader member is ahead of it.
    for (const node of nodes.slice(2)) node.delete(WRITER);
    nodes[4].mode = "down";
    // A reader is not held back by a reader member.
    const started = clock.now();
    const other = await clock.run(doc.acquireRead(1_000, { maxWait: 2_000 }));
    expect(clock.now() - started).toBeLessThan(10);
    await clock.run(other.release());
    const writeStarted = clock.now();
    const write = await clock.run(doc.acquireWrite(1_000, { maxWait: 2_000 }));
    const waited = clock.now() - writeStarted;
    expect(waited).toBeGreaterThan(100);
    expect(waited).toBeLessThan(330);
    await clock.run(write.release());
  });

  it("a held read lock's release and its follow-up releases never carry a lease", async () => {
    const clock = new VirtualClock();
    const nodes = simCluster(clock);
    const sent: { args: number; keys: number; afterHold: boolean }[] = [];
    let holding = false;
    const own = nodes.map((sim) => ({
      label: sim.label,
      run: (script: Parameters<typeof sim.run>[0], keys: string[], args: string[], signal: AbortSignal) => {
        if (script.name === "rw-read-release") sent.push({ args: args.length, keys: keys.length, afterHold: holding });
        return sim.run(script, keys, args, signal);
      },
    }));
    for (const [i, node] of nodes.entries()) {
      node.deliverLate = true;
      // Node 4's acquires are slow (stragglers at release time); the undos to 0 and 1 are cut and delivered late.
      node.latency = (r) => (r.script === "rw-read-acquire" && i === 4 ? 80 : r.script === "rw-read-release" && i < 2 && !holding ? 150 : 1);
    }
    for (const node of nodes.slice(2)) node.set(WRITER, "someone-else", 250);
    const redlock = new Redlock(own, { clock, nodeTimeout: 100 });
    const read = await clock.run(redlock.readWriteLock("doc").acquireRead(5_000, { maxWait: 3_000 }));
    holding = true;
    expect(sent.some((s) => s.args === 3)).toBe(true);
    const result = await clock.run(read.release());
    await clock.run(result.pending);
    await clock.drain();
    const after = sent.filter((s) => s.afterHold);
    expect(after.length).toBeGreaterThan(0);
    expect(after.every((s) => s.args === 2 && s.keys === 2)).toBe(true);
    expect(nodes.map((n) => n.readers(READERS).size)).toEqual([0, 0, 0, 0, 0]);
    await clock.advance(300);
    expect(nodes.map((n) => n.liveWaiters(QUEUE).length)).toEqual([0, 0, 0, 0, 0]);
  });
});
