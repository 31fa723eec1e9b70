// A Bun server (`bun run server.ts`): a counter whose read-modify-write is guarded by edge-redlock.
//   POST /counter/:name[?wait=ms]   increment under the lock, answer the value
//   GET  /counter/:name             read it
import { Redis } from "@upstash/redis";
import { LockAcquisitionError, Redlock } from "edge-redlock";

const redlock = Redlock.fromEnv(process.env); // UPSTASH_REDIS_REST_URL_1 … _5 and _TOKEN_1 … _5 (Bun reads .env itself)
const db = new Redis({ url: process.env.UPSTASH_REDIS_REST_URL_1!, token: process.env.UPSTASH_REDIS_REST_TOKEN_1! });

/** Read, think, write back: safe only because the caller holds the lock. */
async function increment(name: string): Promise<number> {
  const value = ((await db.get<number>(`counter:${name}`)) ?? 0) + 1;
  await Bun.sleep(20);
  await db.set(`counter:${name}`, value);
  return value;
}

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: Number(process.env.PORT ?? 3000), // 0: any free port
  routes: {
    "/counter/:name": {
      GET: async (req) => Response.json({ value: (await db.get<number>(`counter:${req.params.name}`)) ?? 0 }),
      POST: async (req) => {
        const wait = Number(new URL(req.url).searchParams.get("wait") ?? 5_000);
        try {
          await using _lock = await redlock.acquire([`lock:counter:${req.params.name}`], 5_000, { retryCount: -1, maxWait: wait });
          return Response.json({ value: await increment(req.params.name) });
        } catch (error) {
          if (!(error instanceof LockAcquisitionError)) throw error;
          if (error.reason !== "held") return Response.json({ error: "lock unavailable", reason: error.reason }, { status: 503 });
          const seconds = Math.ceil((error.retryAfterMs ?? 1_000) / 1_000);
          return Response.json({ error: "busy" }, { status: 423, headers: { "Retry-After": String(seconds) } });
        }
      },
    },
  },
  fetch: () => new Response("POST /counter/:name, GET /counter/:name\n", { status: 404 }),
});
console.log(`listening on ${server.url.origin}`);
