// A single try (retryCount 0 or maxWait 0, the Hono middlewares' default) sends join "0" and never enters a line, on
// five real redis-server nodes behind the REST bridge, also racing waiters with late requests; like every lock it
// releases with LEAVE (taking out a ticket that was never in line). A lock acquired with waiting releases with LEAVE and
// takes its ticket out wherever a minority denied and queued it, also when its release overtakes its own acquire.
// Every request is recorded with its ARGV, so the single tries' tickets are known; the lines are read straight from
// each redis-server (ZRANGE, raw: lapsed entries included).
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, Redlock, type Lock, type Permit, type RedlockNode } from "../../../src/index.ts";
import { redlock as redlockMiddleware, semaphore as semaphoreMiddleware } from "../../../src/hono/index.ts";
import { loadScripts, releaseOvertakingStragglers, settle, useCluster } from "../fixture.ts";

const env = useCluster();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const LINE = (key: string) => `edge-redlock:line:${key}`;
const SEM_LINE = (key: string) => `edge-redlock:semaphore-line:${key}`;

interface Sent {
  node: number;
  script: string;
  keys: string[];
  args: string[];
}

/** The fixture's nodes, each request recorded with its keys and ARGV. */
function recording() {
  const log: Sent[] = [];
  const nodes: RedlockNode[] = env.nodes.map((n, node) => ({
    label: n.label,
    run(script, keys, args, signal) {
      log.push({ node, script: script.name, keys: [...keys], args: args.map(String) });
      return n.run(script, keys, args, signal);
    },
  }));
  return { nodes, log };
}

/** Tickets sent with the join flag "0" (single tries) and "1" (waiters), by the fair acquire scripts. */
function tickets(log: Sent[]) {
  const single = new Set<string>();
  const waiting = new Set<string>();
  for (const s of log)
    if (s.script === "fair-acquire" || s.script === "fair-semaphore-acquire")
      (s.args[5] === "0" ? single : waiting).add(s.args[3]);
  return { single, waiting };
}

/** Samples every node's line every few ms until stopped: every member ever seen. */
function watchLines(line: string) {
  const seen = new Set<string>();
  let on = true;
  const done = (async () => {
    while (on) {
      for (const members of await Promise.all(env.tcp.map((c) => c.zrange(line, 0, -1))))
        for (const m of members) seen.add(m);
      await sleep(3);
    }
  })();
  return {
    seen,
    stop: async () => {
      on = false;
      await done;
    },
  };
}

/** Live entries of a line on one node, read atomically: deadline after the node's TIME. */
const LIVE = `local t = redis.call("TIME")
return redis.call("ZCOUNT", KEYS[1], "(" .. (tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)), "+inf")`;

async function lineMembers(line: string): Promise<string[][]> {
  return Promise.all(env.tcp.map((c) => c.zrange(line, 0, -1)));
}

