// A missed turn's LEAVE (old value, old ticket) also goes to the nodes that refused the attempt. Landing late there
// (cut client-side at nodeTimeout, run by the node afterwards) it deletes or disturbs nothing it must not: not the
// waiter's new ticket (after `Line.renew`), another waiter's ticket, another holder's key, or the waiter's own later hold.
// Simulator: the waiter W's first attempt goes over slow links (49 ms each way, ttl 101, nodeTimeout 100: its grant
// round wins nodes 0-3 with no validity left, node 4 refuses it: a stranger's key), so it misses its turn. Its LEAVE to
// node 4 is held back by W's link: the client sees it cut at nodeTimeout, and the test makes it land on node 4 when it
// chooses (`landLate`). Everything else of W's, and the other clients, go over plain 1 ms links.
import { describe, expect, it } from "vitest";
import { Redlock, type RedlockNode } from "../../../src/index.ts";
import { simCluster, type SimNode } from "../../sim/sim-node.ts";
import { VirtualClock } from "../../sim/virtual-clock.ts";

const QUEUE = "edge-redlock:line:report";

interface Held {
  /** Runs the held-back LEAVE on node 4 now; resolves with its reply. */
  landLate: () => Promise<unknown>;
  args: string[];
}

function waiterLinks(nodes: SimNode[], clock: VirtualClock, held: { leave?: Held }): RedlockNode[] {
  let slowAcquires = 0;
  return nodes.map((node, i) => ({
    label: `${node.label} (W)`,
    run: async (script, keys, args, signal) => {
      if (script.name === "fair-acquire" && slowAcquires < 5) {
        slowAcquires++;
        await clock.sleep(49, signal);
        const reply = await node.run(script, keys, args, signal);
        await clock.sleep(49, signal);
        return reply;
      }
      if (i === 4 && script.name === "leave" && args[0] !== "-" && held.leave === undefined) {
        // The missed turn's LEAVE to the refusing node: cut at nodeTimeout on the client, run later on the node.
        held.leave = {
          args: [...args],
          landLate: () => node.run(script, keys, args, new AbortController().signal),
        };
        await clock.sleep(10_000, signal);
      }
      return node.run(script, keys, args, signal);
    },
  }));
}

function snapshot(node: SimNode) {
  return { key: node.get("report"), waiters: [...node.liveWaiters(QUEUE)].sort() };
}

async function missedTurn() {
  const clock = new VirtualClock();
  const nodes = simCluster(clock);
  nodes[4].set("report", "stranger", 60_000);
  const held: { leave?: Held } = {};
  const w = new Redlock(waiterLinks(nodes, clock, held), { clock, nodeTimeout: 100 });
  const wTry = w.acquire("report", 101, { maxWait: 5_000 });
  const wLock = wTry.then((lock) => lock);
  wTry.catch(() => undefined);
  // The first attempt's round ends at ~99 ms; its LEAVE runs at once on nodes 0-3 and is held back for node 4.
  await clock.advance(105);
  expect(held.leave, "the missed turn's LEAVE was sent to the refusing node 4").toBeDefined();
  expect(nodes.slice(0, 4).map((n) => n.get("report"))).toEqual([undefined, undefined, undefined, undefined]);
  return { clock, nodes, held: held.leave!, w, wLock };
}

describe("a missed turn's LEAVE to a refusing node, landing late", () => {
  it("leaves the waiter's NEW ticket, another waiter's ticket and another holder's keys where they are", async () => {
    const { clock, nodes, held, wLock } = await missedTurn();
    const oldTicket = held.args[1];
    // H takes the lock on nodes 0-3 (free: the LEAVE took W out there) before W's next attempt.
    const h = new Redlock(nodes, { clock, nodeTimeout: 100 });
    const hLock = await clock.run(h.acquire("report", 60_000, { maxWait: 5_000 }));
    // O waits behind H; W (new ticket) waits too.
    const o = new Redlock(nodes, { clock, nodeTimeout: 100 });
    const oTry = o.acquire("report", 1_000, { maxWait: 5_000 });
    oTry.catch(() => undefined);
    await clock.advance(400);
    const before = snapshot(nodes[4]);
    expect(before.key).toBe("stranger");
    // W renewed: a ticket of W's other than the old one waits on node 4, as does O's.
    const onOthers = nodes[0].liveWaiters(QUEUE);
    expect(onOthers.length, "W (new ticket) and O wait on node 0").toBe(2);
    expect(onOthers).not.toContain(oldTicket);
    for (const t of onOthers) expect(before.waiters).toContain(t);
    // W's old ticket still waits on node 4 (entries live until their waiter's maxWait), as does H's, refused there.
    expect(before.waiters).toContain(oldTicket);
    expect(before.waiters.length, "W's old and new tickets, O's and H's").toBe(4);
    const holderKeys = nodes.slice(0, 4).map((n) => n.get("report"));
    expect(new Set(holderKeys).size).toBe(1);
    expect(await clock.run(held.landLate())).toBe(0);
    const after = snapshot(nodes[4]);
    // It takes out its own old ticket, nothing else.
    expect(after).toEqual({ key: before.key, waiters: before.waiters.filter((t) => t !== oldTicket) });
    expect(nodes.slice(0, 4).map((n) => n.get("report"))).toEqual(holderKeys);
    // The old ticket is gone everywhere.
    for (const n of nodes) expect(n.liveWaiters(QUEUE)).not.toContain(oldTicket);
    // H releases: W, first in line with its new ticket (older than O's), is served next.
    await clock.run(hLock.release());
    const wl = await clock.run(wLock);
    await clock.run(wl.release());
    await clock.run(oTry.then((l) => l.release()));
  });

  it("leaves the waiter's own later hold on that node alone (old value, not the new one)", async () => {
    const { clock, nodes, held, wLock } = await missedTurn();
    // The stranger's key on node 4 lapses; H holds nodes 0-3 a while. W's old ticket (still on node 4, its LEAVE held
    // back) is first there while the resource is free: H's refused acquire shrinks it to its claim window (200 ms), so
    // it lapses before W is served; then W is served on all five nodes.
    expect(nodes[4].liveWaiters(QUEUE)).toContain(held.args[1]);
    nodes[4].set("report", "stranger", 1);
    const h = new Redlock(nodes, { clock, nodeTimeout: 100 });
    const hLock = await clock.run(h.acquire("report", 60_000, { maxWait: 5_000 }));
    await clock.advance(600);
    expect(nodes[4].liveWaiters(QUEUE)).not.toContain(held.args[1]);
    await clock.run(hLock.release());
    const lock = await clock.run(wLock);
    expect(lock.attempts).toBeGreaterThan(1);
    await clock.run(lock.extend(60_000));
    const keys = nodes.map((n) => n.get("report"));
    expect(keys[4]).toBeDefined();
    expect(new Set(keys).size, "W holds on all five nodes").toBe(1);
    expect(held.args[0]).not.toBe(keys[4]);
    expect(await clock.run(held.landLate())).toBe(0);
    expect(nodes.map((n) => n.get("report"))).toEqual(keys);
    const { pending } = await clock.run(lock.release());
    await clock.run(pending);
    expect(nodes.map((n) => n.get("report"))).toEqual([undefined, undefined, undefined, undefined, undefined]);
  });
});
