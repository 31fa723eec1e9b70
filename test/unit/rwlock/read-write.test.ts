// The read-write lock on the deterministic simulator: readers share, a writer is alone, the line orders them,
// a reader's extension and release, inspection, fencing, events, and the late orderings of a reader's requests.
import { describe, expect, it } from "vitest";
import {
  InvalidArgumentError,
  LockAcquisitionError,
  LockExtensionError,
  Redlock,
  type LockEvent,
  type RedlockOptions,
} from "../../../src/index.ts";
import { simCluster } from "../../sim/sim-node.ts";
import { VirtualClock } from "../../sim/virtual-clock.ts";

function setup(options: RedlockOptions = {}) {
  const clock = new VirtualClock();
  const nodes = simCluster(clock);
  const redlock = new Redlock(nodes, { clock, nodeTimeout: 100, retryCount: 0, ...options });
  return { clock, nodes, redlock };
}

const WRITER = "edge-redlock:rw:writer:doc";
const READERS = "edge-redlock:rw:readers:doc";
const QUEUE = "edge-redlock:rw:line:doc";

describe("read-write lock", () => {
  it("readers share it; a writer is refused while they hold it, with when to ask again", async () => {
    const { clock, nodes, redlock } = setup();
    const doc = redlock.readWriteLock("doc");
    const a = await clock.run(doc.acquireRead(2_000));
    const b = await clock.run(doc.acquireRead(3_000));
    await clock.drain();
    expect(a.resources).toEqual(["doc"]);
    for (const node of nodes) expect([...node.readers(READERS).keys()].sort()).toEqual([a.value, b.value].sort());
    const error = (await clock.run(doc.acquireWrite(1_000)).catch((e: unknown) => e)) as LockAcquisitionError;
    expect(error).toBeInstanceOf(LockAcquisitionError);
    expect(error.reason).toBe("held");
    // The longest reader (3 s) is what the writer must wait out.
    expect(error.retryAfterMs).toBeGreaterThan(2_900);
    expect(error.retryAfterMs).toBeLessThanOrEqual(3_000);
    expect(nodes.every((n) => n.get(WRITER) === undefined)).toBe(true);
  });

  it("a writer is alone: readers and other writers are refused until it releases", async () => {
    const { clock, redlock } = setup();
    const doc = redlock.readWriteLock("doc");
    const w = await clock.run(doc.acquireWrite(2_000));
    await expect(clock.run(doc.acquireRead(1_000))).rejects.toBeInstanceOf(LockAcquisitionError);
    await expect(clock.run(doc.acquireWrite(1_000))).rejects.toBeInstanceOf(LockAcquisitionError);
    await clock.run(w.release());
    const r = await clock.run(doc.acquireRead(1_000));
    expect(r.validityMs).toBeGreaterThan(0);
  });

  it("a waiting writer stops the readers that come after it, and gets the lock when the readers before it leave", async () => {
    const { clock, nodes, redlock } = setup();
    const doc = redlock.readWriteLock("doc");
    const first = await clock.run(doc.acquireRead(5_000));
    const order: string[] = [];
    let writerAt = -1;
    const writer = doc.acquireWrite(1_000, { maxWait: 10_000 }).then(async (lock) => {
      writerAt = clock.now();
      order.push("writer");
      await clock.sleep(100);
      await lock.release();
    });
    await clock.advance(50); // the writer is in line on every node
    expect(nodes.every((n) => n.liveWaiters(QUEUE).some((t) => t.endsWith("w")))).toBe(true);
    const lateReader = doc.acquireRead(1_000, { maxWait: 10_000 }).then(async (lock) => {
      order.push("late reader");
      await lock.release();
    });
    await clock.advance(200);
    expect(order).toEqual([]); // the late reader waits behind the writer, though only readers hold the lock
    expect(nodes.every((n) => n.liveWaiters(QUEUE).some((t) => t.endsWith("r")))).toBe(true);
    const releasedAt = clock.now();
    await clock.run(first.release()); // the last reader out wakes the line: the writer claims at once
    await clock.run(Promise.all([writer, lateReader]));
    expect(order).toEqual(["writer", "late reader"]);
    expect(writerAt - releasedAt).toBeLessThan(20);
  });

  it("a reader's extension never shortens its entry and never brings back a released one", async () => {
    const { clock, nodes, redlock } = setup();
    const doc = redlock.readWriteLock("doc");
    const r = await clock.run(doc.acquireRead(5_000));
    await clock.drain();
    await clock.run(r.extend(1_000)); // shorter: the entry keeps its expiry
    await clock.drain();
    expect(nodes.every((n) => (n.readers(READERS).get(r.value) ?? 0) > 4_000)).toBe(true);
    await clock.run(r.extend(8_000));
    await clock.drain();
    expect(nodes.every((n) => (n.readers(READERS).get(r.value) ?? 0) > 7_900)).toBe(true);
    await clock.run(r.release());
    await clock.drain();
    expect(nodes.every((n) => n.readers(READERS).size === 0)).toBe(true);
    await expect(clock.run(r.extend(1_000))).rejects.toBeInstanceOf(LockExtensionError);
  });

  it("an extension that lands after the release creates no reader", async () => {
    const { clock, nodes, redlock } = setup();
    const doc = redlock.readWriteLock("doc");
    const r = await clock.run(doc.acquireRead(2_000));
    await clock.drain();
    for (const node of nodes.slice(3)) node.latency = 300; // the extension reaches nodes 3 and 4 late
    for (const node of nodes) node.deliverLate = true;
    const extension = r.extend(2_000).catch(() => undefined);
    await clock.advance(20);
    for (const node of nodes) node.latency = 1;
    await clock.run(r.release());
    await clock.run(extension);
    await clock.drain();
    expect(nodes.every((n) => n.readers(READERS).size === 0)).toBe(true);
  });

  it("a split read vote is cleaned up: no reader is left where the attempt landed", async () => {
    const { clock, nodes, redlock } = setup();
    const doc = redlock.readWriteLock("doc");
    for (const node of nodes.slice(0, 3)) node.set(WRITER, "other-writer", 60_000);
    await expect(clock.run(doc.acquireRead(1_000))).rejects.toBeInstanceOf(LockAcquisitionError);
    await clock.drain();
    expect(nodes.every((n) => n.readers(READERS).size === 0)).toBe(true);
  });

  it("inspect reports readers held on a quorum, the writer, and when a writer could take it", async () => {
    const { clock, redlock } = setup();
    const doc = redlock.readWriteLock("doc");
    expect(await clock.run(doc.inspect())).toMatchObject({ key: "doc", readers: 0, writer: false, freeInMs: 0 });
    const a = await clock.run(doc.acquireRead(2_000));
    await clock.run(doc.acquireRead(3_000));
    await clock.drain();
    const reading = await clock.run(doc.inspect());
    expect(reading).toMatchObject({ readers: 2, writer: false });
    expect(reading.freeInMs).toBeGreaterThan(2_900);
    expect(JSON.stringify(reading)).not.toContain(a.value);
    await clock.advance(3_100);
    const w = await clock.run(doc.acquireWrite(2_000));
    await clock.drain();
    expect(await clock.run(doc.inspect())).toMatchObject({ readers: 0, writer: true });
    await clock.run(w.release());
  });

  it("a write lock hands out increasing fencing tokens; a read lock refuses fencing and fair: false", async () => {
    const { clock, redlock } = setup();
    const doc = redlock.readWriteLock("doc");
    const first = await clock.run(doc.acquireWrite(1_000, { fencing: true }));
    await clock.run(first.release());
    const second = await clock.run(doc.acquireWrite(1_000, { fencing: true }));
    expect(BigInt(second.fence!)).toBeGreaterThan(BigInt(first.fence!));
    await expect(doc.acquireRead(1_000, { fencing: true })).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(doc.acquireWrite(1_000, { fair: false })).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(() => redlock.readWriteLock("edge-redlock:x")).toThrow(InvalidArgumentError);
  });

  it("usingRead and usingWrite extend while the routine runs and abort its signal when the lock is lost", async () => {
    const { clock, nodes, redlock } = setup();
    const doc = redlock.readWriteLock("doc");
    const kept = await clock.run(
      doc.usingRead(500, async (signal) => {
        await clock.sleep(1_500);
        return signal.aborted;
      }),
    );
    expect(kept).toBe(false);
    const lost = await clock.run(
      doc.usingWrite(500, async (signal) => {
        for (const node of nodes.slice(0, 3)) node.delete(WRITER);
        await clock.sleep(1_000);
        return signal.reason;
      }),
    );
    expect(lost).toBeInstanceOf(LockExtensionError);
  });

  it("emits events with kind read and write, never the value", async () => {
    const events: LockEvent[] = [];
    const { clock, redlock } = setup({ onEvent: (event) => events.push(event) });
    const doc = redlock.readWriteLock("doc");
    const r = await clock.run(doc.acquireRead(1_000));
    await clock.run(r.extend(1_000));
    await clock.run(r.release());
    const w = await clock.run(doc.acquireWrite(1_000));
    await clock.run(w.release());
    expect(events.map((e) => `${e.type}:${e.kind}`)).toEqual([
      "acquire:read",
      "extend:read",
      "release:read",
      "acquire:write",
      "release:write",
    ]);
    expect(JSON.stringify(events)).not.toContain(r.value);
  });
});
