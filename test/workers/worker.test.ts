// Runs inside workerd: the demo worker and the library itself, against the real cluster.
import { exports } from "cloudflare:workers";
import { describe, expect, inject, it } from "vitest";
import { nodeAdmin, settle } from "../../dev/admin.ts";
import { LockAcquisitionError, Redlock } from "../../src/index.ts";

const nodes = inject("clusterNodes");
const admins = nodes.map((n) => nodeAdmin(n.adminUrl));
const worker = (path: string, init?: RequestInit) => exports.default.fetch(new Request(`http://demo${path}`, init));

describe("inside workerd", () => {
  it("the library acquires, contends, extends and releases with Web Crypto, fetch and AbortSignal.timeout", async () => {
    const redlock = new Redlock(nodes, { retryCount: 0 });
    const lock = await redlock.acquire(["wd:lib"], 5_000);
    expect(lock.value).toMatch(/^[0-9a-f]{40}$/);
    await expect(redlock.acquire(["wd:lib"], 5_000)).rejects.toBeInstanceOf(LockAcquisitionError);
    await lock.extend(8_000);
    expect(lock.validityMs).toBeGreaterThan(7_000);
    await settle(admins); // every node's acquire has landed, so all five can release
    expect((await lock.release()).released).toBe(5);
  });

  it("await using releases at scope exit", async () => {
    const redlock = new Redlock(nodes, { retryCount: 0 });
    {
      await using lock = await redlock.acquire(["wd:scoped"], 5_000);
      expect(lock.attempts).toBe(1);
    }
    const again = await redlock.acquire(["wd:scoped"], 5_000);
    await again.release();
  });

  it("a hung node is cut at nodeTimeout inside workerd", async () => {
    await admins[0].faults({ hang: true });
    try {
      const lock = await new Redlock(nodes, { nodeTimeout: 200 }).acquire(["wd:hung"], 5_000);
      const result = await lock.release();
      expect(result.votes[0]).toMatchObject({ outcome: "error", cause: "timeout" });
    } finally {
      await admins[0].reset();
    }
  });

  it("N concurrent reservations on stock S < N: exactly S succeed, the rest wait then see sold out", async () => {
    await worker("/stock/wd-widget", { method: "PUT", body: JSON.stringify({ count: 3 }) });
    const responses = await Promise.all(Array.from({ length: 6 }, () => worker("/stock/wd-widget/reserve?wait=15000", { method: "POST" })));
    expect(responses.map((r) => r.status).sort()).toEqual([200, 200, 200, 409, 409, 409]);
    expect(await (await worker("/stock/wd-widget")).json()).toEqual({ count: 0, reserved: 3, orders: 3, oversold: 0 });
  });

  it("fail-fast contention: successes never exceed the stock, the others get 423, the stock stays consistent", async () => {
    await worker("/stock/wd-fast", { method: "PUT", body: JSON.stringify({ count: 2 }) });
    const responses = await Promise.all(Array.from({ length: 5 }, () => worker("/stock/wd-fast/reserve", { method: "POST" })));
    const statuses = responses.map((r) => r.status);
    const ok = statuses.filter((s) => s === 200).length;
    expect(ok).toBeLessThanOrEqual(2); // all five may also lose to a split vote: fail fast means no retry
    expect(statuses.every((s) => s === 200 || s === 423)).toBe(true);
    const stock = (await (await worker("/stock/wd-fast")).json()) as { count: number; reserved: number };
    expect(stock).toEqual({ count: 2 - ok, reserved: ok, orders: ok, oversold: 0 });
  });

  it("busy → 423 with Retry-After", async () => {
    const holder = await new Redlock(nodes).acquire(["lock:stock:wd-busy"], 6_000);
    const res = await worker("/stock/wd-busy/reserve", { method: "POST" });
    expect(res.status).toBe(423);
    expect(Number(res.headers.get("Retry-After"))).toBeGreaterThanOrEqual(5);
    expect(await res.json()).toMatchObject({ error: "locked", resource: "lock:stock:wd-busy" });
    await holder.release();
  });

  it("unreachable quorum → 503", async () => {
    await Promise.all([0, 1, 2].map((i) => admins[i].faults({ status: 503 })));
    try {
      const res = await worker("/jobs/wd-job/run", { method: "POST" });
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ error: "lock unavailable", reason: "unreachable" });
    } finally {
      await Promise.all(admins.map((a) => a.reset()));
    }
  });

  it("handler throws → the lock is released", async () => {
    // /jobs/:name/run throws inside the handler when the store holds a non-numeric run counter.
    const redlock = new Redlock(nodes);
    const store = nodes[0];
    await fetch(store.url, { method: "POST", headers: { authorization: `Bearer ${store.token}` }, body: JSON.stringify(["set", "job:wd-throw:runs", "not a number"]) });
    const res = await worker("/jobs/wd-throw/run", { method: "POST" });
    expect(res.status).toBe(500);
    // The release runs through waitUntil; the lock's ttl is 5 s, so getting it within 2 s proves it was released.
    const lock = await redlock.acquire(["lock:job:wd-throw"], 5_000, { maxWait: 2_000, retryDelay: 50, retryJitter: 25 });
    await lock.release();
  });
});
