// Review 27 (bfbe970): what a missed turn's undo leaves behind, and whom it touches.
// - A reader that missed its turn undoes with RW_READ_RELEASE (value, member; no lease) on every node, refusing ones
//   included: where it was refused, another reader's entry and a writer's place in line must stay.
// - A fenced waiter whose grant round won a quorum but whose write-back round fell short is now a missed turn (judged
//   on `grant.round.granted`): its LEAVE must still take its keys out wherever the grant set them (a grant that came
//   in after the round was decided included), and its old tickets out of line everywhere.
// - The same when the caller's signal aborts during the write-back round (the write-back falls short: a missed turn).
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, Redlock, type RedlockNode } from "../../src/index.ts";
import { simCluster, type SimNode } from "../sim/sim-node.ts";
import { VirtualClock } from "../sim/virtual-clock.ts";

const RW = {
  writer: "edge-redlock:rw:writer:report",
  readers: "edge-redlock:rw:readers:report",
  queue: "edge-redlock:rw:queue:report",
};
const QUEUE = "edge-redlock:queue:report";
const never = () => new AbortController().signal;

function link(node: RedlockNode, clock: VirtualClock, ms: (script: string) => number | "down"): RedlockNode {
  return {
    label: `${node.label} (slow)`,
    run: async (script, keys, args, signal) => {
      const each = ms(script.name);
      if (each === "down") throw new TypeError("fetch failed");
      await clock.sleep(each, signal);
      const reply = await node.run(script, keys, args, signal);
      await clock.sleep(each, signal);
      return reply;
    },
  };
}

const gaveUp = (p: Promise<unknown>) =>
  p.then(
    () => "held",
    (error: unknown) => (error instanceof LockAcquisitionError ? "gave up" : String(error)),
  );

describe("review27: a missed turn's undo", () => {
  it("a reader's (RW_READ_RELEASE without a lease) leaves another reader and a waiting writer alone on a refusing node", async () => {
    const clock = new VirtualClock();
    const nodes = simCluster(clock);
    const keys = [RW.writer, RW.readers, RW.queue];
    // Node 4: another reader O holds, and a writer waits in line there with the smallest ticket (so R is refused there).
    expect(await clock.run(nodes[4].run({ name: "rw-read-acquire" }, keys, ["other", "60000", "1r", "60000", "1"], never()))).toEqual([1]);
    const writerTicket = "0000000000000000000000000000000aw";
    await clock.run(nodes[4].run({ name: "rw-write-acquire" }, keys, ["writer", "60000", writerTicket, "60000", "1"], never()));
    expect(nodes[4].liveWaiters(RW.queue)).toEqual([writerTicket]);
    // R: rounds of ~99 ms against a ttl of 101 (drift 3.01): granted on nodes 0-3 with no validity left, every time.
    const slow = new Redlock(
      nodes.map((n) => link(n, clock, () => 49)),
      { clock, nodeTimeout: 100 },
    );
    const outcome = await clock.run(gaveUp(slow.readWriteLock("report").acquireRead(101, { maxWait: 800 })));
    expect(outcome).toBe("gave up");
    await clock.advance(200);
    // The path under review ran: node 4 got the missed turns' releases (a lock value, not the give-up's "-").
    const releases = nodes[4].requests.filter((r) => r.script === "rw-read-release");
    expect(releases.length, "missed turns' releases reached the refusing node").toBeGreaterThan(2);
    expect([...nodes[4].readers(RW.readers).keys()]).toEqual(["other"]);
    expect(nodes[4].liveWaiters(RW.queue)).toEqual([writerTicket]);
    for (const n of nodes.slice(0, 4)) {
      expect(n.readers(RW.readers).size).toBe(0);
      expect(n.liveWaiters(RW.queue)).toEqual([]);
    }
  });

  // S cannot reach node 4; its grant to node 3 comes in after the round was decided (45 ms each way against 20); its
  // write-back to node 2 is cut at nodeTimeout (60 ms each way), to node 3 fails: the grant round wins a quorum in time, the write-back
  // falls short, every attempt. ttl 10 s: anything S leaves set would still be there at the end.
  it("a fenced waiter whose write-back fell short leaves no key and no ticket anywhere", async () => {
    const clock = new VirtualClock();
    const nodes = simCluster(clock);
    const s = new Redlock(
      nodes.map((n, i) =>
        link(n, clock, (script) => (i === 4 || (i === 3 && script === "fence") ? "down" : script === "fence" && i === 2 ? 60 : i === 3 && script === "fair-acquire" ? 45 : 20)),
      ),
      { clock, nodeTimeout: 100 },
    );
    const outcome = await clock.run(gaveUp(s.acquire("report", 10_000, { maxWait: 1_000, fencing: true })));
    expect(outcome).toBe("gave up");
    await clock.drain();
    const grants = nodes[3].requests.filter((r) => r.script === "fair-acquire").length;
    expect(grants, "several attempts, each granted on node 3 after the decision").toBeGreaterThan(2);
    expect(nodes[3].requests.filter((r) => r.script === "leave").length).toBeGreaterThanOrEqual(grants);
    expect(nodes.map((n) => n.get("report"))).toEqual([undefined, undefined, undefined, undefined, undefined]);
    expect(nodes.map((n) => n.liveWaiters(QUEUE))).toEqual([[], [], [], [], []]);
    // A later client is served at once.
    const f = new Redlock(nodes, { clock, nodeTimeout: 100 });
    const began = clock.now();
    const lock = await clock.run(f.acquire("report", 1_000, { maxWait: 2_000, fencing: true }));
    expect(clock.now() - began).toBeLessThan(20);
    await clock.run(lock.release());
  });

  it("a fenced waiter whose signal aborts during the write-back leaves no key and no ticket anywhere", async () => {
    const clock = new VirtualClock();
    const nodes = simCluster(clock);
    nodes[4].set("report", "stranger", 60_000); // node 4 refuses: the missed turn's LEAVE goes there too
    const controller = new AbortController();
    const s = new Redlock(
      nodes.map((n) =>
        link(n, clock, (script) => {
          if (script === "fence") clock.schedule(5, () => controller.abort(new Error("caller gave up")));
          return 20;
        }),
      ),
      { clock, nodeTimeout: 100 },
    );
    const outcome = await clock.run(
      s.acquire("report", 10_000, { maxWait: 1_000, fencing: true, signal: controller.signal }).then(
        () => "held",
        (error: unknown) => String(error),
      ),
    );
    expect(outcome).toContain("caller gave up");
    await clock.drain();
    expect(nodes.map((n) => n.get("report"))).toEqual([undefined, undefined, undefined, undefined, "stranger"]);
    expect(nodes.map((n) => n.liveWaiters(QUEUE))).toEqual([[], [], [], [], []]);
  });
});
