// The benchmark's TCP proxy (dev/tcp-proxy.ts): the TCP anchors must suffer the bridge's faults, and recover.
import { Redis as TcpRedis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nodeAdmin } from "../../../dev/admin.ts";
import { startCluster, type Cluster } from "../../../dev/cluster.ts";

let cluster: Cluster;
let client: TcpRedis;
const admin = () => nodeAdmin(cluster.nodes[0].adminUrl);

beforeAll(async () => {
  cluster = await startCluster({ nodes: 1, tcpProxy: true });
  client = new TcpRedis(cluster.nodes[0].proxyUrl!, { maxRetriesPerRequest: 0 });
  client.on("error", () => {});
});
afterAll(async () => {
  client?.disconnect();
  await cluster?.stop();
});

describe("the TCP proxy in front of a redis-server", () => {
  it("delays commands by the bridge's latency", async () => {
    await admin().faults({ latencyMs: 120 });
    try {
      const started = performance.now();
      expect(await client.set("lat", "1")).toBe("OK");
      expect(performance.now() - started).toBeGreaterThanOrEqual(115);
    } finally {
      await admin().reset();
    }
  });

  it("holds every command sent during a hang, then lets them all through in order when it is cleared", async () => {
    await client.set("n", "0");
    await admin().faults({ hang: true });
    // Sent apart, so each reaches the proxy as its own chunk and queues behind the one before.
    const held: Promise<number>[] = [];
    for (let i = 0; i < 3; i++) {
      held.push(client.incr("n"));
      await new Promise((r) => setTimeout(r, 30));
    }
    let settled = 0;
    for (const reply of held) void reply.then(() => settled++);
    await new Promise((r) => setTimeout(r, 100));
    expect(settled).toBe(0);
    await admin().reset();
    const stillHeld = new Promise((r) => setTimeout(() => r("still held 2 s after the hang was cleared"), 2_000));
    expect(await Promise.race([Promise.all(held), stillHeld])).toEqual([1, 2, 3]);
    // The connection works on after the hang.
    expect(await client.incr("n")).toBe(4);
  });
});
