// A fair waiter whose attempt won a quorum with no validity left (links too slow for its ttl), or whose fenced
// write-back round fell short after its grant round won, missed its turn. It must not keep the head of the line, where
// it would be served first on every attempt and hold everyone behind it back until it gave up: its undo (LEAVE; a
// reader's release without an entry life) takes its keys and its old ticket out on every node, refusing ones included, and
// it takes a new ticket (the back of the line). So a later client with fast links is served while it still retries;
// once it gave up nothing of it is left in line; where it was refused, another reader's entry and a waiting writer's
// place stay; and an abort during the write-back leaves no key and no ticket.
// On the simulator: slow clients whose rounds end within the drift of their ttl (ttl − drift < elapsed ≤ ttl: their
// keys are still set when the undo lands, so no one slips in between), or take longer than the ttl; a mutex and a
// writer (fenced: a grant and a write-back round), a reader and a semaphore (one round, a ttl just above nodeTimeout).
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, Redlock, type RedlockNode } from "../../../src/index.ts";
import { waiterTicket } from "../../../src/support/random.ts";
import { simCluster } from "../../sim/sim-node.ts";
import { VirtualClock } from "../../sim/virtual-clock.ts";

const QUEUE = "edge-redlock:line:report";

/** `node` seen over a link that adds `ms` before each request reaches it and `ms` before its reply comes back. */
function slowLink(node: RedlockNode, clock: VirtualClock, ms: number): RedlockNode {
  return {
    label: `${node.label} (slow)`,
    run: async (script, keys, args, signal) => {
      await clock.sleep(ms, signal);
      const reply = await node.run(script, keys, args, signal);
      await clock.sleep(ms, signal);
      return reply;
    },
  };
}

type Take = (redlock: Redlock, ttl: number, options: { maxWait: number; fencing?: boolean }) => Promise<unknown>;
const mutex: Take = (r, ttl, o) => r.acquire("report", ttl, o);
const writer: Take = (r, ttl, o) => r.readWriteLock("report").acquireWrite(ttl, o);
const reader: Take = (r, ttl, o) => r.readWriteLock("report").acquireRead(ttl, o);
const permit: Take = (r, ttl, o) => r.semaphore("report", 1).acquire(ttl, o);

const cases: { name: string; slow: Take; fast: Take; link: number; ttl: number; fencing: boolean; queue: string }[] = [
  // Two rounds of ~4 × 26.5 + 2 ms = ~108 ms against a ttl of 110 (drift 3.1 ms).
  {
    name: "a fenced mutex",
    slow: mutex,
    fast: mutex,
    link: 26.5,
    ttl: 110,
    fencing: true,
    queue: "edge-redlock:line:report",
  },
  {
    name: "a fenced writer",
    slow: writer,
    fast: writer,
    link: 26.5,
    ttl: 110,
    fencing: true,
    queue: "edge-redlock:rw:line:report",
  },
  // One round of ~2 × 49 + 1 ms = ~99 ms against a ttl of 101 (drift 3.01 ms), nodeTimeout 100.
  {
    name: "a reader (a writer behind it)",
    slow: reader,
    fast: writer,
    link: 49,
    ttl: 101,
    fencing: false,
    queue: "edge-redlock:rw:line:report",
  },
  {
    name: "a semaphore waiter",
    slow: permit,
    fast: permit,
    link: 49,
    ttl: 101,
    fencing: false,
    queue: "edge-redlock:semaphore-line:report",
  },
  // Rounds longer than the ttl (~122 ms against 110): the keys expire before the undo lands.
  {
    name: "a fenced mutex, rounds longer than its ttl",
    slow: mutex,
    fast: mutex,
    link: 30,
    ttl: 110,
    fencing: true,
    queue: "edge-redlock:line:report",
  },
];

