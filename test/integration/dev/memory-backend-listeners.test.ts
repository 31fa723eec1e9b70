// Memory nodes behind the bridge take many requests at once without piling listeners on one signal: Node 20
// prints "MaxListenersExceededWarning: Possible EventTarget memory leak detected. 11 abort listeners added to
// [AbortSignal]" once a signal holds more than ten, as a never-aborting signal shared by every request did.
import { getEventListeners } from "node:events";
import { afterEach, expect, it } from "vitest";
import type { MemoryBackend } from "../../../dev/memory-backend.ts";
import { startMemoryCluster } from "../../../dev/memory-cluster.ts";
import { Redlock } from "../../../src/index.ts";

const add = EventTarget.prototype.addEventListener;
afterEach(() => {
  EventTarget.prototype.addEventListener = add;
});

it("40 requests running at once on one memory node leave at most a few abort listeners on any signal", async () => {
  let most = 0;
  EventTarget.prototype.addEventListener = function (this: EventTarget, ...args: Parameters<typeof add>) {
    add.apply(this, args);
    if (args[0] === "abort" && this instanceof AbortSignal)
      most = Math.max(most, getEventListeners(this, "abort").length);
  };
  const cluster = await startMemoryCluster({ nodes: 3 });
  try {
    for (const bridge of cluster.bridges) (bridge.backend as MemoryBackend).node.latency = 30; // they overlap
    const clients = Array.from(
      { length: 40 },
      () => new Redlock(cluster.nodes, { retryCount: 0, nodeTimeout: 5_000, warnings: false }),
    );
    const locks = await Promise.all(clients.map((redlock, i) => redlock.acquire([`many:${i}`], 20_000)));
    await Promise.all(locks.map((lock) => lock.release()));
  } finally {
    EventTarget.prototype.addEventListener = add;
    await cluster.stop();
  }
  expect(most).toBeLessThanOrEqual(10);
});
