// The demo app: lock-protected routes on real state kept in Redis. Runtime-neutral (Workers, Deno, Node, Bun).
import { Redis } from "@upstash/redis/cloudflare";
import { Hono, type Context } from "hono";
import { streamText } from "hono/streaming";
import { env as runtimeEnv } from "hono/adapter";
import { Redlock, envNames, nodesFromEnv } from "../src/index.ts";
import { redlock, type RedlockVariables } from "../src/hono.ts";

/** Stock of an item as the demo stores it: deliberately a JSON blob, read-modify-written. */
interface Stock {
  count: number;
  reserved: number;
}

/**
 * What `GET /stock/:item` answers: the stored blob, plus `orders` (every "reserved" answer given, counted
 * atomically with INCR) and `oversold` (orders beyond the stock the item started with: count + reserved).
 * With the lock `orders` equals `reserved`; without it, lost updates hide sales the callers were promised.
 */
interface StockView extends Stock {
  orders: number;
  oversold: number;
}

/** How long a reservation "works" between its read and its write, to make the race visible (ms). */
const WORK_MS = 30;

/** Time between two lines of a streamed report (ms). */
const REPORT_LINE_MS = 100;

const stores = new Map<string, Redis>();

/** The app's own state lives in database 1 (`UPSTASH_REDIS_REST_URL_1`). */
function store(c: Context): Redis {
  const vars = runtimeEnv(c) as Record<string, string>;
  const { url, token } = envNames(1);
  const id = `${vars[url]}\n${vars[token]}`;
  let client = stores.get(id);
  if (!client) {
    client = new Redis({ url: vars[url], token: vars[token], enableTelemetry: false, retry: { retries: 0 } });
    stores.set(id, client);
  }
  return client;
}

/** Per-node views of a key for the status route. */
function nodeClients(c: Context): Redis[] {
  const vars = runtimeEnv(c) as Record<string, unknown>;
  return nodesFromEnv(vars).map((n) => new Redis({ url: n.url, token: n.token, enableTelemetry: false, retry: { retries: 0 } }));
}

async function reserve(c: Context, item: string): Promise<Response> {
  const redis = store(c);
  const stock = await redis.get<Stock>(`stock:${item}`);
  if (!stock) return c.json({ error: "no such item" }, 404);
  await new Promise((r) => setTimeout(r, WORK_MS)); // the window in which a concurrent request can interleave
  if (stock.count <= 0) return c.json({ reserved: false, error: "sold out" }, 409);
  const next = { count: stock.count - 1, reserved: stock.reserved + 1 };
  await redis.set(`stock:${item}`, next);
  await redis.incr(`stock:${item}:orders`); // atomic, unlike the blob: the ledger of every "yes"
  return c.json({ reserved: true, left: next.count });
}

/** Options of {@link createApp}. */
export interface AppOptions {
  /** The Redlock the routes use; default: from the environment (see the README). */
  redlock?: Redlock | ((c: Context) => Redlock);
}

/**
 * Builds the demo app.
 * @example
 * Deno.serve(createApp().fetch);
 */
export function createApp(options: AppOptions = {}): Hono<{ Variables: RedlockVariables }> {
  const app = new Hono<{ Variables: RedlockVariables }>();
  const lockOptions = { redlock: options.redlock };

  app.get("/", (c) =>
    c.text(
      [
        "edge-redlock demo",
        "PUT  /stock/:item {\"count\": n}   set the stock of an item",
        "GET  /stock/:item                 read it (orders: every reservation confirmed; oversold: beyond the stock)",
        "POST /stock/:item/reserve         reserve one, under a lock (?wait=ms to queue instead of 423)",
        "POST /stock/:item/reserve-unsafe  the same read-modify-write without the lock",
        "POST /jobs/:name/run              run a job exactly once",
        "POST /reports/:name/stream        stream a report line by line; one stream per report at a time (?lines=n)",
        "GET  /status/:key                 per node: is the key locked, and its PTTL",
      ].join("\n") + "\n",
    ),
  );

  app.put("/stock/:item", async (c) => {
    const body = await c.req.json<{ count?: unknown }>().catch(() => ({ count: undefined }));
    const count = Number(body.count);
    if (!Number.isInteger(count) || count < 0) return c.json({ error: "count must be a non-negative integer" }, 400);
    const item = c.req.param("item");
    await Promise.all([store(c).set(`stock:${item}`, { count, reserved: 0 }), store(c).set(`stock:${item}:orders`, 0)]);
    return c.json({ count, reserved: 0, orders: 0, oversold: 0 } satisfies StockView);
  });

  app.get("/stock/:item", async (c) => {
    const item = c.req.param("item");
    const [stock, orders] = await Promise.all([store(c).get<Stock>(`stock:${item}`), store(c).get<number>(`stock:${item}:orders`)]);
    if (!stock) return c.json({ error: "no such item" }, 404);
    const sold = Number(orders ?? 0);
    return c.json({ ...stock, orders: sold, oversold: Math.max(0, sold - (stock.count + stock.reserved)) } satisfies StockView);
  });

  app.post(
    "/stock/:item/reserve",
    redlock((c) => `lock:stock:${c.req.param("item")}`, {
      ...lockOptions,
      ttl: 5_000,
      wait: (c) => Math.min(Number(c.req.query("wait") ?? 0) || 0, 30_000),
    }),
    (c) => reserve(c, c.req.param("item")),
  );

  app.post("/stock/:item/reserve-unsafe", (c) => reserve(c, c.req.param("item")));

  app.post("/jobs/:name/run", redlock((c) => `lock:job:${c.req.param("name")}`, { ...lockOptions, ttl: 5_000 }), async (c) => {
    const name = c.req.param("name");
    const redis = store(c);
    if (await redis.get(`job:${name}:done`)) return c.json({ ran: false, reason: "already done" });
    await new Promise((r) => setTimeout(r, WORK_MS)); // the job's work
    c.var.lock.signal.throwIfAborted();
    const runs = await redis.incr(`job:${name}:runs`);
    await redis.set(`job:${name}:done`, "1");
    return c.json({ ran: true, runs });
  });

  // A streamed response (as an AI answer would be): the lock is held, and extended, until the last line is out.
  app.post(
    "/reports/:name/stream",
    redlock((c) => `lock:report:${c.req.param("name")}`, { ...lockOptions, ttl: 2_000 }),
    (c) =>
      streamText(c, async (out) => {
        const lines = Math.min(Math.max(Number(c.req.query("lines") ?? 10) || 10, 1), 100);
        for (let i = 1; i <= lines && !out.aborted; i++) {
          await out.writeln(`report ${c.req.param("name")}: line ${i} of ${lines}`);
          await out.sleep(REPORT_LINE_MS);
        }
      }),
  );

  app.get("/status/:key", async (c) => {
    const key = c.req.param("key");
    const nodes = await Promise.all(
      nodeClients(c).map(async (redis, node) => {
        try {
          const pttl = await redis.pttl(key);
          return { node: node + 1, locked: pttl !== -2, pttl };
        } catch {
          return { node: node + 1, locked: null, pttl: null, error: "unreachable" };
        }
      }),
    );
    const locked = nodes.filter((n) => n.locked).length;
    return c.json({ key, lockedOnMajority: locked >= Math.floor(nodes.length / 2) + 1, nodes });
  });

  app.onError((error, c) => {
    console.error(`demo: ${error.name}: ${error.message}`);
    return c.json({ error: "internal error" }, 500);
  });

  return app;
}
