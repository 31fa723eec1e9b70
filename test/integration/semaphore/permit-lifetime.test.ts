// A permit lives as long as the work it guards, on the real cluster: the semaphore() middleware holds it through a
// streamed body (to the end, and after the client cancelled while the stream still runs), so a second request is
// refused (429) meanwhile; semaphore using() racing its own release with a hung node never lets two inside and does
// not wait for the hung node.
import { Hono } from "hono";
import { streamText } from "hono/streaming";
import { describe, expect, it } from "vitest";
import { Redlock } from "../../../src/index.ts";
import { semaphore, type SemaphoreVariables } from "../../../src/hono/index.ts";
import { settle, useCluster } from "../fixture.ts";

const env = useCluster();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const slotsHeld = async (key: string, limit: number) => {
  let n = 0;
  for (let s = 0; s < limit; s++)
    n += (await Promise.all(env.tcp.map((t) => t.exists(`edge-redlock:semaphore:${key}:${s}`)))).reduce(
      (a, b) => a + b,
      0,
    );
  return n;
};

function executionContext() {
  const waited: Promise<unknown>[] = [];
  return {
    waited,
    ctx: { waitUntil: (p: Promise<unknown>) => void waited.push(p), passThroughOnException: () => {}, props: {} },
  };
}

describe("semaphore() through a streamed body (real cluster)", () => {
  it("limit 1: a second request is refused (429) while the first body streams past the ttl, and after the client cancelled while the stream still runs", async () => {
    const redlock = new Redlock(env.nodes, { nodeTimeout: 300, retryCount: 0 });
    const hono = new Hono<{ Variables: SemaphoreVariables }>();
    let inside = 0;
    let most = 0;
    hono.get("/s", semaphore("atk:stream", { limit: 1, ttl: 500, redlock }), (c) =>
      streamText(c, async (s) => {
        inside++;
        most = Math.max(most, inside);
        try {
          for (let i = 0; i < 10; i++) {
            await s.writeln(`line ${i}`);
            await sleep(90); // keeps running after a cancel (Hono's stream callbacks do)
          }
        } finally {
          inside--;
        }
      }),
    );
    const first = executionContext();
    const res = await hono.request("/s", {}, {}, first.ctx);
    const reader = res.body!.getReader();
    await reader.read();
    await sleep(600); // past the ttl
    expect((await hono.request("/s", {}, {}, executionContext().ctx)).status).toBe(429);
    await reader.cancel("client left");
    await sleep(50);
    const during = await hono.request("/s", {}, {}, executionContext().ctx);
    expect(during.status).toBe(429); // the handler's stream still runs: its permit is still held
    await during.body?.cancel();
    await Promise.all(first.waited);
    await settle(env);
    expect(await slotsHeld("atk:stream", 1)).toBe(0);
    expect(most).toBe(1);
    const after = executionContext();
    const again = await hono.request("/s", {}, {}, after.ctx);
    expect(again.status).toBe(200);
    await again.text();
    await Promise.all(after.waited);
  });
});

describe("semaphore using() and its release with a hung node (real cluster)", () => {
  it("two clients, limit 1, 8 using() each back to back: never two inside; using() does not wait for the hung node", async () => {
    await env.admins[4].faults({ hang: true });
    const nodeTimeout = 400;
    const clients = [0, 1].map(() => new Redlock(env.nodes, { nodeTimeout, retryDelay: 10, retryJitter: 5 }));
    let inside = 0;
    const overlaps: string[] = [];
    const releaseTimes: number[] = [];
    await Promise.all(
      clients.map(async (redlock, c) => {
        const s = redlock.semaphore("atk:using", 1);
        for (let i = 0; i < 8; i++) {
          let ended = 0;
          await s.using(
            1_000,
            async () => {
              if (inside > 0) overlaps.push(`client ${c} run ${i}`);
              inside++;
              await sleep(15);
              inside--;
              ended = performance.now();
            },
            { retryCount: -1, maxWait: 10_000 },
          );
          releaseTimes.push(performance.now() - ended);
        }
      }),
    );
    releaseTimes.sort((a, b) => a - b);
    console.log(
      `using() release p50 ${releaseTimes[8].toFixed(1)} ms, max ${releaseTimes.at(-1)!.toFixed(1)} ms (nodeTimeout ${nodeTimeout})`,
    );
    expect(overlaps).toEqual([]);
    expect(releaseTimes[8]).toBeLessThan(nodeTimeout / 2);
    await env.admins[4].faults({ hang: false });
    await settle(env);
    await sleep(50);
    await settle(env);
    expect(await slotsHeld("atk:using", 1)).toBe(0);
  });
});
