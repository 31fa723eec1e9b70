// The redlock() middleware in Node on the real cluster: concurrent reservations never oversell (and do without the
// lock: the demo's negative control); busy → 423 and unreachable → 503, each with Retry-After, replaceable by onBusy and
// onUnavailable, the cause logged once without secrets; a request budget spent behind a holder → 423, spent on failing
// nodes → 503; variables read from Hono's env; the lock released after the
// handler (also when it throws, through waitUntil when there is one) and extended while it runs, a lost lock aborting
// c.var.lock.signal; missing configuration → 500 naming the variables; a job runs exactly once; status shows holders.
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redlock, envNames } from "../../../src/index.ts";
import { redlock, type RedlockVariables } from "../../../src/hono/index.ts";
import { createApp } from "../../../worker/app.ts";
import { settle, useCluster } from "../fixture.ts";

const env = useCluster();
const saved: Record<string, string | undefined> = {};
const names = [1, 2, 3, 4, 5].flatMap((n) => [envNames(n).url, envNames(n).token]);

beforeAll(() => {
  env.cluster.nodes.forEach((node, i) => {
    const { url, token } = envNames(i + 1);
    saved[url] = process.env[url];
    saved[token] = process.env[token];
    process.env[url] = node.url;
    process.env[token] = node.token;
  });
});
afterAll(() => {
  for (const name of names) {
    if (saved[name] === undefined) delete process.env[name];
    else process.env[name] = saved[name];
  }
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("redlock() middleware in Node", () => {
  it("N concurrent reservations on stock S < N with wait: exactly S succeed, stock ends at 0", async () => {
    const app = createApp();
    await app.request("/stock/widget", { method: "PUT", body: JSON.stringify({ count: 3 }) });
    const responses = await Promise.all(
      Array.from({ length: 8 }, () => app.request("/stock/widget/reserve?wait=10000", { method: "POST" })),
    );
    const statuses = responses.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 200, 200, 409, 409, 409, 409, 409]);
    expect(await (await app.request("/stock/widget")).json()).toEqual({
      count: 0,
      reserved: 3,
      orders: 3,
      oversold: 0,
    });
  });

  it("without the lock the same race oversells (the demo's negative control)", async () => {
    const app = createApp();
    await app.request("/stock/gadget", { method: "PUT", body: JSON.stringify({ count: 3 }) });
    const responses = await Promise.all(
      Array.from({ length: 8 }, () => app.request("/stock/gadget/reserve-unsafe", { method: "POST" })),
    );
    const ok = responses.filter((r) => r.status === 200).length;
    const stock = (await (await app.request("/stock/gadget")).json()) as {
      count: number;
      reserved: number;
      orders: number;
      oversold: number;
    };
    expect(ok).toBeGreaterThan(3);
    expect(stock.reserved).toBeLessThan(ok); // lost updates: more "reserved" answers than recorded
    expect(stock.orders).toBe(ok); // the stored state shows it: every "yes" is in the ledger
    expect(stock.oversold).toBe(ok - 3);
  });

  it("busy → 423 with a JSON body and Retry-After from the holder's PTTL", async () => {
    const holder = await new Redlock(env.nodes).acquire(["lock:stock:busy"], 8_000);
    const res = await createApp().request("/stock/busy/reserve", { method: "POST" });
    expect(res.status).toBe(423);
    const body = (await res.json()) as { error: string; resource: string; retryAfterMs: number };
    expect(body).toMatchObject({ error: "locked", resource: "lock:stock:busy" });
    expect(body.retryAfterMs).toBeGreaterThan(7_000);
    expect(res.headers.get("Retry-After")).toBe(String(Math.ceil(body.retryAfterMs / 1000)));
    await holder.release();
  });

  it("onBusy and onUnavailable replace the default responses", async () => {
    const rl = new Redlock(env.nodes, { nodeTimeout: 150 });
    const app = new Hono();
    app.post(
      "/custom",
      redlock("lock:custom", {
        redlock: rl,
        onBusy: (c, info) => c.json({ busy: info.resources, retryAfterMs: info.retryAfterMs }, 409),
        onUnavailable: (c, info) => c.json({ down: info.reason }, 502),
      }),
      (c) => c.text("ran"),
    );
    const holder = await rl.acquire(["lock:custom"], 5_000);
    const busy = await app.request("/custom", { method: "POST" });
    expect(busy.status).toBe(409);
    expect(await busy.json()).toMatchObject({ busy: ["lock:custom"], retryAfterMs: expect.any(Number) });
    await holder.release();
    await Promise.all([0, 1, 2].map((i) => env.admins[i].faults({ status: 503 })));
    const down = await app.request("/custom", { method: "POST" });
    expect(down.status).toBe(502);
    expect(await down.json()).toEqual({ down: "unreachable" });
  });

  it("quorum unreachable → 503 with Retry-After, distinguishable from busy; its cause logged once, secret-free", async () => {
    await Promise.all([env.admins[0].kill(), env.admins[1].kill(), env.admins[2].kill()]);
    const errors: unknown[][] = [];
    const original = console.error;
    console.error = (...args: unknown[]) => void errors.push(args);
    try {
      const app = createApp();
      const res = await app.request("/jobs/report/run", { method: "POST" });
      expect(res.status).toBe(503);
      expect(res.headers.get("Retry-After")).toBe("1");
      expect(await res.json()).toEqual({ error: "lock unavailable", reason: "unreachable" });
      await app.request("/jobs/report/run", { method: "POST" });
      const logged = errors.filter((args) => String(args[0]).includes("answering 503"));
      expect(logged).toHaveLength(1);
      expect(String(logged[0][0])).toMatch(/UPSTASH_REDIS_REST_URL_1 \(127\.0\.0\.1:\d+\): redis unavailable/);
      for (const node of env.cluster.nodes) expect(String(logged[0][0])).not.toContain(node.token);
    } finally {
      console.error = original;
    }
  });

  it("a request budget spent behind a holder is busy (423), spent on failing nodes an outage (503)", async () => {
    const rl = new Redlock(env.nodes, { warnings: false, retryDelay: 50, retryJitter: 0 });
    const app = new Hono();
    app.post("/budget", redlock("lock:budget", { redlock: rl, wait: 10_000, maxRequests: 20 }), (c) => c.text("ran"));
    const holder = await rl.acquire(["lock:budget"], 8_000);
    const busy = await app.request("/budget", { method: "POST" });
    expect(busy.status).toBe(423);
    expect(await busy.json()).toMatchObject({ error: "locked", retryAfterMs: expect.any(Number) });
    await holder.release();
    await settle(env);
    await Promise.all([0, 1, 2].map((i) => env.admins[i].faults({ status: 503 })));
    const errors: unknown[][] = [];
    const original = console.error;
    console.error = (...args: unknown[]) => void errors.push(args);
    try {
      const down = await app.request("/budget", { method: "POST" });
      expect(down.status).toBe(503);
      expect(await down.json()).toEqual({ error: "lock unavailable", reason: "budget" });
      // Its logged cause says that more requests would not help.
      const logged = errors.map((args) => String(args[0])).find((line) => line.includes("answering 503"));
      expect(logged).toMatch(/maxRequests .*: the nodes are failing, not busy; the last attempt: quorum impossible/);
      // It counts against the acquisition's share of the 20, and says so.
      expect(logged).toMatch(/of 15 requests sent.*maxRequests less 5, one request per node kept for the release\)$/);
    } finally {
      console.error = original;
    }
  });

  it("Hono's own test pattern on Node: app.request(path, init, env) reads the variables from env, not process.env", async () => {
    const bindings = Object.fromEntries(
      env.cluster.nodes.flatMap((n, i) => [
        [envNames(i + 1).url, n.url],
        [envNames(i + 1).token, n.token],
      ]),
    );
    const saved = Object.fromEntries(names.map((name) => [name, process.env[name]]));
    for (const name of names) delete process.env[name];
    try {
      const app = new Hono();
      app.post("/p", redlock("lock:env"), (c) => c.text("ok"));
      const res = await app.request("/p", { method: "POST" }, bindings);
      expect(res.status, await res.clone().text()).toBe(200);
      const missing = await app.request("/p", { method: "POST" }, { OTHER: "x" });
      expect(await missing.json()).toMatchObject({
        error: "lock not configured",
        source: expect.stringContaining("process.env"),
      });
    } finally {
      for (const name of names) process.env[name] = saved[name];
    }
  });

  it("releases the lock after the handler, also when it throws", async () => {
    const app = new Hono<{ Variables: RedlockVariables }>();
    app.post("/boom", redlock("lock:boom", { redlock: new Redlock(env.nodes) }), () => {
      throw new Error("handler failed");
    });
    app.onError((error, c) => c.json({ error: error.message }, 500));
    const res = await app.request("/boom", { method: "POST" });
    expect(res.status).toBe(500);
    await settle(env); // the release resolved once a quorum answered; the rest lands now
    for (const tcp of env.tcp) expect(await tcp.exists("lock:boom")).toBe(0);
  });

  it("hands the release to executionCtx.waitUntil when there is one", async () => {
    const app = new Hono<{ Variables: RedlockVariables }>();
    app.post("/w", redlock("lock:w", { redlock: new Redlock(env.nodes) }), (c) =>
      c.json({ expiresAt: c.var.lock.expiresAt }),
    );
    const waited: Promise<unknown>[] = [];
    const ctx = {
      waitUntil: (p: Promise<unknown>) => void waited.push(p),
      passThroughOnException: () => {},
      props: {},
    };
    const res = await app.request("/w", { method: "POST" }, {}, ctx);
    expect(res.status).toBe(200);
    expect(waited).toHaveLength(1);
    let released = false;
    void waited[0].then(() => (released = true));
    await Promise.resolve();
    expect(released).toBe(false); // the response did not wait for the release (it needs network I/O)
    await waited[0];
    for (const tcp of env.tcp) expect(await tcp.exists("lock:w")).toBe(0);
  });

  it("extends while the handler runs; a lost lock aborts c.var.lock.signal and marks the response", async () => {
    const app = new Hono<{ Variables: RedlockVariables }>();
    const rl = new Redlock(env.nodes, { nodeTimeout: 300 }); // room for an extension round on a loaded machine
    app.post("/long", redlock("lock:long", { redlock: rl, ttl: 600 }), async (c) => {
      await sleep(1_000);
      const kept = !c.var.lock.signal.aborted;
      await Promise.all([env.admins[0].kill(), env.admins[1].kill(), env.admins[2].kill()]);
      await sleep(800);
      return c.json({
        keptFirstSecond: kept,
        lostAfterKill: c.var.lock.signal.aborted,
        reason: String(c.var.lock.signal.reason?.name),
      });
    });
    const res = await app.request("/long", { method: "POST" });
    expect(await res.json()).toEqual({ keptFirstSecond: true, lostAfterKill: true, reason: "LockExtensionError" });
    expect(res.headers.get("Lock-Lost")).toBe("true");
  });

  it("missing configuration → 500 naming the missing variables (logged once), not a crash", async () => {
    const url3 = process.env.UPSTASH_REDIS_REST_URL_3;
    delete process.env.UPSTASH_REDIS_REST_URL_3;
    const errors: unknown[] = [];
    const original = console.error;
    console.error = (...args: unknown[]) => void errors.push(args);
    try {
      const app = createApp();
      const first = await app.request("/jobs/x/run", { method: "POST" });
      const second = await app.request("/jobs/x/run", { method: "POST" });
      expect(first.status).toBe(500);
      expect(await first.json()).toEqual({
        error: "lock not configured",
        missing: ["UPSTASH_REDIS_REST_URL_3"],
        source: "process.env (c.env holds no UPSTASH_REDIS_REST_* variable)",
      });
      expect(second.status).toBe(500);
      expect(errors).toHaveLength(1);
      expect(String((errors[0] as unknown[])[0])).toContain("(read from process.env");
      // And where to set them.
      expect(String((errors[0] as unknown[])[0])).toContain(
        "Set them in the environment; locally, npx edge-redlock dev",
      );
      expect(JSON.stringify(errors)).not.toContain(env.cluster.nodes[0].token);
    } finally {
      console.error = original;
      process.env.UPSTASH_REDIS_REST_URL_3 = url3;
    }
  });

  it("runs a job exactly once under concurrent calls", async () => {
    const app = createApp();
    const responses = await Promise.all(
      Array.from({ length: 6 }, () => app.request("/jobs/nightly/run", { method: "POST" })),
    );
    const bodies = await Promise.all(
      responses.filter((r) => r.status === 200).map((r) => r.json() as Promise<{ ran: boolean }>),
    );
    // Fail-fast contenders may all lose to a split vote; never may two of them run the job.
    expect(bodies.filter((b) => b.ran).length).toBeLessThanOrEqual(1);
    expect(responses.every((r) => r.status === 200 || r.status === 423)).toBe(true);
    const again = (await (await app.request("/jobs/nightly/run", { method: "POST" })).json()) as { ran: boolean };
    expect(again.ran).toBe(bodies.every((b) => !b.ran)); // runs now only if nobody ran it before
    expect(await env.tcp[0].get("job:nightly:runs")).toBe("1");
  });

  it("status (redlock.inspect) shows, per node, whether a key is held, by whom and for how long", async () => {
    const lock = await new Redlock(env.nodes).acquire(["lock:status"], 9_000);
    await settle(env);
    const body = (await (await createApp().request("/status/lock:status")).json()) as {
      heldByQuorum: boolean;
      freeInMs: number;
      nodes: { held: boolean; pttl: number; holder: string }[];
    };
    expect(body.heldByQuorum).toBe(true);
    expect(body.freeInMs).toBeGreaterThan(8_000);
    for (const node of body.nodes) {
      expect(node.held).toBe(true);
      expect(node.pttl).toBeGreaterThan(8_000);
      expect(node.holder).toBe(body.nodes[0].holder);
    }
    expect(JSON.stringify(body)).not.toContain(lock.value);
    await lock.release();
  });
});
