// The undo of a fair waiter's failed attempt (REQUEUE; a reader's read release with an entry life) may be cut at
// nodeTimeout and still delivered: it then lands after the waiter won a later attempt, after its release, or after it
// gave up. Landing late it never deletes a holder's key or reader entry; the member it puts back is never refreshed: a
// holder's own ticket goes with its release's LEAVE, and where the resource is free the member, first in line, stops
// others for at most its claim window (200 ms) from its landing; a reader's member stops writers, never readers; a
// held read lock's releases never carry an entry life.
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, Redlock } from "../../../src/index.ts";
import { simCluster, type SimNode, type SimRequest } from "../../sim/sim-node.ts";
import { VirtualClock } from "../../sim/virtual-clock.ts";
import { LINE_OF_K, lineWaiters, simSetup } from "../../sim/sim-redlock.ts";

const _Q = LINE_OF_K;

const QUEUE = "edge-redlock:rw:line:doc";
const WRITER = "edge-redlock:rw:writer:doc";
const READERS = "edge-redlock:rw:readers:doc";

describe("a fair waiter's REQUEUE that lands after it became the holder", () => {
  it("a REQUEUE that lands after the waiter became the holder: its ticket waits there until the release's LEAVE", async () => {
    const { clock, nodes, redlock } = simSetup();
    for (const n of nodes.slice(1)) n.set("k", "someone-else", 30); // held on 1–4 for 30 ms; node 0 free
    // The undoing of the attempt node 0 granted is cut at nodeTimeout (the waiter retries once it is cut) and lands
    // later; the first fair-acquire to node 0 is slow.
    nodes[0].deliverLate = true;
    let first = true;
    nodes[0].latency = (request) => {
      if (request.script === "requeue") return 150;
      if (request.script !== "fair-acquire" || !first) return 1;
      first = false;
      return 5;
    };
    const lock = await clock.run(redlock.acquire(["k"], 1_000, { maxWait: 2_000 }));
    expect(lock.attempts).toBeGreaterThan(1);
    await clock.advance(100); // the late REQUEUE lands
    const requeue = nodes[0].requests.find((r) => r.script === "requeue");
    const won = nodes[1].requests.filter((r) => r.script === "fair-acquire").at(-1)!;
    expect(requeue?.cutAt, "the client cut it").toBeDefined();
    expect(requeue?.ranAt).toBeGreaterThan(won.ranAt ?? Infinity); // it ran after the grant that won
    expect(nodes[0].get("k")).toBeUndefined(); // it deleted the earlier attempt's key, never the holder's (elsewhere)
    expect(nodes.slice(1).every((n) => n.get("k") === lock.value)).toBe(true);
    expect(lineWaiters(nodes)[0]).toBe(1); // the holder's own ticket, back in line on node 0
    await clock.run(lock.release());
    await clock.drain();
    expect(lineWaiters(nodes)).toEqual([0, 0, 0, 0, 0]);
    expect(nodes.map((n) => n.get("k"))).toEqual(Array(5).fill(undefined));
  });
});

/**
 * Another writer's key sits on nodes 2-4 (a minority partial grant of someone, long ttl); the writer key is free on
 * nodes 0 and 1. Writer W (maxWait 250) is granted on 0 and 1 each attempt and refused on 2-4; its REQUEUEs to
 * nodes 0 and 1 take 150 ms (over nodeTimeout 100: cut, but delivered anyway). Resolves once everything landed, with
 * the time the last REQUEUE landed.
 */
async function writerThatGaveUp() {
  const clock = new VirtualClock();
  const nodes = simCluster(clock);
  for (const [i, node] of nodes.entries()) {
    node.deliverLate = true;
    node.latency = (request) => (request.script === "requeue" && i < 2 ? 150 : 1);
  }
  for (const node of nodes.slice(2)) node.set(WRITER, "another-writer", 10_000);
  const redlock = new Redlock(nodes, { clock, nodeTimeout: 100 });
  const doc = redlock.readWriteLock("doc");
  const error = await clock.run(doc.acquireWrite(1_000, { maxWait: 250 }).catch((e: unknown) => e));
  expect(error).toBeInstanceOf(LockAcquisitionError);
  await clock.drain(); // the give-up (not waited for by acquireWrite) and the last REQUEUEs land
  const landed = Math.max(
    ...nodes.slice(0, 2).map((n) => n.requests.filter((r) => r.script === "requeue").at(-1)?.ranAt ?? -1),
  );
  return { clock, nodes, redlock, doc, landed };
}