describe("fair waiting: a waiter whose wins come too late goes to the back of the line", () => {
  for (const c of cases) {
    it(`${c.name}: the fast client that came later is served while the slow one still retries`, async () => {
      const clock = new VirtualClock();
      const nodes = simCluster(clock);
      const slow = new Redlock(
        nodes.map((n) => slowLink(n, clock, c.link)),
        { clock, nodeTimeout: 100 },
      );
      const fast = new Redlock(nodes, { clock, nodeTimeout: 100 });
      const slowTry = c.slow(slow, c.ttl, { maxWait: 3_000, ...(c.fencing ? { fencing: true } : {}) }).then(
        () => "held",
        (error: unknown) => (error instanceof LockAcquisitionError ? "gave up" : String(error)),
      );
      await clock.advance(300); // the slow waiter has missed its turn at least once and is in line
      const began = clock.now();
      const held = (await clock.run(c.fast(fast, 1_000, { maxWait: 2_000 }))) as { release(): Promise<unknown> };
      // Served long before the slow waiter's 3 s budget ran out.
      expect(clock.now() - began).toBeLessThan(1_000);
      await clock.run(held.release());
      expect(await clock.run(slowTry)).toBe("gave up");
      await clock.drain();
      // Nothing of either is left in line: the missed turns' old tickets were taken out.
      expect(nodes.map((n) => n.liveWaiters(c.queue).length)).toEqual([0, 0, 0, 0, 0]);
    });
  }
});

function fencedLink(node: RedlockNode, i: number, clock: VirtualClock): RedlockNode {
  return {
    label: `${node.label} (S)`,
    run: async (script, keys, args, signal) => {
      if (i >= 3) throw new TypeError("fetch failed");
      const ms = script.name === "fence" && i === 2 ? 60 : 20;
      await clock.sleep(ms, signal);
      const reply = await node.run(script, keys, args, signal);
      await clock.sleep(ms, signal);
      return reply;
    },
  };
}

async function fencedScenario(fencing: boolean) {
  const clock = new VirtualClock();
  const nodes = simCluster(clock);
  const slow = new Redlock(
    nodes.map((n, i) => fencedLink(n, i, clock)),
    { clock, nodeTimeout: 100 },
  );
  const fast = new Redlock(nodes, { clock, nodeTimeout: 100 });
  const slowTry = slow.acquire("report", 1_000, { maxWait: 3_000, fencing }).then(
    (lock) => lock,
    (error: unknown) => (error instanceof LockAcquisitionError ? "gave up" : String(error)),
  );
  await clock.advance(300);
  const began = clock.now();
  const fastTry = await clock.run(
    fast.acquire("report", 1_000, { maxWait: 2_000 }).then(
      (lock) => ({ lock, waited: clock.now() - began }),
      (error: unknown) => ({ lock: undefined, waited: clock.now() - began, error }),
    ),
  );
  return { clock, nodes, slowTry, fastTry };
}

describe("a fenced waiter whose grant round was served but whose write-back round fell short misses its turn", () => {
  // S's grant round wins nodes 0-2 every attempt, its write-back misses node 2. A missed turn is judged on the GRANT
  // round (`grant.round.granted >= rounds.quorum` in `Lifecycle.failed`): the waiter was served either way, whether its
  // validity or its write-back round let it down. Undone with REQUEUE at the head of the line instead, S would be served
  // first on every attempt and F, which came later, would wait out its whole 2 s.
  it("a fast client that came later is served while the fenced waiter still retries", async () => {
    const { clock, slowTry, fastTry } = await fencedScenario(true);
    expect(fastTry.waited).toBeLessThan(1_000);
    await clock.run(fastTry.lock!.release());
    await clock.run(slowTry);
  });

  // Control: without fencing S holds at its first attempt (its grant round alone decides), so the scenario's links
  // are not what keeps F out; F is served once S releases.
  it("control: unfenced, the same links let S hold and F is served after S's release", async () => {
    const clock = new VirtualClock();
    const nodes = simCluster(clock);
    const slow = new Redlock(
      nodes.map((n, i) => fencedLink(n, i, clock)),
      { clock, nodeTimeout: 100 },
    );
    const lock = await clock.run(slow.acquire("report", 1_000, { maxWait: 3_000 }));
    expect(lock.attempts).toBe(1);
    await clock.run(lock.release());
    const fast = new Redlock(nodes, { clock, nodeTimeout: 100 });
    const began = clock.now();
    const held = await clock.run(fast.acquire("report", 1_000, { maxWait: 2_000 }));
    expect(clock.now() - began).toBeLessThan(50);
    await clock.run(held.release());
  });
});

