// The read-write lock and the readWrite() middleware on five real redis-server nodes behind the strict bridge (every
// key a script touches must be in KEYS; pipelines are not atomic): readers share it, a writer is alone and gets in
// (also past a stream of overlapping readers, also when its requests take longer to land than its claim window); a
// refusal says when to ask again; a maximum-ttl reader keeps the reader set alive and extending never shortens it; no
// writer is valid beside a valid reader under partial partitions, late requests and interleaved pipelines; a late
// fencing write-back neither lets two writers hold nor lowers tokens. docs/SAFETY.md, "Read-write locks", states these.
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, LockExtensionError, Redlock, envNames, type Lock } from "../../../src/index.ts";
import { MAX_TTL } from "../../../src/options.ts";
import { readWrite, type ReadWriteVariables } from "../../../src/hono/index.ts";
import { createApp } from "../../../worker/app.ts";
import { loadScripts, settle, until, useCluster } from "../fixture.ts";

const env = useCluster();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const config = () => env.cluster.nodes.map(({ url, token }) => ({ url, token }));
const counters = async () => (await Promise.all(env.admins.map((a) => a.state()))).map((s) => s.counters);

/** Runs as they happened: each records its mode, start and end. */
function runLog() {
  const runs: { write: boolean; start: number; end: number }[] = [];
  let running = 0;
  const overlap = (a: (typeof runs)[number], b: (typeof runs)[number]) => a !== b && a.start < b.end && b.start < a.end;
  return {
    runs,
    /** How many runs have started and not yet ended. */
    running: () => running,
    async run(write: boolean, ms: number) {
      const start = performance.now();
      running++;
      await sleep(ms);
      running--;
      runs.push({ write, start, end: performance.now() });
    },
    writerOverlaps: () => runs.filter((w) => w.write).reduce((n, w) => n + runs.filter((o) => overlap(w, o)).length, 0),
    mostReadersAtOnce: () => {
      const reads = runs.filter((r) => !r.write);
      return Math.max(0, ...reads.map((r) => reads.filter((o) => o.start <= r.start && r.start < o.end).length));
    },
  };
}

/** Live reader entries of a reader set on one node (the clock member aside). */
async function readerEntries(node: number, key: string): Promise<number> {
  const members = await env.tcp[node].zrange(`edge-redlock:rw:readers:${key}`, 0, -1);
  return members.filter((m) => m !== "~clock").length;
}

