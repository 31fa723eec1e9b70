// Mutual exclusion across the three transports on the real cluster: lone requests through `request` (batching: false),
// batched requests, and user-supplied Redis instances (ScriptClient), all contending for one key under jittered latency
// with stalls (late replies, stragglers, NOSCRIPT fallbacks on first use). No two holders' validity windows overlap.
// With stalls shorter than nodeTimeout nothing is left once every release's pending is over; with stalls beyond it a
// cut release leaves its key to the ttl (the library's clients cancel the request and the bridge drops it).
import { Redis } from "@upstash/redis/cloudflare";
import { describe, expect, it } from "vitest";
import { Redlock } from "../../../src/index.ts";
import { settle, useCluster } from "../fixture.ts";

const env = useCluster();
const held = async (key: string) => (await Promise.all(env.tcp.map((t) => t.exists(key)))).reduce((a, b) => a + b, 0);

describe("contention across the three transports", () => {
  // 40 ms stalls stay below nodeTimeout with room for a busy machine (latency 15 ms + 90 % jitter + 40 = 68.5 ms at
  // most): a request that runs past nodeTimeout leaves its key to the ttl, which "nothing left" must not meet.
  for (const stallMs of [40, 150]) {
    it(`6 workers, 3 s, jitter and ${stallMs} ms stalls (nodeTimeout 100): validity windows never overlap${stallMs < 100 ? ", nothing left" : ""}`, async () => {
      await Promise.all(
        env.admins.map((a, i) =>
          a.faults({ latencyMs: 15, spread: { jitter: 0.9, stallChance: 0.08, stallMs, seed: 11 + i } }),
        ),
      );
      const config = env.cluster.nodes.map(({ url, token }) => ({ url, token }));
      const options = { retryCount: 0, nodeTimeout: 100, warnings: false };
      const redlocks = [
        new Redlock(config, { ...options, batching: false }),
        new Redlock(config, options),
        new Redlock(
          env.cluster.nodes.map(
            (n) =>
              new Redis({
                url: n.url,
                token: n.token,
                retry: { retries: 0 },
                enableAutoPipelining: false,
                automaticDeserialization: false,
              }),
          ),
          options,
        ),
      ];
      const windows: { from: number; to: number }[] = [];
      const pendings: Promise<void>[] = [];
      const end = Date.now() + 3_000;
      const worker = async (w: number) => {
        const redlock = redlocks[w % redlocks.length];
        while (Date.now() < end) {
          const lock = await redlock.acquire(["contended"], 400).catch(() => undefined);
          if (!lock) {
            await new Promise((r) => setTimeout(r, 20 + Math.random() * 60));
            continue;
          }
          const from = Date.now();
          const expiresAt = lock.expiresAt;
          await new Promise((r) => setTimeout(r, 10));
          const releasing = Date.now();
          const result = await lock.release();
          pendings.push(result.pending);
          if (expiresAt > from) windows.push({ from, to: Math.min(expiresAt, releasing) });
        }
      };
      await Promise.all(Array.from({ length: 6 }, (_, w) => worker(w)));
      await Promise.all(pendings);
      windows.sort((a, b) => a.from - b.from);
      expect(windows.length).toBeGreaterThan(5);
      expect(windows.filter((w, i) => i > 0 && w.from < windows[i - 1].to)).toEqual([]);
      await Promise.all(env.admins.map((a) => a.reset()));
      await settle(env);
      if (stallMs < 100) expect(await held("contended")).toBe(0);
    });
  }
});