function varyingLink(node: RedlockNode, clock: VirtualClock, ms: () => number): RedlockNode {
  return {
    label: `${node.label} (slow)`,
    run: async (script, keys, args, signal) => {
      await clock.sleep(ms(), signal);
      const reply = await node.run(script, keys, args, signal);
      await clock.sleep(ms(), signal);
      return reply;
    },
  };
}

/**
 * The slow waiter tries for `maxWait` (1 s), misses its turn every time, and gives up; resolves when its LEAVE landed.
 * With `loseLeavesTo4`, no LEAVE of it reaches node 4 (where the stranger's key refuses it).
 */
async function slowWaiterGivesUp(strangerMs: number, loseLeavesTo4 = false) {
  const clock = new VirtualClock();
  const nodes = simCluster(clock);
  nodes[4].set("report", "stranger", strangerMs);
  const slow = new Redlock(
    nodes.map((n, i) => {
      const link = varyingLink(n, clock, () => 49);
      if (i !== 4 || !loseLeavesTo4) return link;
      return {
        label: link.label,
        run: (script, keys, args, signal) =>
          script.name === "leave"
            ? Promise.reject(new TypeError("fetch failed"))
            : link.run(script, keys, args, signal),
      } satisfies RedlockNode;
    }),
    { clock, nodeTimeout: 100 },
  );
  const began = clock.now();
  const outcome = await clock.run(
    slow.acquire("report", 101, { maxWait: 1_000 }).then(
      () => "held",
      (error: unknown) => (error instanceof LockAcquisitionError ? "gave up" : String(error)),
    ),
  );
  expect(outcome).toBe("gave up");
  const gaveUp = clock.now();
  await clock.advance(100); // the give-up's LEAVE (over the slow link: 98 ms) has landed everywhere
  const leaves = nodes.flatMap((n) => n.requests.filter((r) => r.script === "leave" && (r.ranAt ?? 0) >= gaveUp));
  expect(leaves.length, "the give-up's LEAVE ran on every node it reaches").toBe(loseLeavesTo4 ? 4 : 5);
  // The missed-turn path ran: LEAVEs with a lock value (a missed turn's undo), not only the give-up's "-".
  const missed = nodes[0].requests.filter((r) => r.script === "leave").length;
  expect(missed, "missed turns were undone with LEAVE").toBeGreaterThan(1);
  return { clock, nodes, began };
}

describe("the old ticket of a waiter that missed its turn, where its attempt was refused", () => {
  // Node 4 refused the last attempt, which enqueued the old ticket there; the give-up's LEAVE names the new ticket, so
  // only the missed turn's own LEAVE, which goes to the refusing nodes too (`#releaseAfter` with `evenDenied`), takes
  // the old one out.
  it("after the waiter gave up and its LEAVE landed, no ticket of it is left in line", async () => {
    const { nodes } = await slowWaiterGivesUp(60_000);
    expect(nodes.map((n) => n.liveWaiters(QUEUE).length)).toEqual([0, 0, 0, 0, 0]);
  });

  it("the old tickets left where the attempt was refused, their LEAVEs lost, are gone by the waiter's own deadline (maxWait + 2 s)", async () => {
    const { clock, nodes, began } = await slowWaiterGivesUp(60_000, true);
    // Node 4 refused every attempt (the stranger's key) and got none of the LEAVEs: the waiter's tickets, old and new,
    // wait there with the deadline of its entry: maxWait + 2 s from its first attempt, or 2 s past its last attempt
    // (which may start a round past maxWait), plus a one-way trip.
    const left = nodes[4].liveWaiters(QUEUE).length;
    expect(left, "old tickets wait on node 4").toBeGreaterThan(1);
    expect(nodes.map((n) => n.liveWaiters(QUEUE).length)).toEqual([0, 0, 0, 0, left]);
    await clock.advance(began + 2_900 - clock.now());
    expect(nodes[4].liveWaiters(QUEUE).length).toBe(left);
    await clock.advance(300);
    expect(nodes.map((n) => n.liveWaiters(QUEUE).length)).toEqual([0, 0, 0, 0, 0]);
  });

  // A fast client that cannot reach node 0 arrives just after the stranger's key on node 4 lapsed and the slow waiter
  // gave up. Nodes 1-3 are free, node 4 is free but for whatever the slow waiter left: F gets 1-3 at once, so it is
  // served; a ticket left on one node never blocks a quorum alone.
  it("one ghost on a minority of nodes does not keep a later client out", async () => {
    const { clock, nodes } = await slowWaiterGivesUp(1_150);
    const fastNodes = nodes.map((n, i) =>
      i === 0 ? { label: n.label, run: () => Promise.reject(new TypeError("fetch failed")) } : n,
    );
    const fast = new Redlock(fastNodes, { clock, nodeTimeout: 100 });
    const began = clock.now();
    const lock = await clock.run(fast.acquire("report", 1_000, { maxWait: 2_000 }));
    expect(clock.now() - began).toBeLessThan(50);
    await clock.run(lock.release());
  });
});

