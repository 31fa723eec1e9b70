// From the adversarial review of the read-write lock (issue 19), on five real redis-server nodes behind the REST
// bridge (per-client links for partial partitions and slow links). Each test is named after the property it checks;
// docs/SAFETY.md, "Read-write locks", states them.
import { describe, expect, it } from "vitest";
import { Redlock } from "../../src/index.ts";
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
});
