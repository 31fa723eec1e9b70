// The demo app: lock-protected routes on real state kept in Redis. Runtime-neutral (Workers, Deno, Node, Bun).
import { Redis } from "@upstash/redis/cloudflare";
import { Hono, type Context } from "hono";
import { streamText } from "hono/streaming";
import { env as runtimeEnv } from "hono/adapter";
import { Redlock, envNames } from "../src/index.ts";
import { readWrite, redlock, semaphore, type RedlockVariables, type HeldReadWrite, type ReadWriteVariables, type SemaphoreVariables } from "../src/hono/index.ts";

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

/** How long one render works (ms), and how many may run at once. */
const RENDER_MS = 300;
const RENDER_LIMIT = 2;

/** One run of `POST /renders/:name`: when it started and ended (epoch ms). */
interface RenderRun {
  name: string;
  slot: number;
  start: number;
  end: number;
}

/** How long one read or write of a document works (ms): long enough for runs to overlap visibly. */
const DOC_WORK_MS = 300;

/** A document as the demo stores it. */
interface Doc {
  text: string;
  version: number;
}

/** One run of `GET` or `PUT /docs/:name`: its mode, when it started and ended (epoch ms), the version it saw. */
interface DocRun {
  mode: "read" | "write";
  id: string;
  start: number;
  end: number;
  version: number;
}

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

const fromEnv = new Map<string, Redlock>();

/** The Redlock the status route reads through: the app's, or one per configuration from the environment. */
function lockerOf(c: Context, given: AppOptions["redlock"]): Redlock {
  if (given instanceof Redlock) return given;
  if (typeof given === "function") return given(c);
  const vars = runtimeEnv(c) as Record<string, unknown>;
  const id = Object.keys(vars).filter((name) => name.startsWith("UPSTASH_REDIS_REST_")).sort().map((name) => `${name}=${String(vars[name])}`).join("\n");
  let redlock = fromEnv.get(id);
  if (!redlock) fromEnv.set(id, (redlock = Redlock.fromEnv(vars)));
  return redlock;
}

/** The most runs that overlapped in time. */
function mostAtOnce(runs: RenderRun[]): number {
  return Math.max(0, ...runs.map((run) => runs.filter((other) => other.start <= run.start && run.start < other.end).length));
}

/** What `GET /docs/:name/runs` answers: every run, the most readers inside at once, and any run beside a writer. */
function docRuns(runs: DocRun[]) {
  const overlap = (a: DocRun, b: DocRun) => a !== b && a.start < b.end && b.start < a.end;
  const reads = runs.filter((run) => run.mode === "read");
  const writes = runs.filter((run) => run.mode === "write");
  return {
    runs: runs.length,
    reads: reads.length,
    writes: writes.length,
    mostReadersAtOnce: Math.max(0, ...reads.map((r) => reads.filter((o) => o.start <= r.start && r.start < o.end).length)),
    writerOverlaps: writes.reduce((n, w) => n + runs.filter((o) => overlap(w, o)).length, 0),
    log: [...runs].sort((a, b) => a.start - b.start),
  };
}

/** One read or write of a document under its read-write lock: logged at its start and end, recorded in the store. */
async function docRun(c: Context, held: HeldReadWrite, write: (doc: Doc) => Doc | undefined): Promise<Response> {
  const name = c.req.param("name") ?? "";
  const { mode, signal } = held;
  const id = crypto.randomUUID().slice(0, 8);
  const start = Date.now();
  console.log(`doc ${name}: ${mode} ${id} start`);
  const redis = store(c);
  const doc = (await redis.get<Doc>(`doc:${name}`)) ?? { text: "", version: 0 };
  await new Promise((r) => setTimeout(r, DOC_WORK_MS)); // a slow render, or a slow rebuild
  signal.throwIfAborted();
  const next = write(doc);
  if (next) await redis.set(`doc:${name}`, next);
  const run: DocRun = { mode, id, start, end: Date.now(), version: (next ?? doc).version };
  await redis.rpush(`doc:${name}:runs`, JSON.stringify(run));
  console.log(`doc ${name}: ${mode} ${id} end (version ${run.version}, ${run.end - start} ms)`);
  return c.json({ ...run, text: (next ?? doc).text });
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
export function createApp(options: AppOptions = {}): Hono<{ Variables: RedlockVariables & SemaphoreVariables & ReadWriteVariables }> {
  const app = new Hono<{ Variables: RedlockVariables & SemaphoreVariables & ReadWriteVariables }>();
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
        `POST /renders/:name               a ${RENDER_MS} ms render; at most ${RENDER_LIMIT} at once anywhere (?wait=ms, else 429)`,
        "GET  /renders                     every render's start and end, and the most that overlapped (DELETE clears)",
        `GET  /docs/:name                  read a document under a read lock (${DOC_WORK_MS} ms; readers share it; ?wait=ms, else 423)`,
        `PUT  /docs/:name                  write it under the write lock (${DOC_WORK_MS} ms; alone: no reader inside)`,
        "GET  /docs/:name/runs             every read and write with start and end, most readers at once, writerOverlaps (DELETE clears)",
        "GET  /status/:key                 per node: is the key held, by whom (a digest), its PTTL; held by a quorum; free in ms",
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

  // At most RENDER_LIMIT renders at once, across every isolate: each run records when it started and ended.
  app.post(
    "/renders/:name",
    semaphore("renders", { ...lockOptions, limit: RENDER_LIMIT, ttl: 5_000, wait: (c) => Math.min(Number(c.req.query("wait") ?? 0) || 0, 30_000) }),
    async (c) => {
      const start = Date.now();
      await new Promise((r) => setTimeout(r, RENDER_MS)); // the render
      c.var.permit.signal.throwIfAborted();
      const run: RenderRun = { name: c.req.param("name"), slot: c.var.permit.permit.slot, start, end: Date.now() };
      await store(c).rpush("renders:log", JSON.stringify(run));
      return c.json(run);
    },
  );

  app.get("/renders", async (c) => {
    const runs = (await store(c).lrange<RenderRun>("renders:log", 0, -1)) ?? [];
    return c.json({ limit: RENDER_LIMIT, runs: runs.length, mostAtOnce: mostAtOnce(runs), log: runs });
  });

  app.delete("/renders", async (c) => {
    await store(c).del("renders:log");
    return c.json({ cleared: true });
  });

  // A read-write lock: GET reads (side by side), PUT writes (alone); readers and writers wait in one line.
  const docLock = readWrite((c) => `lock:doc:${c.req.param("name")}`, {
    ...lockOptions,
    ttl: 5_000,
    wait: (c) => Math.min(Number(c.req.query("wait") ?? 0) || 0, 30_000),
  });
  app.get("/docs/:name/runs", async (c) => c.json(docRuns((await store(c).lrange<DocRun>(`doc:${c.req.param("name")}:runs`, 0, -1)) ?? [])));
  app.delete("/docs/:name/runs", async (c) => {
    await store(c).del(`doc:${c.req.param("name")}:runs`);
    return c.json({ cleared: true });
  });
  app.get("/docs/:name", docLock, (c) => docRun(c, c.var.lock, () => undefined));
  app.put("/docs/:name", docLock, async (c) => {
    const text = await c.req.text();
    return docRun(c, c.var.lock, (doc) => ({ text, version: doc.version + 1 }));
  });

  app.get("/status/:key", async (c) => c.json(await lockerOf(c, options.redlock).inspect(c.req.param("key"))));

  app.onError((error, c) => {
    console.error(`demo: ${error.name}: ${error.message}`);
    return c.json({ error: "internal error" }, 500);
  });

  return app;
}
