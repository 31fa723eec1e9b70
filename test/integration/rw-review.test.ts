// From the adversarial review of the read-write lock (issue 19), on five real redis-server nodes behind the REST
// bridge (per-client links for partial partitions and slow links). Each test is named after the property it checks;
// docs/SAFETY.md, "Read-write locks", states them.
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, LockExtensionError, Redlock, type Lock } from "../../src/index.ts";
import { MAX_TTL } from "../../src/options.ts";
import { loadScripts, settle, useCluster } from "./fixture.ts";

const env = useCluster();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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

describe("read-write lock review (real cluster)", () => {
  it("a stream of overlapping readers does not keep out a writer whose links are slower than the queue's lease", async () => {
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
        await doc.usingRead(3_000, () => (reads.push({ asked, got: performance.now() }), sleep(150)), {
          retryCount: -1,
          maxWait: 30_000,
        });
      }
    });
    await sleep(300);
    const began = performance.now();
    let wrote = 0;
    const outcome = await writer.redlock
      .readWriteLock("rw:slow-writer")
      .usingWrite(3_000, () => ((wrote = performance.now()), "wrote" as const), { retryCount: -1, maxWait: 15_000 })
      .catch((e: unknown) => (e as Error).name);
    stop = true;
    await Promise.all(readers);
    await settle(env);
    // Readers that asked well after the writer was in line (its second attempt has run on every node by then) and
    // still got in before it: they overtook it.
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
      const [pttl, clock, score] = await Promise.all([tcp.pttl(key), tcp.zscore(key, "~clock"), tcp.zscore(key, long.value)]);
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
      const lock: Lock | undefined = await (write ? doc.acquireWrite(800) : doc.acquireRead(800)).catch(() => undefined);
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
    const overlaps = held.filter((w) => w.write).flatMap((w) => held.filter((o) => o !== w && o.from < w.to && w.from < o.to));
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
