// The semaphore, inspection and the semaphore() middleware on five real redis-server nodes.
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, Redlock, envNames } from "../../../src/index.ts";
import { semaphore, type SemaphoreVariables } from "../../../src/hono/index.ts";
import { createApp } from "../../../worker/app.ts";
import { settle, until, useCluster } from "../fixture.ts";

const env = useCluster();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs as they happened: each records its start and end. */
function runLog() {
  const runs: { start: number; end: number }[] = [];
  return {
    runs,
    async run(ms: number) {
      const start = performance.now();
      await sleep(ms);
      runs.push({ start, end: performance.now() });
    },
    mostAtOnce: () => Math.max(0, ...runs.map((r) => runs.filter((o) => o.start <= r.start && r.start < o.end).length)),
  };
}

describe("semaphore (real Redis)", () => {
  it("8 concurrent holders for a limit of 3: never more than 3 inside at once, and 3 at times", async () => {
    const redlock = new Redlock(env.nodes, { retryDelay: 30, retryJitter: 20 });
    const log = runLog();
    await Promise.all(
      Array.from({ length: 8 }, () =>
        redlock.semaphore("sem:eight", 3).using(5_000, () => log.run(150), { retryCount: -1, maxWait: 10_000 }),
      ),
    );
    expect(log.runs).toHaveLength(8);
    expect(log.mostAtOnce()).toBeLessThanOrEqual(3);
    expect(log.mostAtOnce()).toBe(3);
  });

  it("full: LockAcquisitionError held, with when the soonest permit expires", async () => {
    const redlock = new Redlock(env.nodes, { retryCount: 3, retryDelay: 20, retryJitter: 0 });
    const s = redlock.semaphore("sem:full", 2);
    const held = [await s.acquire(6_000), await s.acquire(8_000)];
    const error = (await s.acquire(5_000, { retryCount: 0 }).catch((e: unknown) => e)) as LockAcquisitionError;
    expect(error).toBeInstanceOf(LockAcquisitionError);
    expect(error.reason).toBe("held");
    expect(error.retryAfterMs).toBeGreaterThan(5_000);
    expect(error.retryAfterMs).toBeLessThanOrEqual(6_000);
    await settle(env);
    const seen = await s.inspect();
    expect(seen).toMatchObject({ key: "sem:full", limit: 2, held: 2 });
    expect(seen.soonestExpiresInMs).toBeGreaterThan(5_000);
    expect(seen.nodes.map((n) => n.held)).toEqual([2, 2, 2, 2, 2]);
    for (const permit of held) await (await permit.release()).pending;
    expect((await s.inspect()).held).toBe(0);
  });

  it("a permit is taken on nodes that reject the key-locking flag, once they fell back", async () => {
    await Promise.all([0, 1].map((i) => env.admins[i].faults({ rejectKeyLocking: true })));
    const permit = await new Redlock(
      env.cluster.nodes.map(({ url, token }) => ({ url, token })),
      { retryCount: 2 },
    )
      .semaphore("sem:flag", 1)
      .acquire(3_000);
    await settle(env);
    expect(await env.tcp[0].get(`edge-redlock:semaphore:sem:flag:${permit.slot}`)).toBe(permit.value);
    await permit.release();
  });

  it("redlock.inspect reads every node without taking anything, and never shows the value", async () => {
    const redlock = new Redlock(env.nodes);
    const lock = await redlock.acquire(["insp:k"], 9_000);
    await settle(env);
    await env.admins[4].faults({ status: 503 });
    const seen = await redlock.inspect("insp:k");
    expect(seen.heldByQuorum).toBe(true);
    expect(seen.nodes.slice(0, 4).map((n) => n.held)).toEqual([true, true, true, true]);
    expect(seen.nodes[4]).toMatchObject({ held: false, error: expect.stringContaining("503") });
    expect(new Set(seen.nodes.slice(0, 4).map((n) => n.holder)).size).toBe(1);
    expect(seen.freeInMs).toBeGreaterThan(8_000);
    expect(JSON.stringify(seen)).not.toContain(lock.value);
    // Nothing was written: the key's TTL is the acquire's, not reset.
    const counts = (await Promise.all(env.admins.map((a) => a.state()))).map((s) => s.counters.commands);
    expect(counts.slice(0, 4).every((c) => !("set" in c))).toBe(true);
    await env.admins[4].reset();
    await (await lock.release()).pending;
    expect(await redlock.inspect("insp:k")).toMatchObject({ heldByQuorum: false, freeInMs: 0 });
  });
});

describe("semaphore() middleware (real Redis)", () => {
  it("full → 429 with Retry-After; unreachable → 503; the permit is extended while the handler runs and released after", async () => {
    const redlock = new Redlock(env.nodes);
    const app = new Hono<{ Variables: SemaphoreVariables }>();
    let running = false;
    app.post("/work", semaphore("mw:sem", { limit: 1, ttl: 600, redlock }), async (c) => {
      running = true;
      await sleep(1_200); // past the ttl: held only because it is extended
      return c.json({ slot: c.var.permit.permit.slot, aborted: c.var.permit.signal.aborted });
    });
    const first = app.request("/work", { method: "POST" });
    await until(async () => running, 5_000);
    await sleep(700); // past the permit's first ttl
    expect((await redlock.semaphore("mw:sem", 1).inspect()).held).toBe(1);
    const busy = await app.request("/work", { method: "POST" });
    expect(busy.status).toBe(429);
    expect(Number(busy.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
    expect(await busy.json()).toMatchObject({ error: "too many concurrent requests", semaphore: "mw:sem", limit: 1 });
    const done = await first;
    expect(await done.json()).toEqual({ slot: 0, aborted: false });
    await settle(env);
    expect((await redlock.semaphore("mw:sem", 1).inspect()).held).toBe(0);
    await Promise.all([0, 1, 2].map((i) => env.admins[i].faults({ status: 503 })));
    const down = await app.request("/work", { method: "POST" });
    expect(down.status).toBe(503);
    expect(await down.json()).toEqual({ error: "lock unavailable", reason: "unreachable" });
  });

  it("the demo's render route: 6 concurrent runs, each waiting its turn, never more than 2 at once", async () => {
    const app = createApp({ redlock: new Redlock(env.nodes) });
    for (const [i, node] of env.cluster.nodes.entries()) {
      process.env[envNames(i + 1).url] = node.url;
      process.env[envNames(i + 1).token] = node.token;
    }
    await app.request("/renders", { method: "DELETE" });
    const responses = await Promise.all(
      Array.from({ length: 6 }, (_, i) => app.request(`/renders/r${i}?wait=15000`, { method: "POST" })),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(6).fill(200));
    const log = (await (await app.request("/renders")).json()) as { runs: number; mostAtOnce: number };
    expect(log.runs).toBe(6);
    expect(log.mostAtOnce).toBe(2);
  });

  it("refuses a bad limit when the route is defined", () => {
    for (const limit of [0, 1.5, 101, Number.NaN]) expect(() => semaphore("s", { limit })).toThrow(/limit/);
    expect(() => semaphore("s", undefined as never)).toThrow(/limit/);
  });
});
