// A Next.js route handler on the Vercel Edge runtime: a counter whose read-modify-write is guarded by edge-redlock.
//   POST /api/counter/:name[?wait=ms]   increment under the lock, answer the value
//   GET  /api/counter/:name             read it
import { Redis } from "@upstash/redis";
// edge-redlock/mutex: the lock alone, the smallest bundle (edge-redlock's Redlock adds semaphore(), readWriteLock()
// and inspect()).
import { LockAcquisitionError, Redlock } from "edge-redlock/mutex";

export const runtime = "edge";

// Module scope: built once per isolate. Vercel exposes the project's environment variables on process.env.
const redlock = Redlock.fromEnv(process.env);
const db = new Redis({ url: process.env.UPSTASH_REDIS_REST_URL_1!, token: process.env.UPSTASH_REDIS_REST_TOKEN_1! });

interface Route {
  params: Promise<{ name: string }>;
}

export async function GET(_request: Request, { params }: Route): Promise<Response> {
  const { name } = await params;
  return Response.json({ value: (await db.get<number>(`counter:${name}`)) ?? 0 });
}

export async function POST(request: Request, { params }: Route): Promise<Response> {
  const { name } = await params;
  const wait = Number(new URL(request.url).searchParams.get("wait") ?? 5_000);
  try {
    // using() releases the lock when the work ends, also when it throws.
    const value = await redlock.using([`lock:counter:${name}`], 5_000, () => increment(name), { retryCount: -1, maxWait: wait });
    return Response.json({ value });
  } catch (error) {
    if (!(error instanceof LockAcquisitionError)) throw error;
    if (error.reason !== "held") return Response.json({ error: "lock unavailable", reason: error.reason }, { status: 503 });
    const seconds = Math.ceil((error.retryAfterMs ?? 1_000) / 1_000);
    return Response.json({ error: "busy" }, { status: 423, headers: { "Retry-After": String(seconds) } });
  }
}

/** Read, think, write back: safe only because the caller holds the lock. */
async function increment(name: string): Promise<number> {
  const value = ((await db.get<number>(`counter:${name}`)) ?? 0) + 1;
  await new Promise((resolve) => setTimeout(resolve, 20));
  await db.set(`counter:${name}`, value);
  return value;
}