describe("a fair writer's REQUEUE that lands after it gave up", () => {
  it("lands after its give-up, puts the writer's 'w' member back on that node, and it lapses within one claim window", async () => {
    const { clock, nodes, landed } = await writerThatGaveUp();
    for (const node of nodes.slice(0, 2)) {
      // A writer gives up as a reader's release does, with a value that is never a lock value.
      const leave = node.requests.filter((r) => isGiveUp(node, r)).at(-1);
      const requeue = node.requests.filter((r) => r.script === "requeue").at(-1);
      expect(leave?.ranAt).toBeDefined();
      expect(requeue?.ranAt).toBeGreaterThan(leave?.ranAt ?? Number.POSITIVE_INFINITY);
    }
    // The writer is gone, yet its member is back in line on nodes 0 and 1 (and nowhere else).
    const waiting = nodes.map((n) => n.liveWaiters(QUEUE));
    expect(waiting.map((w) => w.length)).toEqual([1, 1, 0, 0, 0]);
    expect(waiting[0][0].endsWith("w")).toBe(true);
    // Its own key was deleted where it had set it; the other writer's key untouched.
    expect(nodes.map((n) => n.get(WRITER))).toEqual([
      undefined,
      undefined,
      "another-writer",
      "another-writer",
      "another-writer",
    ]);
    // Bounded: the member is never refreshed; the REQUEUE that freed the writer key there woke the line, so the
    // member, first in line, lapses with its claim window (200 ms) after the landing, not with its maxWait.
    await clock.advance(landed + 190 - clock.now());
    expect(nodes.map((n) => n.liveWaiters(QUEUE).length)).toEqual([1, 1, 0, 0, 0]);
    await clock.advance(11);
    expect(nodes.map((n) => n.liveWaiters(QUEUE).length)).toEqual([0, 0, 0, 0, 0]);
  });

  it("with a node down, a reader waits for that stale member's claim window, no longer; no writer is valid meanwhile", async () => {
    const { clock, nodes, doc, landed } = await writerThatGaveUp();
    for (const node of nodes.slice(2)) node.delete(WRITER);
    nodes[4].mode = "down";
    const read = await clock.run(doc.acquireRead(1_000, { maxWait: 2_000 }));
    // Nodes 0 and 1 refuse the reader (a writer "ahead"), node 4 is down: 2 grants until the member lapses,
    // 200 ms after it landed; the reader, retrying after each split vote, is served within a round or two of that.
    expect(clock.now()).toBeGreaterThan(landed + 190);
    expect(clock.now()).toBeLessThan(landed + 230);
    expect(nodes.slice(0, 4).every((n) => n.get(WRITER) === undefined)).toBe(true);
    await clock.run(read.release());
  });
});

/** A reader's undo: its read release with an entry life (value, member, life). */
const isUndo = (node: SimNode, r: SimRequest) => r.script === "rw-read-release" && node.argsOf(r)?.length === 3;
/** A waiter that gives up leaves with a read release whose value is never a lock value. */
const isGiveUp = (node: SimNode, r: SimRequest) => r.script === "rw-read-release" && node.argsOf(r)?.[0] === "-";

/**
 * Someone else's writer key on nodes 2-4 (until `blockedMs`); free on 0 and 1. Reader R is granted on 0 and 1 and
 * refused on 2-4 until the key lapses; its undos (read release with a lease: 2 keys, 3 args) to nodes 0 and 1 take
 * `undoMs` (over nodeTimeout 100: cut, delivered anyway).
 */
function readerSetup(blockedMs: number, undoMs: number) {
  const clock = new VirtualClock();
  const nodes = simCluster(clock);
  for (const [i, node] of nodes.entries()) {
    node.deliverLate = true;
    node.latency = (request) => (i < 2 && isUndo(node, request) ? undoMs : 1);
  }
  for (const node of nodes.slice(2)) node.set(WRITER, "someone-else", blockedMs);
  const redlock = new Redlock(nodes, { clock, nodeTimeout: 100 });
  return { clock, nodes, redlock, doc: redlock.readWriteLock("doc") };
}

