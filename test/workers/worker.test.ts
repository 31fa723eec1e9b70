// Runs inside workerd: the demo worker and the library itself, against the real cluster.
import { exports } from "cloudflare:workers";
import { describe, expect, inject, it } from "vitest";
import { holding, nodeAdmin, settle } from "../../dev/admin.ts";
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
    const result = await lock.release();
    expect(result.released).toBeGreaterThanOrEqual(3); // resolved once a quorum answered
    await result.pending;
    expect(await holding(nodes, "wd:lib")).toBe(0);
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
      expect(result.votes[0]).toMatchObject({ outcome: "unanswered" }); // release did not wait for the hung node
      await result.pending; // its request is cut at nodeTimeout
    } finally {
      await admins[0].reset();
    }
    expect(await holding(nodes, "wd:hung")).toBe(0); // the hung node's acquire was cut before it ran
  });

  it("N concurrent reservations on stock S < N: exactly S succeed, the rest wait then see sold out", async () => {
    await worker("/stock/wd-widget", { method: "PUT", body: JSON.stringify({ count: 3 }) });
    const responses = await Promise.all(
      Array.from({ length: 6 }, () => worker("/stock/wd-widget/reserve?wait=15000", { method: "POST" })),
    );
    expect(responses.map((r) => r.status).sort()).toEqual([200, 200, 200, 409, 409, 409]);
    expect(await (await worker("/stock/wd-widget")).json()).toEqual({ count: 0, reserved: 3, orders: 3, oversold: 0 });
  });

  it("fail-fast contention: successes never exceed the stock, the others get 423, the stock stays consistent", async () => {
    await worker("/stock/wd-fast", { method: "PUT", body: JSON.stringify({ count: 2 }) });
    const responses = await Promise.all(
      Array.from({ length: 5 }, () => worker("/stock/wd-fast/reserve", { method: "POST" })),
    );
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

  it("a streamed response holds the lock until its last line is out, then releases it through waitUntil", async () => {
    const first = await worker("/reports/wd-stream/stream?lines=8", { method: "POST" });
    expect(first.status).toBe(200);
    const reader = first.body!.getReader();
    await reader.read();
    // Mid-stream: a second run of the same report is refused while the first still streams.
    await new Promise((r) => setTimeout(r, 300));
    const second = await worker("/reports/wd-stream/stream?lines=1", { method: "POST" });
    expect(second.status).toBe(423);
    await second.body?.cancel();
    let text = "";
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
      text += new TextDecoder().decode(chunk.value);
    expect(text).toContain("line 8 of 8");
    // Released after the body ended: the lock's ttl is 2 s, so getting it within 1.5 s proves it was released.
    const lock = await new Redlock(nodes).acquire(["lock:report:wd-stream"], 2_000, {
      maxWait: 1_500,
      retryDelay: 50,
      retryJitter: 25,
    });
    await lock.release();
  });

  it("a semaphore route: concurrent renders across requests of the isolate, never more than 2 at once; status reads through inspect", async () => {
    await worker("/renders", { method: "DELETE" });
    const responses = await Promise.all(
      Array.from({ length: 5 }, (_, i) => worker(`/renders/wd${i}?wait=15000`, { method: "POST" })),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(5).fill(200));
    const log = (await (await worker("/renders")).json()) as { runs: number; mostAtOnce: number };
    expect(log).toMatchObject({ runs: 5, mostAtOnce: 2 });
    const status = (await (await worker("/status/nothing-here")).json()) as {
      heldByQuorum: boolean;
      freeInMs: number;
      nodes: unknown[];
    };
    expect(status).toMatchObject({ heldByQuorum: false, freeInMs: 0 });
    expect(status.nodes).toHaveLength(5);
  });

  it("a read-write lock in workerd: readers share it, a writer is alone; the demo's document route over requests", async () => {
    const doc = new Redlock(nodes, { retryCount: 0 }).readWriteLock("wd:rw");
    const readers = [await doc.acquireRead(5_000), await doc.acquireRead(5_000)];
    await expect(doc.acquireWrite(5_000)).rejects.toBeInstanceOf(LockAcquisitionError);
    await settle(admins);
    expect(await doc.inspect()).toMatchObject({ readers: 2, writer: false });
    for (const reader of readers) await (await reader.release()).pending;
    await using writer = await doc.acquireWrite(5_000, { fencing: true });
    expect(writer.fence).toMatch(/^[0-9]+$/);
    await expect(doc.acquireRead(5_000)).rejects.toBeInstanceOf(LockAcquisitionError);

    await worker("/docs/wd-doc/runs", { method: "DELETE" });
    const reads = Array.from({ length: 3 }, () => worker("/docs/wd-doc?wait=15000"));
    await new Promise((r) => setTimeout(r, 100));
    const write = worker("/docs/wd-doc?wait=15000", { method: "PUT", body: "v2" });
    await new Promise((r) => setTimeout(r, 100));
    const after = Array.from({ length: 3 }, () => worker("/docs/wd-doc?wait=15000"));
    const responses = await Promise.all([...reads, write, ...after]);
    expect(responses.map((r) => r.status)).toEqual(Array(7).fill(200));
    const runs = (await (await worker("/docs/wd-doc/runs")).json()) as {
      runs: number;
      writerOverlaps: number;
      mostReadersAtOnce: number;
    };
    expect(runs).toMatchObject({ runs: 7, writerOverlaps: 0 });
    expect(runs.mostReadersAtOnce).toBeGreaterThanOrEqual(2);
  });

  it("handler throws → the lock is released", async () => {
    // /jobs/:name/run throws inside the handler when the store holds a non-numeric run counter.
    const redlock = new Redlock(nodes);
    const store = nodes[0];
    await fetch(store.url, {
      method: "POST",
      headers: { authorization: `Bearer ${store.token}` },
      body: JSON.stringify(["set", "job:wd-throw:runs", "not a number"]),
    });
    const res = await worker("/jobs/wd-throw/run", { method: "POST" });
    expect(res.status).toBe(500);
    // The release runs through waitUntil; the lock's ttl is 5 s, so getting it within 2 s proves it was released.
    const lock = await redlock.acquire(["lock:job:wd-throw"], 5_000, {
      maxWait: 2_000,
      retryDelay: 50,
      retryJitter: 25,
    });
    await lock.release();
  });
});