describe("single tries racing waiters (real cluster, late requests)", () => {
  it("mutex: single tries (retryCount 0 / maxWait 0) never enter a line and leave no key; every lock releases with LEAVE", async () => {
    await loadScripts(env);
    const { nodes, log } = recording();
    await Promise.all([3, 4].map((i) => env.admins[i].faults({ latencyMs: 120 })));
    const watch = watchLines(LINE("race"));
    let inside = 0;
    let overlaps = 0;
    const singleValues = new Set<string>();
    const waitedValues = new Set<string>();
    const hold = async (lock: Lock) => {
      if (++inside > 1) overlaps++;
      await sleep(15);
      inside--;
      await (await lock.release()).pending;
    };
    const end = Date.now() + 1_500;
    let waitersServed = 0;
    let waiterGaveUp = 0;
    let singleRefused = 0;
    await Promise.all([
      // Two waiters with pauses: a busy line of three never emptied (single tries, rightly, never won then).
      ...Array.from({ length: 2 }, async () => {
        const rl = new Redlock(nodes);
        while (Date.now() < end) {
          try {
            const lock = await rl.acquire(["race"], 1_000, { maxWait: 4_000 });
            waitedValues.add(lock.value);
            waitersServed++;
            await hold(lock);
            await sleep(60); // gaps in the line, so single tries win some
          } catch (e) {
            if (!(e instanceof LockAcquisitionError)) throw e;
            waiterGaveUp++;
          }
        }
      }),
      ...Array.from({ length: 4 }, async (_, c) => {
        const rl = new Redlock(nodes);
        while (Date.now() < end) {
          try {
            const lock = await rl.acquire(["race"], 1_000, c % 2 ? { retryCount: 0 } : { maxWait: 0 });
            singleValues.add(lock.value);
            await hold(lock);
          } catch (e) {
            if (!(e instanceof LockAcquisitionError)) throw e;
            singleRefused++;
            await sleep(5);
          }
        }
      }),
    ]);
    await Promise.all(env.admins.map((a) => a.faults({ latencyMs: 0 })));
    await settle(env);
    await watch.stop();
    const { single, waiting } = tickets(log);
    const left = await lineMembers(LINE("race"));
    console.log(
      `mutex race: waiters served ${waitersServed} (gave up ${waiterGaveUp}), single tries won ${singleValues.size} (refused ${singleRefused}); ` +
        `line members left per node ${left.map((m) => m.length).join(",")}; single tickets ${single.size}, waiting ${waiting.size}`,
    );
    expect(overlaps).toBe(0);
    expect(waiterGaveUp).toBe(0);
    expect(singleValues.size).toBeGreaterThan(0); // the single-try path ran
    // No single try's ticket was ever seen in any line on any node, nor is one left.
    expect([...single].filter((t) => watch.seen.has(t))).toEqual([]);
    expect(left.flat().filter((t) => single.has(t))).toEqual([]);
    // Releases: LEAVE over the resource and its line for every lock, each with its own acquisition's ticket (a single
    // try's was never in line: taking it out is a no-op).
    let singleReleases = 0;
    for (const s of log.filter((s) => s.script === "release" || s.script === "leave")) {
      if (singleValues.has(s.args[0])) {
        singleReleases++;
        expect([s.script, s.keys, s.args.length, single.has(s.args[1])]).toEqual([
          "leave",
          ["race", LINE("race")],
          2,
          true,
        ]);
      }
      if (waitedValues.has(s.args[0]))
        expect([s.script, s.keys, waiting.has(s.args[1])]).toEqual(["leave", ["race", LINE("race")], true]);
    }
    expect(singleReleases).toBeGreaterThan(0);
    expect(await Promise.all(env.tcp.map((c) => c.exists("race")))).toEqual([0, 0, 0, 0, 0]);
    // A fresh waiter is not held up by anything left behind.
    const began = Date.now();
    const after = await new Redlock(env.nodes).acquire(["race"], 1_000, { maxWait: 2_000 });
    expect({ attempts: after.attempts, fast: Date.now() - began < 200 }).toEqual({ attempts: 1, fast: true });
    await after.release();
    await settle(env);
  });

  it("semaphore (limit 2): single tries never enter the semaphore's line and release with LEAVE; never 3 inside", async () => {
    await loadScripts(env);
    const { nodes, log } = recording();
    await Promise.all([3, 4].map((i) => env.admins[i].faults({ latencyMs: 120 })));
    const watch = watchLines(SEM_LINE("sem-race"));
    let inside = 0;
    let over = 0;
    const singleValues = new Set<string>();
    const waitedValues = new Set<string>();
    const hold = async (permit: Permit) => {
      if (++inside > 2) over++;
      await sleep(15);
      inside--;
      await (await permit.release()).pending;
    };
    const end = Date.now() + 1_500;
    let waiterGaveUp = 0;
    await Promise.all([
      ...Array.from({ length: 3 }, async () => {
        const s = new Redlock(nodes).semaphore("sem-race", 2);
        while (Date.now() < end) {
          try {
            const permit = await s.acquire(1_000, { maxWait: 4_000 });
            waitedValues.add(permit.value);
            await hold(permit);
            await sleep(40);
          } catch (e) {
            if (!(e instanceof LockAcquisitionError)) throw e;
            waiterGaveUp++;
          }
        }
      }),
      ...Array.from({ length: 4 }, async (_, c) => {
        const s = new Redlock(nodes).semaphore("sem-race", 2);
        while (Date.now() < end) {
          try {
            const permit = await s.acquire(1_000, c % 2 ? { retryCount: 0 } : { maxWait: 0 });
            singleValues.add(permit.value);
            await hold(permit);
          } catch (e) {
            if (!(e instanceof LockAcquisitionError)) throw e;
            await sleep(5);
          }
        }
      }),
    ]);
    await Promise.all(env.admins.map((a) => a.faults({ latencyMs: 0 })));
    await settle(env);
    await watch.stop();
    const { single, waiting } = tickets(log);
    const left = await lineMembers(SEM_LINE("sem-race"));
    console.log(
      `semaphore race: single tries won ${singleValues.size}, waited ${waitedValues.size}; line left ${left.map((m) => m.length).join(",")}`,
    );
    expect(over).toBe(0);
    expect(waiterGaveUp).toBe(0);
    expect(singleValues.size).toBeGreaterThan(0);
    expect([...single].filter((t) => watch.seen.has(t))).toEqual([]);
    expect(left.flat().filter((t) => single.has(t))).toEqual([]);
    // A permit releases its slot and leaves the semaphore's line with LEAVE, with its own acquisition's ticket.
    let singleReleases = 0;
    for (const s of log.filter((s) => s.script === "release" || s.script === "leave")) {
      if (singleValues.has(s.args[0])) {
        singleReleases++;
        expect([s.script, s.keys[1], s.args.length, single.has(s.args[1])]).toEqual([
          "leave",
          SEM_LINE("sem-race"),
          2,
          true,
        ]);
      }
      if (waitedValues.has(s.args[0])) expect([s.script, waiting.has(s.args[1])]).toEqual(["leave", true]);
    }
    expect(singleReleases).toBeGreaterThan(0);
    for (let slot = 0; slot < 2; slot++)
      expect(await Promise.all(env.tcp.map((c) => c.exists(`edge-redlock:semaphore:sem-race:${slot}`)))).toEqual([
        0, 0, 0, 0, 0,
      ]);
  });

  it("Hono middlewares with the default wait (0): their requests carry join '0', they release with LEAVE, no ticket is queued", async () => {
    await loadScripts(env);
    const { nodes, log } = recording();
    const rl = new Redlock(nodes);
    const app = new Hono();
    app.post("/m", redlockMiddleware("mw", { redlock: rl, ttl: 1_000 }), async (c) => {
      await sleep(10);
      return c.text("ok");
    });
    app.post("/s", semaphoreMiddleware("mw-sem", { limit: 1, ttl: 1_000, redlock: rl }), async (c) => {
      await sleep(10);
      return c.text("ok");
    });
    await Promise.all([3, 4].map((i) => env.admins[i].faults({ latencyMs: 120 })));
    const watchM = watchLines(LINE("mw"));
    const watchS = watchLines(SEM_LINE("mw-sem"));
    // Waiters that do wait, alongside.
    const waiter = new Redlock(env.nodes);
    const statuses: number[] = [];
    await Promise.all([
      ...Array.from({ length: 6 }, async (_, i) => {
        await sleep(i * 20);
        statuses.push((await app.request("/m", { method: "POST" })).status);
        statuses.push((await app.request("/s", { method: "POST" })).status);
      }),
      (async () => {
        const lock = await waiter.acquire(["mw"], 1_000, { maxWait: 4_000 });
        await sleep(20);
        await lock.release();
      })(),
      (async () => {
        const permit = await waiter.semaphore("mw-sem", 1).acquire(1_000, { maxWait: 4_000 });
        await sleep(20);
        await permit.release();
      })(),
    ]);
    await Promise.all(env.admins.map((a) => a.faults({ latencyMs: 0 })));
    await settle(env);
    await Promise.all([watchM.stop(), watchS.stop()]);
    console.log(`hono statuses ${statuses.sort().join(",")}`);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(0);
    const fairSent = log.filter((s) => s.script === "fair-acquire" || s.script === "fair-semaphore-acquire");
    expect(fairSent.length).toBeGreaterThan(0);
    expect(fairSent.every((s) => s.args[5] === "0")).toBe(true);
    const { single } = tickets(log);
    // A held lock's release is LEAVE with the single try's own ticket; a failed single try's undo may be the
    // classic RELEASE (it never joined the line), which names no ticket.
    const releases = log.filter((s) => s.script === "release" || s.script === "leave");
    expect(releases.length).toBeGreaterThan(0);
    expect(releases.filter((s) => s.script === "leave" && !single.has(s.args[1]))).toEqual([]);
    expect([...single].filter((t) => watchM.seen.has(t) || watchS.seen.has(t))).toEqual([]);
    expect(await Promise.all(env.tcp.map((c) => c.exists("mw")))).toEqual([0, 0, 0, 0, 0]);
    expect(await Promise.all(env.tcp.map((c) => c.exists("edge-redlock:semaphore:mw-sem:0")))).toEqual([0, 0, 0, 0, 0]);
  });
});

