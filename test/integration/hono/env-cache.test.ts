// The middlewares build their Redlock from the environment once per isolate and keep it; when readWrite() needs the
// full Redlock while redlock() requests hold locks taken by the cached RedlockMutex, the cache entry is replaced and
// the locks already held stay held: extended by the old instance, excluding the new one, and released clean.
// A file of its own: the cache lives for the test file's module graph.
import { Hono } from "hono";
import { expect, it } from "vitest";
import { envNames, Redlock } from "../../../src/index.ts";
import { readWrite, redlock } from "../../../src/hono/index.ts";
import { settle, useCluster } from "../fixture.ts";

const env = useCluster();

it("redlock() holds across the cache swap: extended by the old instance, excluding the new one, released clean", async () => {
  const vars: Record<string, string> = {};
  env.cluster.nodes.forEach((n, i) => {
    vars[envNames(i + 1).url] = n.url;
    vars[envNames(i + 1).token] = n.token;
  });
  let open: () => void = () => {};
  const gate = new Promise<void>((r) => (open = r));
  let inside = 0;
  let most = 0;
  const app = new Hono()
    .post("/m", redlock("swap:k", { ttl: 1_200 }), async (c) => {
      inside++;
      most = Math.max(most, inside);
      if (c.req.query("hold")) await gate;
      inside--;
      return c.text(c.var.lock.signal.aborted ? "lost" : "ok");
    })
    .get("/r", readWrite("swap:doc"), (c) => c.text(c.var.lock.mode));
  // Someone else holds the key: the first request waits for it inside the old (mutex) instance's acquisition.
  const outsider = new Redlock(env.nodes);
  const other = await outsider.acquire(["swap:k"], 1_000);
  const first = app.request("/m?hold=1", { method: "POST" }, vars);
  // Without wait the first one is refused: take it again once the outsider is gone.
  expect((await first).status).toBe(423);
  await other.release();
  const holder = app.request("/m?hold=1", { method: "POST" }, vars);
  await new Promise((r) => setTimeout(r, 100));
  // readWrite() replaces the cache entry with a full Redlock.
  expect((await app.request("/r", {}, vars)).status).toBe(200);
  // The new instance must not get the key while the old one holds it, through several extensions.
  for (let i = 0; i < 5; i++) {
    const res = await app.request("/m", { method: "POST" }, vars);
    expect(res.status).toBe(423);
    await new Promise((r) => setTimeout(r, 500));
  }
  open();
  const done = await holder;
  expect([done.status, await done.text()]).toEqual([200, "ok"]);
  expect(most).toBe(1);
  await new Promise((r) => setTimeout(r, 50));
  await settle(env);
  for (const tcp of env.tcp) expect(await tcp.exists("swap:k")).toBe(0);
  const again = await app.request("/m", { method: "POST" }, vars);
  expect(again.status).toBe(200);
});