describe("a fair reader's undo that lands late", () => {
  it("an undo landing after the same reader won a later attempt leaves the holder's reader entry on every node", async () => {
    const { clock, nodes, doc } = readerSetup(250, 400);
    const read = await clock.run(doc.acquireRead(5_000, { maxWait: 3_000 }));
    expect(read.attempts).toBeGreaterThan(1);
    const won = clock.now();
    await clock.drain();
    // Some undo really landed after the holder was granted (on node 0 or 1).
    const late = nodes.slice(0, 2).flatMap((n) => n.requests.filter((r) => isUndo(n, r) && (r.ranAt ?? 0) > won));
    expect(late.length, "an undo lands after the winning attempt").toBeGreaterThan(0);
    // Fresh value per attempt: the holder's entry is untouched everywhere.
    for (const n of nodes) expect([...n.readers(READERS).keys()]).toEqual([read.value]);
    await clock.run(read.release());
    await clock.drain();
    expect(nodes.map((n) => n.readers(READERS).size)).toEqual([0, 0, 0, 0, 0]);
  });

  it("an undo landing after the holder released puts its member back: a later writer waits at most one claim window after the last landing", async () => {
    const clock = new VirtualClock();
    const nodes = simCluster(clock);
    let readerPhase = true;
    for (const [i, node] of nodes.entries()) {
      node.deliverLate = true;
      node.latency = (r) => {
        if (readerPhase && isUndo(node, r) && i < 3) return 400;
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
    const writing = doc.acquireWrite(1_000, { maxWait: 5_000 }).then((l) => {
      writerAt = clock.now();
      return l;
    });
    const read = await clock.run(reading);
    readerPhase = false;
    await clock.run(read.release());
    const releasedAt = clock.now();
    const write = await clock.run(writing);
    await clock.drain();
    const landings = nodes.flatMap((n) =>
      n.requests.filter((r) => isUndo(n, r) && r.ranAt !== undefined).map((r) => r.ranAt!),
    );
    const lastLanding = Math.max(...landings);
    expect(lastLanding, "undos land after the release").toBeGreaterThan(releasedAt);
    // Held back by the reader's put-back member on nodes 0-2: first in line where the resource is free, it has its
    // claim window (200 ms) from its landing, no longer. The writer, told it is next, asks 20 ms after that window.
    expect(writerAt - releasedAt).toBeGreaterThan(100);
    expect(writerAt).toBeGreaterThan(lastLanding + 190);
    expect(writerAt).toBeLessThanOrEqual(lastLanding + 200 + 30);
    await clock.run(write.release());
  });

  it("a reader that gave up: its late undo lands after its give-up; its member stops a writer for one claim window, never a reader", async () => {
    const clock = new VirtualClock();
    const nodes = simCluster(clock);
    let phase = true;
    for (const [i, node] of nodes.entries()) {
      node.deliverLate = true;
      node.latency = (r) => (phase && isUndo(node, r) && i < 2 ? 150 : 1);
    }
    for (const node of nodes.slice(2)) node.set(WRITER, "someone-else", 10_000);
    const redlock = new Redlock(nodes, { clock, nodeTimeout: 100 });
    const doc = redlock.readWriteLock("doc");
    const error = await clock.run(doc.acquireRead(1_000, { maxWait: 250 }).catch((e: unknown) => e));
    expect(error).toBeInstanceOf(LockAcquisitionError);
    await clock.drain();
    phase = false;
    for (const node of nodes.slice(0, 2)) {
      const leave = node.requests.filter((r) => isGiveUp(node, r)).at(-1);
      const undo = node.requests.filter((r) => isUndo(node, r)).at(-1);
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
    // The writer waits for the member's claim window (200 ms from its landing: the resource is free there), no longer.
    const landed = Math.max(...nodes.slice(0, 2).map((n) => n.requests.filter((r) => isUndo(n, r)).at(-1)!.ranAt!));
    const writeStarted = clock.now();
    const write = await clock.run(doc.acquireWrite(1_000, { maxWait: 2_000 }));
    expect(clock.now() - writeStarted).toBeGreaterThan(100);
    expect(clock.now()).toBeGreaterThan(landed + 190);
    expect(clock.now()).toBeLessThan(landed + 230);
    await clock.run(write.release());
  });

  it("a held read lock's release and its follow-up releases never carry an entry life", async () => {
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
      node.latency = (r) =>
        r.script === "rw-read-acquire" && i === 4 ? 80 : r.script === "rw-read-release" && i < 2 && !holding ? 150 : 1;
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
    // Value and member, never a life (the keys: reader set, line, writer key).
    expect(after.every((s) => s.args === 2 && s.keys === 3)).toBe(true);
    expect(nodes.map((n) => n.readers(READERS).size)).toEqual([0, 0, 0, 0, 0]);
    // A late undo's member, first in line where the resource is free, lapses within its claim window.
    await clock.advance(300);
    expect(nodes.map((n) => n.liveWaiters(QUEUE).length)).toEqual([0, 0, 0, 0, 0]);
  });
});
