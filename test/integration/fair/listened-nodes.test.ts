// Waiters spread their streams over the nodes that answered, each from a random one on: nodes that lose wakeups
// (cut streams, a buffering proxy, a refused PUBLISH) silence only the waiters that picked them, not every waiter
// of the line, as when each took the first nodes by index. Real redis-server behind the bridge, real @upstash/redis.
import { expect, it } from "vitest";
import { Redlock } from "../../../src/index.ts";
import { settle, useCluster } from "../fixture.ts";

const fixture = useCluster();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

it("fifteen waiters behind one holder subscribe on more than the first two nodes", async () => {
  // A nodeTimeout no loaded machine reaches: a node that times out answers nothing, and can be listened on by no one.
  const redlock = new Redlock(fixture.nodes, { warnings: false, nodeTimeout: 3_000 });
  const holder = await redlock.acquire("res", 10_000);
  await settle(fixture);
  const stop = new AbortController();
  const waiters = Array.from({ length: 15 }, () =>
    redlock.acquire("res", 5_000, { maxWait: 10_000, signal: stop.signal }).catch(() => undefined),
  );
  await sleep(1_500);
  const perNode = fixture.sent.map((names) => names.filter((name) => name === "subscribe").length);
  stop.abort();
  await Promise.all(waiters);
  await holder.release();
  // 17 streams (the first two in line listen on two nodes, the rest on one). By index, all would be on nodes 0-1.
  expect(perNode.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(15);
  expect(perNode.filter((count) => count > 0).length, `streams per node: ${perNode}`).toBeGreaterThanOrEqual(3);
});