describe("read-write lock (real Redis)", () => {
  it("12 readers and 3 writers at once: readers share it, no writer overlaps anyone, and every writer gets in", async () => {
    const redlock = new Redlock(env.nodes);
    const doc = redlock.readWriteLock("rw:mix");
    const log = runLog();
    const jobs = Array.from({ length: 15 }, (_, i) => {
      const write = i % 5 === 2;
      const take = write ? doc.usingWrite.bind(doc) : doc.usingRead.bind(doc);
      return sleep(i * 15).then(() => take(5_000, () => log.run(write, 120), { retryCount: -1, maxWait: 15_000 }));
    });
    await Promise.all(jobs);
    expect(log.runs).toHaveLength(15);
    expect(log.writerOverlaps()).toBe(0);
    expect(log.mostReadersAtOnce()).toBeGreaterThanOrEqual(2);
    await settle(env);
    // A reader's acquire that landed after its round was decided is released by the follow-up release of its
    // `pending`, sent once that reply is in; one cut client-side and run later lapses with its ttl (5 s).
    await until(async () => {
      const entries = await Promise.all([0, 1, 2, 3, 4].map((node) => readerEntries(node, "rw:mix")));
      return entries.every((n) => n === 0);
    }, 6_000);
    expect(await doc.inspect()).toMatchObject({ readers: 0, writer: false, freeInMs: 0 });
  });

  it("a steady stream of overlapping readers does not keep a writer out", async () => {
    const redlock = new Redlock(env.nodes);
    const doc = redlock.readWriteLock("rw:stream");
    let stop = false;
    let reads = 0;
    // Four readers, each re-reading at once: at every moment some reader holds the lock.
    const readers = Array.from({ length: 4 }, async (_, i) => {
      await sleep(i * 40);
      while (!stop) {
        await doc.usingRead(3_000, () => sleep(150), { retryCount: -1, maxWait: 10_000 });
        reads++;
      }
    });
    await sleep(300);
    const began = performance.now();
    await doc.usingWrite(3_000, () => sleep(50), { retryCount: -1, maxWait: 5_000 });
    const waited = performance.now() - began;
    stop = true;
    await Promise.all(readers);
    expect(reads).toBeGreaterThan(4);
    // The writer waits for the readers ahead of it (one read, 150 ms, plus the rounds), not for the stream to end.
    expect(waited).toBeLessThan(1_500);
  });

  it("refused: LockAcquisitionError held with retryAfterMs; inspect shows readers held on a quorum and the writer", async () => {
    const redlock = new Redlock(env.nodes);
    const doc = redlock.readWriteLock("rw:refused");
    const readers = [await doc.acquireRead(6_000), await doc.acquireRead(8_000)];
    const error = (await doc.acquireWrite(5_000, { retryCount: 0 }).catch((e: unknown) => e)) as LockAcquisitionError;
    expect(error).toBeInstanceOf(LockAcquisitionError);
    expect(error.reason).toBe("held");
    expect(error.retryAfterMs).toBeGreaterThan(7_000);
    expect(error.retryAfterMs).toBeLessThanOrEqual(8_000);
    await settle(env);
    const seen = await doc.inspect();
    expect(seen).toMatchObject({ key: "rw:refused", readers: 2, writer: false });
    expect(seen.freeInMs).toBeGreaterThan(7_000);
    expect(seen.nodes.map((n) => n.readers)).toEqual([2, 2, 2, 2, 2]);
    expect(JSON.stringify(seen)).not.toContain(readers[0].value);
    for (const reader of readers) await (await reader.release()).pending;
    const writer = await doc.acquireWrite(5_000, { fencing: true });
    expect(writer.fence).toMatch(/^[1-9][0-9]*$/);
    await expect(doc.acquireRead(1_000, { retryCount: 0 })).rejects.toBeInstanceOf(LockAcquisitionError);
    await settle(env);
    expect(await doc.inspect()).toMatchObject({ readers: 0, writer: true });
    await (await writer.release()).pending;
  });

  it("works on nodes that reject the key-locking flag once they fell back, and batches reads taken in one turn", async () => {
    await Promise.all([0, 1].map((i) => env.admins[i].faults({ rejectKeyLocking: true })));
    // Nodes 0 and 1 take three requests each (EVALSHA, EVAL with the flag, EVAL without): a nodeTimeout that a
    // loaded machine cannot exceed, so the entry on node 0 is there once they ran (a CI run cut it at 500 ms).
    const redlock = new Redlock(config(), { retryCount: 2, nodeTimeout: 2_000 });
    const flagged = await redlock.readWriteLock("rw:flag").acquireRead(3_000);
    await settle(env);
    expect(await readerEntries(0, "rw:flag")).toBe(1);
    await (await flagged.release()).pending;
    await Promise.all([0, 1].map((i) => env.admins[i].faults({ rejectKeyLocking: false })));
    await loadScripts(env);
    await Promise.all(env.admins.map((a) => a.resetCounters()));
    const locks = await Promise.all(
      Array.from({ length: 10 }, (_, i) => redlock.readWriteLock(`rw:batch:${i}`).acquireRead(3_000)),
    );
    await until(async () => (await counters()).every((c) => c.answered >= 1));
    // Ten acquisitions in one turn: one pipeline request per node.
    expect((await counters()).map((c) => c.received)).toEqual([1, 1, 1, 1, 1]);
    await Promise.all((await Promise.all(locks.map((lock) => lock.release()))).map((r) => r.pending));
  });

  it("a reader whose acquire reached a slow node late is released there too (straggler release)", async () => {
    await loadScripts(env);
    await env.admins[4].faults({ latencyMs: 300 });
    const redlock = new Redlock(env.nodes, { nodeTimeout: 1_000 });
    const reader = await redlock.readWriteLock("rw:straggler").acquireRead(5_000);
    expect(await readerEntries(4, "rw:straggler")).toBe(0); // decided without node 4
    const { pending } = await reader.release();
    await pending;
    await settle(env);
    for (let node = 0; node < 5; node++) expect(await readerEntries(node, "rw:straggler")).toBe(0);
  });

  it("a reader held through a partition: extended on the nodes it reaches, and lost loudly when too few remain", async () => {
    const redlock = new Redlock(env.nodes, { nodeTimeout: 200 });
    const doc = redlock.readWriteLock("rw:partition");
    await env.admins[0].faults({ cut: true });
    const aborted = await doc.usingRead(
      800,
      async (signal) => {
        await sleep(1_000); // extended past its ttl on nodes 1–4
        const kept = signal.aborted;
        await Promise.all([1, 2].map((i) => env.admins[i].faults({ cut: true })));
        await sleep(1_200);
        return { kept, lost: signal.aborted };
      },
      { extendThreshold: 400 },
    );
    expect(aborted).toEqual({ kept: false, lost: true });
  });
});

