// A Cloudflare Worker without a framework: a counter whose read-modify-write is guarded by edge-redlock.
//   POST /counter/:name[?wait=ms]      increment under the lock (`await using` releases it), answer the value
//   POST /counter/:name/background     answer 202 at once; the increment runs after the response (`ctx.waitUntil`)
//   GET  /counter/:name                read the value
import { Redis } from "@upstash/redis/cloudflare";
// edge-redlock/mutex: the lock alone, the smallest bundle (edge-redlock's Redlock adds semaphore(), readWriteLock()
// and inspect()).
import { LockAcquisitionError, Redlock } from "edge-redlock/mutex";

// One Redlock per isolate: its HTTP clients (and their connections) serve every request.
let redlock: Redlock | undefined;

export default {
  async fetch(request, env, ctx): Promise<Response> {
    redlock ??= Redlock.fromEnv(env); // UPSTASH_REDIS_REST_URL_1 … _5 and _TOKEN_1 … _5: `wrangler secret bulk`
    const url = new URL(request.url);
    const [, name, background] = /^\/counter\/([\w-]+)(\/background)?$/.exec(url.pathname) ?? [];
    if (!name) return new Response("POST /counter/:name, POST /counter/:name/background, GET /counter/:name\n", { status: 404 });
    // The counter lives in database 1, as a plain value: reading and writing it back is deliberately not atomic.
    const db = new Redis({ url: env.UPSTASH_REDIS_REST_URL_1, token: env.UPSTASH_REDIS_REST_TOKEN_1 });
    if (request.method === "GET") return Response.json({ value: (await db.get<number>(`counter:${name}`)) ?? 0 });

    if (background) {
      // using() holds the lock while the work runs and releases it after; waitUntil keeps the Worker alive for it.
      ctx.waitUntil(
        redlock
          .using([`lock:counter:${name}`], 5_000, () => increment(db, name), { retryCount: -1, maxWait: 10_000 })
          .catch((error: unknown) => console.error(`counter ${name}: ${(error as Error).message}`)),
      );
      return new Response(null, { status: 202 });
    }

    const wait = Number(url.searchParams.get("wait") ?? 5_000);
    try {
      await using lock = await redlock.acquire([`lock:counter:${name}`], 5_000, { retryCount: -1, maxWait: wait });
      const value = await increment(db, name);
      return Response.json({ value, lockedUntil: lock.expiresAt });
    } catch (error) {
      if (!(error instanceof LockAcquisitionError)) throw error;
      if (error.reason !== "held") return Response.json({ error: "lock unavailable", reason: error.reason }, { status: 503 });
      const seconds = Math.ceil((error.retryAfterMs ?? 1_000) / 1_000);
      return Response.json({ error: "busy" }, { status: 423, headers: { "Retry-After": String(seconds) } });
    }
  },
} satisfies ExportedHandler<Env>;

/** Read, think, write back: safe only because the caller holds the lock. */
async function increment(db: Redis, name: string): Promise<number> {
  const value = ((await db.get<number>(`counter:${name}`)) ?? 0) + 1;
  await new Promise((resolve) => setTimeout(resolve, 20));
  await db.set(`counter:${name}`, value);
  return value;
}
