// The `edge-redlock/mutex` entry on the real cluster: its Redlock is the mutex alone, the root's Redlock extends
// it, and the Hono middlewares take the one they can use (and refuse the other in their own words).
import { Hono } from "hono";
import { beforeAll, describe, expect, it } from "vitest";
import {
  InvalidArgumentError,
  Redlock as FullRedlock,
  RedlockMutex,
  envNames,
  LockAcquisitionError,
} from "../../../src/index.ts";
import { Redlock } from "../../../src/mutex/index.ts";
import { readWrite, redlock, semaphore } from "../../../src/hono/index.ts";
import { textsOf, useCluster } from "../fixture.ts";

const env = useCluster();

describe("edge-redlock/mutex", () => {
  it("its Redlock takes, contends for and releases a lock, and has no semaphore, readWriteLock or inspect", async () => {
    const holder = new Redlock(env.nodes);
    const rival = new Redlock(env.nodes, { retryCount: 0 });
    expect(Redlock).toBe(RedlockMutex);
    const lock = await holder.acquire(["mutex-entry:a"], 5_000);
    const refused = await rival.acquire(["mutex-entry:a"], 5_000).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(LockAcquisitionError);
    expect((refused as LockAcquisitionError).reason).toBe("held");
    expect((await lock.release()).released).toBeGreaterThanOrEqual(3);
    const next = await rival.acquire(["mutex-entry:a"], 5_000);
    expect(next.value).not.toBe(lock.value);
    await next.release();
    for (const method of ["semaphore", "readWriteLock", "inspect"]) expect(method in holder).toBe(false);
  });

  it("the root's Redlock is a RedlockMutex with the three more; neither shows its nodes' tokens in any property", async () => {
    const nodes = env.cluster.nodes.map((n) => ({ url: n.url, token: n.token }));
    const full = new FullRedlock(nodes);
    const mutex = new Redlock(nodes);
    expect(full).toBeInstanceOf(RedlockMutex);
    expect(mutex).not.toBeInstanceOf(FullRedlock);
    expect(typeof full.semaphore).toBe("function");
    const lock = await full.acquire(["mutex-entry:b"], 5_000);
    expect((await full.inspect(["mutex-entry:b"])).heldByQuorum).toBe(true);
    await lock.release();
    for (const text of [...textsOf(full), ...textsOf(mutex)])
      for (const { token } of nodes) expect(text).not.toContain(token);
  });

  it("fromEnv of each class makes that class", () => {
    const vars = Object.fromEntries(
      env.cluster.nodes.flatMap((n, i) => [
        [envNames(i + 1).url, n.url],
        [envNames(i + 1).token, n.token],
      ]),
    );
    expect(Redlock.fromEnv(vars)).not.toBeInstanceOf(FullRedlock);
    expect(FullRedlock.fromEnv(vars)).toBeInstanceOf(FullRedlock);
  });
});

describe("the Hono middlewares and the two classes", () => {
  const vars: Record<string, string> = {};
  beforeAll(() => {
    env.cluster.nodes.forEach((n, i) => {
      vars[envNames(i + 1).url] = n.url;
      vars[envNames(i + 1).token] = n.token;
    });
  });

  it("redlock() guards a route with the mutex entry's Redlock: 200, then 423 while another holds the key", async () => {
    const mutex = new Redlock(env.nodes);
    const app = new Hono().post("/pay", redlock("mutex-entry:pay", { redlock: mutex }), (c) =>
      c.text(c.var.lock.lock.value.length > 0 ? "paid" : "?"),
    );
    const paid = await app.request("/pay", { method: "POST" });
    expect([paid.status, await paid.text()]).toEqual([200, "paid"]);
    const other = await new FullRedlock(env.nodes).acquire(["mutex-entry:pay"], 5_000);
    expect((await app.request("/pay", { method: "POST" })).status).toBe(423);
    await other.release();
  });

  it("semaphore() and readWrite() refuse the mutex entry's Redlock when the route is defined, naming why", () => {
    const mutex = new Redlock(env.nodes) as unknown as FullRedlock;
    for (const define of [
      () => semaphore("mutex-entry:s", { limit: 2, redlock: mutex }),
      () => readWrite("mutex-entry:rw", { redlock: mutex }),
    ]) {
      const error = (() => {
        try {
          define();
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect((error as Error).message).toMatch(
        /options\.redlock.*edge-redlock\/mutex has no semaphore\(\) or readWriteLock\(\)/,
      );
    }
    expect(() => redlock("mutex-entry:r", { redlock: {} as Redlock })).toThrow(InvalidArgumentError);
  });

  it("a factory that returns the mutex entry's Redlock to readWrite() fails the request with InvalidArgumentError", async () => {
    const mutex = new Redlock(env.nodes) as unknown as FullRedlock;
    const errors: unknown[] = [];
    const app = new Hono().get("/doc", readWrite("mutex-entry:doc", { redlock: () => mutex }), (c) => c.text("read"));
    app.onError((error, c) => {
      errors.push(error);
      return c.text("failed", 500);
    });
    expect((await app.request("/doc")).status).toBe(500);
    expect(errors[0]).toBeInstanceOf(InvalidArgumentError);
    expect((errors[0] as Error).message).toMatch(/options\.redlock must return a Redlock of edge-redlock/);
  });

  it("from the environment: redlock() and readWrite() in one app each get a Redlock they can use", async () => {
    const app = new Hono()
      .post("/m", redlock("mutex-entry:env-m"), (c) => c.text("mutex"))
      .get("/r", readWrite("mutex-entry:env-r"), (c) => c.text(c.var.lock.mode))
      .put("/r", readWrite("mutex-entry:env-r"), (c) => c.text(c.var.lock.mode));
    const answers = [];
    for (const [method, path] of [
      ["POST", "/m"],
      ["GET", "/r"],
      ["POST", "/m"],
      ["PUT", "/r"],
    ]) {
      const res = await app.request(path, { method }, vars);
      answers.push(`${res.status} ${await res.text()}`);
    }
    expect(answers).toEqual(["200 mutex", "200 read", "200 mutex", "200 write"]);
  });
});
