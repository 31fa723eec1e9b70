// Safety under every fault at once: many clients of every kind hammer one mutex, one semaphore (limit 2) and one read-write lock
// while the test bed reorders everything it can — nodes hang and then run the held requests late (replies after
// their round was decided), latencies change, wakeups are dropped, delayed and cut, a forger publishes its own
// wakeups (claims for every ticket in line, "held" for all, duplicates, garbage) on the line's channel, one node's
// TIME is an hour off, clients' clocks are an hour off either way, a far client, extensions race releases, holders
// crash, waiters abort. Property: no two valid holders of the mutex, never more than 2 valid permits, no writer valid
// beside anyone; and no extension reports success after its lock's release was called. Real redis-server.
import { afterEach, describe, expect, it } from "vitest";
import type { Lock, RedlockNode } from "../../../src/index.ts";
import { systemClock, type Clock } from "../../../src/support/clock.ts";
import { useCluster } from "../fixture.ts";
import { HoldLog, client, linkedNodes, shiftedNode, sleep, wakeChannelOf } from "./helpers.ts";

const fixture = useCluster();
const STORM_MS = 12_000;
const skewed = (offsetMs: number): Clock => ({ ...systemClock, epoch: () => Date.now() + offsetMs });
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)];
let stop = false;
afterEach(() => {
  stop = true;
});

/** Node 4's TIME is an hour ahead, for every client (it is the node's clock). */
const withNodeClock = (nodes: RedlockNode[]) => nodes.map((n, i) => (i === 4 ? shiftedNode(n, 3_600_000) : n));

/** Faults that come and go: late replies (hang, then the held requests run), latencies, lost and late wakeups. */
async function chaos(): Promise<void> {
  while (!stop) {
    const i = Math.floor(Math.random() * 5);
    const admin = fixture.admins[i];
    switch (Math.floor(Math.random() * 5)) {
      case 0:
        await admin.faults({ hang: true });
        await sleep(150 + Math.random() * 500);
        await admin.faults({ hang: false });
        break;
      case 1:
        await admin.faults({ latencyMs: Math.floor(Math.random() * 300) });
        break;
      case 2:
        await admin.faults({ dropMessages: 3 });
        break;
      case 3:
        await admin.faults({ messageDelayMs: Math.floor(Math.random() * 400) });
        break;
      default:
        await admin.cutStreams({ graceful: Math.random() < 0.5 });
    }
    await sleep(100 + Math.random() * 200);
  }
  await Promise.all(fixture.admins.map((a) => a.faults({ hang: false, latencyMs: 0, messageDelayMs: 0 })));
}

/** Publishes its own wakeups on `lineKey`'s channel, naming the tickets it reads from the line. */
async function forger(lineKey: string): Promise<void> {
  const channel = wakeChannelOf(lineKey);
  while (!stop) {
    const i = Math.floor(Math.random() * 5);
    const tcp = fixture.tcp[i];
    const tickets = await tcp.zrange(lineKey, 0, -1).catch(() => [] as string[]);
    const payloads = [
      `1 ${tickets.join(" ")}`,
      `${tickets.length} ${tickets.join(" ")}`,
      `0 ${tickets.join(" ")}`,
      `2 ${tickets[tickets.length - 1] ?? "x"} ${tickets[tickets.length - 1] ?? "x"}`,
      `-1 ${tickets.join(" ")}`,
      "garbage",
      `1 ${tickets.slice(1).join(" ")}`,
    ];
    await tcp.publish(channel, pick(payloads)).catch(() => undefined);
    await sleep(10);
  }
}

interface Who {
  name: string;
  nodes: RedlockNode[];
  options: Parameters<typeof client>[1];
  acquire: { maxWait?: number; retryCount?: number };
}

async function clients(): Promise<Who[]> {
  const near = withNodeClock(fixture.nodes);
  const far = withNodeClock(await linkedNodes(fixture, "far", { latencyMs: 150, messageDelayMs: 150 }));
  return [
    { name: "fair", nodes: near, options: {}, acquire: { maxWait: 3_000 } },
    { name: "fair-2", nodes: near, options: {}, acquire: { maxWait: 3_000 } },
    {
      name: "random",
      nodes: near,
      options: { fair: false, retryDelay: 30, retryJitter: 20 },
      acquire: { maxWait: 3_000 },
    },
    { name: "ahead-1h", nodes: near, options: { clock: skewed(3_600_000) }, acquire: { maxWait: 3_000 } },
    { name: "behind-1h", nodes: near, options: { clock: skewed(-3_600_000) }, acquire: { maxWait: 3_000 } },
    { name: "single-try", nodes: near, options: {}, acquire: { maxWait: 0 } },
    { name: "no-maxWait", nodes: near, options: {}, acquire: { retryCount: 20 } },
    { name: "far", nodes: far, options: {}, acquire: { maxWait: 3_000 } },
  ];
}

