// Per-node batching inside workerd: one isolate serves many requests at once with a module-scope
// Redlock. A batch must never carry two requests' commands (workerd would cancel the promise one
// request's I/O settles for another, and warn). Runs the worker in workerd through Miniflare, with
// workerd's own log lines captured, against the real cluster.
import { build } from "esbuild";
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useCluster } from "../fixture.ts";

const env = useCluster();
const CROSS_REQUEST = "resolved or rejected from a different request context";
const logs: string[] = [];
let mf: Miniflare;

beforeAll(async () => {
  const bundle = await build({
    entryPoints: ["test/workerd/batching-worker.ts"],
    bundle: true,
    format: "esm",
    platform: "browser",
    conditions: ["workerd", "worker", "browser"],
    write: false,
    logLevel: "silent",
  });
  const nodes = env.cluster.nodes.map(({ url, token }) => ({ url, token }));
  mf = new Miniflare(
    convertV4MiniflareOptions({
      modules: true,
      script: bundle.outputFiles[0].text,
      compatibilityDate: "2026-10-30",
      bindings: { NODES: JSON.stringify(nodes) },
      handleStructuredLogs: (log) => void logs.push(log.message),
    }),
  );
  await mf.ready;
});
afterAll(async () => {
  await mf?.dispose();
});

const call = async (path: string) => {
  const res = await mf.dispatchFetch(`http://worker${path}`, { signal: AbortSignal.timeout(20_000) });
  return { status: res.status, body: await res.text() };
};
const received = async () =>
  (await Promise.all(env.admins.map((a) => a.state()))).reduce((sum, s) => sum + s.counters.received, 0);

describe("batching inside workerd", () => {
  it("negative control: a promise one request creates and another resolves is reported in the captured logs", async () => {
    logs.length = 0;
    await call("/cross-a");
    await call("/cross-b");
    await new Promise((r) => setTimeout(r, 100));
    expect(logs.join("\n")).toContain(CROSS_REQUEST);
  });

  it("24 concurrent requests, each locking 4 items with Promise.all (every third giving up at once): all answer, no cross-request promise", async () => {
    logs.length = 0;
    const results = await Promise.all(
      Array.from({ length: 24 }, (_, i) => call(`/many?n=4&id=concurrent-${i}${i % 3 === 0 ? "&quit" : ""}`)),
    );
    expect(results.map((r) => r.status)).toEqual(Array(24).fill(200));
    results.forEach((r, i) => {
      expect(JSON.parse(r.body)).toMatchObject(i % 3 === 0 ? { gaveUp: expect.any(Number) } : { locked: 4 });
    });
    await new Promise((r) => setTimeout(r, 100));
    expect(logs.filter((line) => line.includes(CROSS_REQUEST))).toEqual([]);
    for (const tcp of env.tcp) {
      const left = await tcp.keys("concurrent-*");
      // Requests that finished normally released everything. One that gave up mid-request may leave a
      // key that landed after its cleanup (the documented residue): it expires within its ttl.
      expect(left.filter((key) => Number(/^concurrent-(\d+):/.exec(key)?.[1]) % 3 !== 0)).toEqual([]);
      for (const key of left) expect(await tcp.pttl(key)).toBeLessThanOrEqual(5_000);
    }
  });

  it("acquiring and releasing 20 uncontended locks in one invocation costs 10 subrequests", async () => {
    // Warm the scripts (first use of a script on a node costs an EVAL after the EVALSHA miss).
    await call("/many?n=1&id=warm");
    await Promise.all(env.admins.map((a) => a.resetCounters()));
    const { status, body } = await call("/many?n=20&id=twenty");
    expect(status).toBe(200);
    const { locked, subrequests } = JSON.parse(body) as { locked: number; subrequests: number };
    expect(locked).toBe(20);
    expect(subrequests).toBe(10); // one pipeline per node to acquire, one to release
    expect(await received()).toBe(10); // the bridges agree
  });
});