describe("a lock acquired with waiting, denied and queued by a minority (real cluster)", () => {
  it("releases with LEAVE and takes its ticket out where it was queued", async () => {
    await loadScripts(env);
    const { nodes, log } = recording();
    // A leftover key on nodes 3 and 4: they deny and queue the waiter; 0..2 grant it.
    await Promise.all([3, 4].map((i) => env.tcp[i].set("queued", "someone-else", "PX", 3_000)));
    const lock = await new Redlock(nodes).acquire(["queued"], 2_000);
    await settle(env);
    const ticket = tickets(log).waiting;
    expect(ticket.size).toBe(1);
    const [t] = ticket;
    expect((await lineMembers(LINE("queued"))).map((m) => m.includes(t))).toEqual([false, false, false, true, true]);
    await (await lock.release()).pending;
    await settle(env);
    expect(log.filter((s) => s.script === "leave" || s.script === "release").map((s) => [s.script, s.keys])).toEqual(
      Array(5).fill(["leave", ["queued", LINE("queued")]]),
    );
    expect((await lineMembers(LINE("queued"))).flat()).toEqual([]);
    expect(await Promise.all(env.tcp.map((c) => c.get("queued")))).toEqual([
      null,
      null,
      null,
      "someone-else",
      "someone-else",
    ]);
  });

  it("the same single try (retryCount 0) is never queued there, and releases with LEAVE all the same", async () => {
    await loadScripts(env);
    const { nodes, log } = recording();
    await Promise.all([3, 4].map((i) => env.tcp[i].set("queued1", "someone-else", "PX", 3_000)));
    const lock = await new Redlock(nodes).acquire(["queued1"], 2_000, { retryCount: 0 });
    await settle(env);
    expect((await lineMembers(LINE("queued1"))).flat()).toEqual([]);
    await (await lock.release()).pending;
    await settle(env);
    const { single } = tickets(log);
    expect(single.size).toBe(1);
    expect(
      log.filter((s) => s.script === "leave" || s.script === "release").map((s) => [s.script, s.keys, s.args[1]]),
    ).toEqual(Array(5).fill(["leave", ["queued1", LINE("queued1")], [...single][0]]));
    expect((await lineMembers(LINE("queued1"))).flat()).toEqual([]);
    expect(await Promise.all(env.tcp.map((c) => c.get("queued1")))).toEqual([
      null,
      null,
      null,
      "someone-else",
      "someone-else",
    ]);
  });

  it("single tries whose LEAVE overtakes their granting acquire on slow nodes: the late re-send removes the keys, no line is made", async () => {
    await loadScripts(env);
    await releaseOvertakingStragglers(env, new Redlock(env.nodes, { retryCount: 0 }), "single-overtaken", 4);
    for (let i = 0; i < 4; i++)
      expect(await Promise.all(env.tcp.map((c) => c.exists(LINE(`single-overtaken:${i}`))))).toEqual([0, 0, 0, 0, 0]);
  });

  it("a waited lock whose LEAVE overtakes its own acquire, denied and enqueued on slow nodes: the follow-up LEAVE takes the ticket out", async () => {
    await loadScripts(env);
    const { nodes, log } = recording();
    await Promise.all([3, 4].map((i) => env.tcp[i].set("overtaken", "someone-else", "PX", 5_000)));
    await Promise.all([3, 4].map((i) => env.admins[i].faults({ latencyMs: 300 })));
    const lock = await new Redlock(nodes).acquire(["overtaken"], 2_000);
    await Promise.all([3, 4].map((i) => env.admins[i].faults({ latencyMs: 0 })));
    const released = await lock.release();
    await released.pending;
    await settle(env);
    const [t] = tickets(log).waiting;
    // The LEAVE reached nodes 4 and 5 before the acquire, which was then denied there and put the ticket in line;
    // a fair lock's follow-up LEAVE runs on such nodes too (not only where the straggler was not denied), so the
    // ticket does not stay live there until its deadline.
    expect((await lineMembers(LINE("overtaken"))).map((m) => m.includes(t))).toEqual([
      false,
      false,
      false,
      false,
      false,
    ]);
    expect(await Promise.all(env.tcp.map((c) => c.eval(LIVE, 1, LINE("overtaken")).then(Number)))).toEqual([
      0, 0, 0, 0, 0,
    ]);
  });
});
