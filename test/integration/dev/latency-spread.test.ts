// The WAN profile's fault (`spread`): the bridge applies it to HTTP requests and mirrors it onto the TCP proxy.
import { Redis as TcpRedis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nodeAdmin } from "../../../dev/admin.ts";
import { startCluster, type Cluster } from "../../../dev/cluster.ts";

let cluster: Cluster;
let tcp: TcpRedis;
const admin = () => nodeAdmin(cluster.nodes[0].adminUrl);
const ping = () =>
  fetch(cluster.nodes[0].url, {
    method: "POST",
    headers: { authorization: `Bearer ${cluster.nodes[0].token}` },
    body: '["ping"]',
  }).then((r) => r.json());
const timed = async (run: () => Promise<unknown>) => {
  const t = performance.now();
  const reply = await run();
  return { reply, ms: performance.now() - t };
};

beforeAll(async () => {
  cluster = await startCluster({ nodes: 1, tcpProxy: true });
  tcp = new TcpRedis(cluster.nodes[0].proxyUrl!, { maxRetriesPerRequest: 0 });
  tcp.on("error", () => {});
});
afterAll(async () => {
  tcp?.disconnect();
  await cluster?.stop();
});

describe("the latency spread fault", () => {
  it("adds the stall to every request when its chance is 1, on the bridge and on the TCP proxy, and goes away when cleared", async () => {
    const always = { jitter: 0, stallChance: 1, stallMs: 150, seed: 1 };
    const state = await admin().faults({ spread: always });
    expect(state.faults.spread).toEqual(always);
    try {
      for (let i = 0; i < 3; i++) {
        const http = await timed(ping);
        expect(http.reply).toEqual({ result: "PONG" });
        expect(http.ms).toBeGreaterThanOrEqual(140);
        const resp = await timed(() => tcp.ping());
        expect(resp.reply).toBe("PONG");
        expect(resp.ms).toBeGreaterThanOrEqual(140);
      }
    } finally {
      await admin().faults({ spread: null });
    }
    expect((await timed(ping)).ms).toBeLessThan(140);
    expect((await timed(() => tcp.ping())).ms).toBeLessThan(140);
  });

  it("jitters the latency both ways on the bridge: never below latency × (1 − jitter)", async () => {
    await admin().faults({ latencyMs: 100, spread: { jitter: 0.5, stallChance: 0, stallMs: 0, seed: 9 } });
    try {
      const times: number[] = [];
      for (let i = 0; i < 12; i++) times.push((await timed(ping)).ms);
      expect(Math.min(...times)).toBeGreaterThanOrEqual(48);
      // Not all alike: with ±50 % over 12 draws, the spread between the extremes is far above timer noise.
      expect(Math.max(...times) - Math.min(...times)).toBeGreaterThan(20);
    } finally {
      await admin().reset();
    }
  });

  it("refuses a spread outside its bounds", async () => {
    await expect(admin().faults({ spread: { jitter: 3, stallChance: 0, stallMs: 0, seed: 1 } })).rejects.toThrow(
      /jitter/,
    );
  });
});