const RW = {
  writer: "edge-redlock:rw:writer:report",
  readers: "edge-redlock:rw:readers:report",
  line: "edge-redlock:rw:line:report",
};
const never = () => new AbortController().signal;

function scriptLink(node: RedlockNode, clock: VirtualClock, ms: (script: string) => number | "down"): RedlockNode {
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

describe("what a missed turn's undo leaves behind, and whom it touches", () => {
  it("a reader's (RW_READ_RELEASE without an entry life) leaves another reader and a waiting writer alone on a refusing node", async () => {
    const clock = new VirtualClock();
    const nodes = simCluster(clock);
    const keys = [RW.writer, RW.readers, RW.line];
    // Node 4: another reader O holds, and a writer waits in line there with the smallest ticket (so R is refused there).
    expect(
      await clock.run(
        nodes[4].run({ name: "rw-read-acquire" }, keys, ["other", "60000", "1r", "60000", "1", "0"], never()),
      ),
    ).toEqual([1]);
    // In step with the node's clock (else it would not be queued), and older than R's.
    const writerTicket = `${waiterTicket(nodes[4].time())}00200w`;
    await clock.run(
      nodes[4].run({ name: "rw-write-acquire" }, keys, ["writer", "60000", writerTicket, "60000", "1", "0"], never()),
    );
    expect(nodes[4].liveWaiters(RW.line)).toEqual([writerTicket]);
    // R: rounds of ~99 ms against a ttl of 101 (drift 3.01): granted on nodes 0-3 with no validity left, every time.
    const slow = new Redlock(
      nodes.map((n) => scriptLink(n, clock, () => 49)),
      { clock, nodeTimeout: 100 },
    );
    const outcome = await clock.run(gaveUp(slow.readWriteLock("report").acquireRead(101, { maxWait: 800 })));
    expect(outcome).toBe("gave up");
    await clock.advance(200);
    // The missed-turn path ran: node 4 got the missed turns' releases (a lock value, not the give-up's "-").
    const releases = nodes[4].requests.filter((r) => r.script === "rw-read-release");
    expect(releases.length, "missed turns' releases reached the refusing node").toBeGreaterThan(2);
    expect([...nodes[4].readers(RW.readers).keys()]).toEqual(["other"]);
    expect(nodes[4].liveWaiters(RW.line)).toEqual([writerTicket]);
    for (const n of nodes.slice(0, 4)) {
      expect(n.readers(RW.readers).size).toBe(0);
      expect(n.liveWaiters(RW.line)).toEqual([]);
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
        scriptLink(n, clock, (script) =>
          i === 4 || (i === 3 && script === "fence")
            ? "down"
            : script === "fence" && i === 2
              ? 60
              : i === 3 && script === "fair-acquire"
                ? 45
                : 20,
        ),
      ),
      { clock, nodeTimeout: 100 },
    );
    // Its attempts fail on node errors (a write-back cut, one refused): it waits retryDelay ± retryJitter, doubling.
    const outcome = await clock.run(gaveUp(s.acquire("report", 10_000, { maxWait: 2_000, fencing: true })));
    expect(outcome).toBe("gave up");
    await clock.drain();
    const grants = nodes[3].requests.filter((r) => r.script === "fair-acquire").length;
    expect(grants, "several attempts, each granted on node 3 after the decision").toBeGreaterThanOrEqual(2);
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
        scriptLink(n, clock, (script) => {
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
