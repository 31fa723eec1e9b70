// The edge-redlock/mutex entry inside workerd, against the cluster: its Redlock is the root's RedlockMutex, acquires,
// contends and releases; redlock() and then readWrite() built from the bindings each get a Redlock they can use.
import { Hono } from "hono";
import { expect, inject, it } from "vitest";
import { envNames, Redlock as FullRedlock } from "../../src/index.ts";
import { readWrite, redlock } from "../../src/hono/index.ts";
import { Redlock, RedlockMutex } from "../../src/mutex/index.ts";

const nodes = inject("clusterNodes");
const env = Object.fromEntries(
  nodes.flatMap((n, i) => [
    [envNames(i + 1).url, n.url],
    [envNames(i + 1).token, n.token],
  ]),
);

it("the mutex entry's Redlock acquires, contends and releases in workerd; redlock() then readWrite() from the bindings", async () => {
  const mutex = new Redlock(nodes, { retryCount: 0 });
  expect(Redlock).toBe(RedlockMutex);
  expect(new FullRedlock(nodes)).toBeInstanceOf(Redlock);
  {
    await using lock = await mutex.acquire(["workerd-mutex:m"], 5_000);
    await expect(new FullRedlock(nodes, { retryCount: 0 }).acquire(["workerd-mutex:m"], 5_000)).rejects.toThrow();
    expect(lock.validityMs).toBeGreaterThan(0);
  }
  const app = new Hono()
    .post("/m", redlock("workerd-mutex:env"), (c) => c.text("m"))
    .get("/r", readWrite("workerd-mutex:doc"), (c) => c.text(c.var.lock.mode));
  const seen = [];
  for (const [method, path] of [
    ["POST", "/m"],
    ["GET", "/r"],
    ["POST", "/m"],
  ])
    seen.push((await app.request(path, { method }, env)).status);
  expect(seen).toEqual([200, 200, 200]);
});