describe("readWrite() middleware (real Redis)", () => {
  it("GETs run side by side; a PUT gets 423 with Retry-After while they hold it, and runs alone after", async () => {
    const redlock = new Redlock(env.nodes);
    const app = new Hono<{ Variables: ReadWriteVariables }>();
    const log = runLog();
    const guard = readWrite("mw:doc", { ttl: 600, redlock });
    app.get("/doc", guard, async (c) => {
      await log.run(false, 1_200); // past the ttl: held only because it is extended
      return c.json({ mode: c.var.lock.mode, aborted: c.var.lock.signal.aborted });
    });
    app.put("/doc", guard, async (c) => {
      await log.run(true, 100);
      return c.json({ mode: c.var.lock.mode });
    });
    const reads = [app.request("/doc"), app.request("/doc")];
    await until(async () => log.running() === 2, 5_000);
    await sleep(700); // past the readers' first ttl
    const busy = await app.request("/doc", { method: "PUT" });
    expect(busy.status).toBe(423);
    expect(Number(busy.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
    expect(await busy.json()).toMatchObject({ error: "locked", resource: "mw:doc", mode: "write" });
    for (const read of await Promise.all(reads)) expect(await read.json()).toEqual({ mode: "read", aborted: false });
    expect(log.mostReadersAtOnce()).toBe(2);
    await settle(env);
    const put = await app.request("/doc", { method: "PUT" });
    expect(await put.json()).toEqual({ mode: "write" });
    expect(log.writerOverlaps()).toBe(0);
  });

  it("the demo's document route: 6 reads share it, the write runs alone, the reads after it see the new text", async () => {
    const app = createApp({ redlock: new Redlock(env.nodes) });
    for (const [i, node] of env.cluster.nodes.entries()) {
      process.env[envNames(i + 1).url] = node.url;
      process.env[envNames(i + 1).token] = node.token;
    }
    await app.request("/docs/readme/runs", { method: "DELETE" });
    const first = Array.from({ length: 6 }, () => app.request("/docs/readme?wait=10000"));
    await sleep(100);
    const write = app.request("/docs/readme?wait=10000", { method: "PUT", body: "v2" });
    await sleep(100);
    const after = Array.from({ length: 6 }, () => app.request("/docs/readme?wait=10000"));
    const responses = await Promise.all([...first, write, ...after]);
    expect(responses.map((r) => r.status)).toEqual(Array(13).fill(200));
    const texts = await Promise.all(responses.slice(7).map(async (r) => ((await r.json()) as { text: string }).text));
    expect(texts).toEqual(Array(6).fill("v2"));
    const runs = (await (await app.request("/docs/readme/runs")).json()) as {
      runs: number;
      writerOverlaps: number;
      mostReadersAtOnce: number;
    };
    expect(runs).toMatchObject({ runs: 13, writerOverlaps: 0 });
    expect(runs.mostReadersAtOnce).toBeGreaterThanOrEqual(3);
  });
});

/** A client of its own: one link per node, so faults can touch this client alone. */
async function linkedClient(name: string, options: ConstructorParameters<typeof Redlock>[1] = {}) {
  const urls = await Promise.all(env.admins.map((a) => a.addLink(name)));
  const redlock = new Redlock(
    urls.map((url, n) => ({ url, token: env.cluster.nodes[n].token })),
    options,
  );
  const links = (faults: Parameters<(typeof env.admins)[number]["linkFaults"]>[1], nodes = [0, 1, 2, 3, 4]) =>
    Promise.all(nodes.map((n) => env.admins[n].linkFaults(name, faults)));
  return { redlock, links };
}

describe("read-write lock under slow links, partitions, non-atomic pipelines and late write-backs (real Redis)", () => {
  it("a stream of overlapping readers does not keep out a writer whose requests take longer to land than its claim window", async () => {
    await loadScripts(env);
    const readersClient = new Redlock(env.nodes);
    const doc = readersClient.readWriteLock("rw:slow-writer");
    const writer = await linkedClient("slow-writer", { nodeTimeout: 2_000 });
    await writer.links({ latencyMs: 450 });
    let stop = false;
    // Each read: when its acquisition began (its ticket) and when it got in.
    const reads: { asked: number; got: number }[] = [];
    const readers = Array.from({ length: 4 }, async (_, i) => {
      await sleep(i * 40);
      while (!stop) {
        const asked = performance.now();
        await doc.usingRead(
          3_000,
          () => {
            reads.push({ asked, got: performance.now() });
            return sleep(150);
          },
          {
            retryCount: -1,
            maxWait: 30_000,
          },
        );
      }
    });
    await sleep(300);
    const began = performance.now();
    let wrote = 0;
    const outcome = await writer.redlock
      .readWriteLock("rw:slow-writer")
      .usingWrite(
        3_000,
        () => {
          wrote = performance.now();
          return "wrote" as const;
        },
        { retryCount: -1, maxWait: 15_000 },
      )
      .catch((e: unknown) => (e as Error).name);
    stop = true;
    await Promise.all(readers);
    await settle(env);
    // The writer's entry lives until its maxWait; each release that frees the lock cuts it to the writer's claim
    // window, shorter than the 450 ms its claim takes to land. Readers that asked well after the writer was in line
    // (its first attempt has run on every node by then) and still got in before it: they overtook it.
    const overtook = reads.filter((r) => r.asked > began + 1_500 && (outcome !== "wrote" || r.got < wrote)).length;
    console.log({ outcome, waitedMs: Math.round((wrote || performance.now()) - began), reads: reads.length, overtook });
    expect(outcome).toBe("wrote");
    expect(overtook).toBeLessThanOrEqual(2);
  }, 40_000);

  it("invariant (I) for readers: a maximum-ttl reader beside short ones keeps the set alive; extending never shortens it", async () => {
    const redlock = new Redlock(env.nodes, { nodeTimeout: 200 });
    const doc = redlock.readWriteLock("rw:max-ttl");
    const long = await doc.acquireRead(MAX_TTL);
    const short = await Promise.all([doc.acquireRead(300), doc.acquireRead(300)]);
    await sleep(500);
    await expect(short[0].extend(5_000)).rejects.toBeInstanceOf(LockExtensionError);
    await long.extend(1_000); // shorter than what it has left: must not shorten the entry or the set
    const refused = (await doc.acquireWrite(1_000, { retryCount: 0 }).catch((e: unknown) => e)) as LockAcquisitionError;
    expect(refused).toBeInstanceOf(LockAcquisitionError);
    expect(refused.retryAfterMs).toBeGreaterThan(MAX_TTL - 60_000);
    await settle(env);
    for (const tcp of env.tcp) {
      const key = "edge-redlock:rw:readers:rw:max-ttl";
      const [pttl, clock, score] = await Promise.all([
        tcp.pttl(key),
        tcp.zscore(key, "~clock"),
        tcp.zscore(key, long.value),
      ]);
      const now = Number(clock) - pttl;
      expect(Number(score) - now).toBeGreaterThan(MAX_TTL - 60_000);
      expect(pttl).toBeGreaterThanOrEqual(Number(score) - now);
    }
    expect(await doc.inspect()).toMatchObject({ readers: 1, writer: false });
    await (await long.release()).pending;
    for (const lock of short) await (await lock.release()).pending;
    for (const tcp of env.tcp) expect(await tcp.exists("edge-redlock:rw:readers:rw:max-ttl")).toBe(0);
    await (await doc.acquireWrite(1_000, { retryCount: 0 })).release();
  });

  it("no writer beside a reader under a partial partition, with the reader's requests to the far nodes landing late", async () => {
    await loadScripts(env);
    const reader = await linkedClient("pp-reader", { nodeTimeout: 2_000 });
    await reader.links({ latencyMs: 600 }, [3, 4]);
    const writer = await linkedClient("pp-writer", { nodeTimeout: 300 });
    await writer.links({ cut: true }, [0, 1]);
    const read = await reader.redlock.readWriteLock("rw:pp").acquireRead(4_000);
    // Decided on 0..2; the writer reaches 2..4: before and after the late entries land on 3 and 4, refused on 2.
    const w = writer.redlock.readWriteLock("rw:pp");
    await expect(w.acquireWrite(1_000, { retryCount: 0 })).rejects.toBeInstanceOf(LockAcquisitionError);
    await sleep(700);
    await expect(w.acquireWrite(1_000, { retryCount: 0 })).rejects.toBeInstanceOf(LockAcquisitionError);
    await (await read.release()).pending;
    await settle(env);
    for (const tcp of env.tcp) expect(await tcp.zrange("edge-redlock:rw:readers:rw:pp", 0, -1)).toEqual([]);
    // A late acquire still on its way when release() was called gets its follow-up release.
    const late = await reader.redlock.readWriteLock("rw:pp").acquireRead(4_000);
    const { pending } = await late.release();
    await pending;
    await settle(env);
    for (const tcp of env.tcp) expect(await tcp.zrange("edge-redlock:rw:readers:rw:pp", 0, -1)).toEqual([]);
    await (await w.acquireWrite(1_000, { retryCount: 0 })).release();
  });

  it("no writer valid beside a valid reader when many read and write at once through non-atomic pipelines", async () => {
    await loadScripts(env);
    await Promise.all(env.admins.map((a) => a.faults({ pipelineGapMs: 15 })));
    const clients = [new Redlock(env.nodes), new Redlock(env.nodes), new Redlock(env.nodes)];
    const held: { write: boolean; from: number; to: number }[] = [];
    const take = async (c: number, write: boolean, i: number) => {
      await sleep(i * 7);
      const doc = clients[c].readWriteLock("rw:pipes");
      const lock: Lock | undefined = await (write ? doc.acquireWrite(800) : doc.acquireRead(800)).catch(
        () => undefined,
      );
      if (!lock) return;
      const from = performance.now();
      await sleep(40);
      if (i % 3 === 0) await lock.extend(600).catch(() => undefined);
      // Valid from the grant to the release call, or to the end of its validity if that came first.
      held.push({ write, from, to: Math.min(performance.now(), from + lock.validityMs) });
      await lock.release();
    };
    await Promise.all(Array.from({ length: 24 }, (_, i) => take(i % 3, i % 4 === 1, i)));
    await settle(env);
    const overlaps = held
      .filter((w) => w.write)
      .flatMap((w) => held.filter((o) => o !== w && o.from < w.to && w.from < o.to));
    expect(held.filter((h) => h.write).length).toBeGreaterThan(0);
    expect(overlaps).toEqual([]);
  }, 30_000);

  it("a write lock's fencing write-back landing late, after a newer writer, neither lets two writers hold nor lowers tokens", async () => {
    await loadScripts(env);
    const old = await linkedClient("fence-old", { nodeTimeout: 2_000 });
    await old.links({ latencyMs: 600 }, [3, 4]);
    const first = await old.redlock.readWriteLock("rw:fence").acquireWrite(5_000, { fencing: true });
    const released = first.release(); // its acquire and write-back to nodes 3 and 4 are still on their way
    const doc = new Redlock(env.nodes).readWriteLock("rw:fence");
    const second = await doc.acquireWrite(5_000, { fencing: true, retryCount: -1, maxWait: 5_000 });
    await (await released).pending;
    await settle(env);
    for (const tcp of env.tcp) expect(await tcp.get("edge-redlock:rw:writer:rw:fence")).not.toBe(first.value);
    await expect(doc.acquireRead(1_000, { retryCount: 0 })).rejects.toBeInstanceOf(LockAcquisitionError);
    await (await second.release()).pending;
    const third = await doc.acquireWrite(5_000, { fencing: true });
    expect(BigInt(second.fence!)).toBeGreaterThan(BigInt(first.fence!));
    expect(BigInt(third.fence!)).toBeGreaterThan(BigInt(second.fence!));
    await (await third.release()).pending;
  });
});
