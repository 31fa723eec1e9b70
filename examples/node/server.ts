// A Node server (`node --env-file=.env server.ts`: Node ≥ 22.18 runs TypeScript by stripping its types):
// a counter whose read-modify-write is guarded by edge-redlock.
//   POST /counter/:name[?wait=ms]   increment under the lock, answer the value
//   GET  /counter/:name             read it
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Redis } from "@upstash/redis";
import { LockAcquisitionError, Redlock } from "edge-redlock";

const redlock = Redlock.fromEnv(process.env); // UPSTASH_REDIS_REST_URL_1 … _5 and _TOKEN_1 … _5
const db = new Redis({ url: process.env.UPSTASH_REDIS_REST_URL_1!, token: process.env.UPSTASH_REDIS_REST_TOKEN_1! });

interface Answer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** Read, think, write back: safe only because the caller holds the lock. */
async function increment(name: string): Promise<number> {
  const value = ((await db.get<number>(`counter:${name}`)) ?? 0) + 1;
  await new Promise((resolve) => setTimeout(resolve, 20));
  await db.set(`counter:${name}`, value);
  return value;
}

async function handle(method: string, url: URL): Promise<Answer> {
  const name = /^\/counter\/([\w-]+)$/.exec(url.pathname)?.[1];
  if (!name) return { status: 404, body: { routes: ["POST /counter/:name", "GET /counter/:name"] } };
  if (method === "GET") return { status: 200, body: { value: (await db.get<number>(`counter:${name}`)) ?? 0 } };
  const wait = Number(url.searchParams.get("wait") ?? 5_000);
  try {
    // using() releases the lock when the work ends, also when it throws.
    const value = await redlock.using([`lock:counter:${name}`], 5_000, () => increment(name), { retryCount: -1, maxWait: wait });
    return { status: 200, body: { value } };
  } catch (error) {
    if (!(error instanceof LockAcquisitionError)) throw error;
    if (error.reason !== "held") return { status: 503, body: { error: "lock unavailable", reason: error.reason } };
    const seconds = Math.ceil((error.retryAfterMs ?? 1_000) / 1_000);
    return { status: 423, body: { error: "busy" }, headers: { "Retry-After": String(seconds) } };
  }
}

const server = createServer((req, res) => {
  handle(req.method ?? "GET", new URL(req.url ?? "/", "http://localhost")).then(
    (answer) => {
      res.writeHead(answer.status, { "content-type": "application/json", ...answer.headers });
      res.end(JSON.stringify(answer.body));
    },
    (error: unknown) => {
      console.error(error);
      res.writeHead(500).end();
    },
  );
});
server.listen(Number(process.env.PORT ?? 3000), "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
