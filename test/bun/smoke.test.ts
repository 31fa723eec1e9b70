// Runs under the real `bun`: acquire, contend, release against a real cluster started from dev/.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { holding, nodeAdmin, settle } from "../../dev/admin.ts";
import { startCluster, type Cluster } from "../../dev/cluster.ts";
import { LockAcquisitionError, Redlock } from "../../src/index.ts";

let cluster: Cluster;
beforeAll(async () => {
  cluster = await startCluster({ nodes: 5 });
});
afterAll(async () => {
  await cluster?.stop();
});

test("acquire, contend, release under Bun", async () => {
  const a = new Redlock(cluster.nodes, { retryCount: 0 });
  const b = new Redlock(cluster.nodes, { retryCount: 0 });
  const lock = await a.acquire(["bun:smoke"], 5_000);
  expect(lock.value).toMatch(/^[0-9a-f]{40}$/);
  const error = await b.acquire(["bun:smoke"], 5_000).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(LockAcquisitionError);
  expect((error as LockAcquisitionError).reason).toBe("held");
  await settle(cluster.nodes.map((n) => nodeAdmin(n.adminUrl))); // every node's acquire has landed
  const result = await lock.release();
  expect(result.released).toBeGreaterThanOrEqual(3); // resolved once a quorum answered
  await result.pending;
  expect(await holding(cluster.nodes, "bun:smoke")).toBe(0);
  const next = await b.acquire(["bun:smoke"], 5_000);
  expect(next.value).not.toBe(lock.value);
  await next.release();
});
