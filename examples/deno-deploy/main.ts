// Deno Deploy (locally: see README.md): a counter whose read-modify-write is guarded by edge-redlock.
//   POST /counter/:name[?wait=ms]   increment under the lock, answer the value
//   GET  /counter/:name             read it
import { Redis } from "@upstash/redis";
import { LockAcquisitionError, Redlock } from "edge-redlock";

const env = Deno.env.toObject(); // UPSTASH_REDIS_REST_URL_1 … _5 and _TOKEN_1 … _5: the project's environment variables
const redlock = Redlock.fromEnv(env);
const db = new Redis({ url: env.UPSTASH_REDIS_REST_URL_1, token: env.UPSTASH_REDIS_REST_TOKEN_1 });

/** Read, think, write back: safe only because the caller holds the lock. */
async function increment(name: string): Promise<number> {
  const value = ((await db.get<number>(`counter:${name}`)) ?? 0) + 1;
  await new Promise((resolve) => setTimeout(resolve, 20));
  await db.set(`counter:${name}`, value);
  return value;
}

async function handle(request: Request): Promise<Response> {
  const url = new URL(request.url);
  const name = /^\/counter\/([\w-]+)$/.exec(url.pathname)?.[1];
  if (!name) return new Response("POST /counter/:name, GET /counter/:name\n", { status: 404 });
  if (request.method === "GET") return Response.json({ value: (await db.get<number>(`counter:${name}`)) ?? 0 });
  const wait = Number(url.searchParams.get("wait") ?? 5_000);
  try {
    await using _lock = await redlock.acquire([`lock:counter:${name}`], 5_000, { retryCount: -1, maxWait: wait });
    return Response.json({ value: await increment(name) });
  } catch (error) {
    if (!(error instanceof LockAcquisitionError)) throw error;
    if (error.reason !== "held") return Response.json({ error: "lock unavailable", reason: error.reason }, { status: 503 });
    const seconds = Math.ceil((error.retryAfterMs ?? 1_000) / 1_000);
    return Response.json({ error: "busy" }, { status: 423, headers: { "Retry-After": String(seconds) } });
  }
}

// Deno Deploy picks the port; locally PORT (0: any free port) says where to listen.
Deno.serve({ port: Number(Deno.env.get("PORT") ?? 8000), hostname: "127.0.0.1", onListen: ({ port }) => console.log(`listening on http://127.0.0.1:${port}`) }, handle);