/** What each holder does with what it got: hold a while, maybe extend racing the release, maybe crash. */
async function use(lock: Lock, log: HoldLog, who: string, kind: "exclusive" | "shared", late: string[]) {
  const record = log.held(who, lock.validityMs, kind);
  await sleep(Math.random() * 300);
  const r = Math.random();
  if (r < 0.1) return; // crashed: never released, the keys expire
  let releasing = false;
  const extension =
    r < 0.6
      ? lock.extend(800 + Math.floor(Math.random() * 700)).then(
          () => {
            if (releasing) late.push(`${who}: an extension reported success after release() was called`);
            else record.extended(lock.validityMs);
          },
          () => undefined,
        )
      : Promise.resolve();
  if (r < 0.35)
    await sleep(Math.random() * 20); // the release races the extension in flight
  else await extension;
  releasing = true;
  record.releasing();
  await lock.release().catch(() => undefined);
  await extension;
}

async function storm(
  acquire: (who: Who, signal: AbortSignal) => Promise<{ lock: Lock; kind: "exclusive" | "shared" }>,
  log: HoldLog,
  late: string[],
  lineKey: string,
) {
  stop = false;
  const all = await clients();
  let served = 0;
  const loop = async (who: Who) => {
    while (!stop) {
      const abort = new AbortController();
      if (Math.random() < 0.1) setTimeout(() => abort.abort(new Error("gave up")), Math.random() * 1_000);
      try {
        const { lock, kind } = await acquire(who, abort.signal);
        served++;
        await use(lock, log, who.name, kind, late);
      } catch {
        await sleep(10);
      }
    }
  };
  const background = [chaos(), forger(lineKey)];
  const loops = all.map(loop);
  await sleep(STORM_MS);
  stop = true;
  await Promise.all([...loops, ...background]);
  return served;
}

describe("a storm of late replies, forged wakeups and skewed clocks", () => {
  it("the checks can fail: overlapping holdings are caught", () => {
    const log = new HoldLog();
    log.holdings.push(
      { who: "a", kind: "exclusive", start: 0, end: 10 },
      { who: "b", kind: "shared", start: 5, end: 20 },
    );
    expect(() => log.expectExclusive()).toThrow(/overlap/);
    log.holdings.push({ who: "c", kind: "shared", start: 6, end: 8 });
    expect(log.maxConcurrent().count).toBe(3);
  });

  it("the mutex: never two valid holders", async () => {
    const log = new HoldLog();
    const late: string[] = [];
    const redlocks = new Map<Who, ReturnType<typeof client>>();
    const served = await storm(
      async (who, signal) => {
        if (!redlocks.has(who)) redlocks.set(who, client(who.nodes, who.options));
        const lock = await redlocks
          .get(who)!
          .acquire("res", 600 + Math.floor(Math.random() * 900), { ...who.acquire, signal });
        return { lock, kind: "exclusive" };
      },
      log,
      late,
      "edge-redlock:line:res",
    );
    expect(late).toEqual([]);
    log.expectExclusive();
    expect(served).toBeGreaterThan(10);
  }, 45_000);

  it("the semaphore: never more than 2 valid permits", async () => {
    const log = new HoldLog();
    const late: string[] = [];
    const redlocks = new Map<Who, ReturnType<typeof client>>();
    const served = await storm(
      async (who, signal) => {
        if (!redlocks.has(who)) redlocks.set(who, client(who.nodes, who.options));
        const lock = await redlocks
          .get(who)!
          .semaphore("sem", 2)
          .acquire(600 + Math.floor(Math.random() * 900), { ...who.acquire, signal });
        return { lock, kind: "shared" };
      },
      log,
      late,
      "edge-redlock:semaphore-line:sem",
    );
    expect(late).toEqual([]);
    const most = log.maxConcurrent();
    expect(most.count, JSON.stringify(most.at)).toBeLessThanOrEqual(2);
    expect(served).toBeGreaterThan(10);
  }, 45_000);

  it("the read-write lock: no writer valid beside a reader or another writer", async () => {
    const log = new HoldLog();
    const late: string[] = [];
    const redlocks = new Map<Who, ReturnType<typeof client>>();
    const served = await storm(
      async (who, signal) => {
        if (!redlocks.has(who)) redlocks.set(who, client(who.nodes, who.options));
        const rw = redlocks.get(who)!.readWriteLock("doc");
        const ttl = 600 + Math.floor(Math.random() * 900);
        if (Math.random() < 0.5) return { lock: await rw.acquireRead(ttl, { ...who.acquire, signal }), kind: "shared" };
        return { lock: await rw.acquireWrite(ttl, { ...who.acquire, signal }), kind: "exclusive" };
      },
      log,
      late,
      "edge-redlock:rw:line:doc",
    );
    expect(late).toEqual([]);
    log.expectExclusive();
    expect(served).toBeGreaterThan(10);
  }, 45_000);
});
