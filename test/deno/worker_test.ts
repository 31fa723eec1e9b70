// Runs under the real `deno`: the cluster from dev/ (imported here, in Deno), the library, and the demo app on Deno.serve.
import assert from "node:assert/strict";
import { holding, settle, nodeAdmin } from "../../dev/admin.ts";
import { startCluster } from "../../dev/cluster.ts";
import { LockAcquisitionError, Redlock, envNames } from "../../src/index.ts";
import { createApp } from "../../worker/app.ts";

const options = { sanitizeOps: false, sanitizeResources: false };

Deno.test("edge-redlock under Deno: library and demo app over HTTP", options, async (t) => {
  const cluster = await startCluster({ nodes: 5 });
  cluster.nodes.forEach((node, i) => {
    Deno.env.set(envNames(i + 1).url, node.url);
    Deno.env.set(envNames(i + 1).token, node.token);
  });
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, createApp().fetch);
  const base = `http://127.0.0.1:${server.addr.port}`;
  try {
    await t.step("acquire, contend, extend, release", async () => {
      const redlock = new Redlock(cluster.nodes, { retryCount: 0 });
      const lock = await redlock.acquire(["deno:lib"], 5_000);
      await assert.rejects(redlock.acquire(["deno:lib"], 5_000), LockAcquisitionError);
      await lock.extend(8_000);
      assert.ok(lock.validityMs > 7_000);
      await settle(cluster.nodes.map((n) => nodeAdmin(n.adminUrl))); // every node's acquire has landed
      const result = await lock.release();
      assert.ok(result.released >= 3); // resolved once a quorum answered
      await result.pending;
      assert.equal(await holding(cluster.nodes, "deno:lib"), 0);
    });

    await t.step("await using releases at scope exit", async () => {
      const redlock = new Redlock(cluster.nodes, { retryCount: 0 });
      {
        await using lock = await redlock.acquire(["deno:scoped"], 5_000);
        assert.equal(lock.attempts, 1);
      }
      await (await redlock.acquire(["deno:scoped"], 5_000)).release();
    });

    await t.step("N concurrent reservations on stock S < N over HTTP: exactly S succeed", async () => {
      await (
        await fetch(`${base}/stock/deno-widget`, { method: "PUT", body: JSON.stringify({ count: 3 }) })
      ).body?.cancel();
      const responses = await Promise.all(
        Array.from({ length: 7 }, () => fetch(`${base}/stock/deno-widget/reserve?wait=15000`, { method: "POST" })),
      );
      const statuses = await Promise.all(
        responses.map(async (r) => {
          await r.body?.cancel();
          return r.status;
        }),
      );
      assert.deepEqual(statuses.sort(), [200, 200, 200, 409, 409, 409, 409]);
      assert.deepEqual(await (await fetch(`${base}/stock/deno-widget`)).json(), {
        count: 0,
        reserved: 3,
        orders: 3,
        oversold: 0,
      });
    });

    await t.step(
      "semaphore: at most its limit at once, in the library and on the demo's render route over HTTP",
      async () => {
        const redlock = new Redlock(cluster.nodes, { retryDelay: 30, retryJitter: 20 });
        let inside = 0;
        let most = 0;
        await Promise.all(
          Array.from({ length: 5 }, () =>
            redlock.semaphore("deno:sem", 2).using(
              5_000,
              async () => {
                most = Math.max(most, ++inside);
                await new Promise((r) => setTimeout(r, 80));
                inside--;
              },
              { retryCount: -1, maxWait: 10_000 },
            ),
          ),
        );
        assert.equal(most, 2);
        await (await fetch(`${base}/renders`, { method: "DELETE" })).body?.cancel();
        const responses = await Promise.all(
          Array.from({ length: 4 }, (_, i) => fetch(`${base}/renders/deno${i}?wait=15000`, { method: "POST" })),
        );
        const statuses = await Promise.all(
          responses.map(async (r) => {
            await r.body?.cancel();
            return r.status;
          }),
        );
        assert.deepEqual(statuses, [200, 200, 200, 200]);
        const log = (await (await fetch(`${base}/renders`)).json()) as { runs: number; mostAtOnce: number };
        assert.equal(log.runs, 4);
        assert.equal(log.mostAtOnce, 2);
      },
    );

    await t.step(
      "read-write lock: readers share it, a writer is alone, in the library and on the demo's document route",
      async () => {
        const doc = new Redlock(cluster.nodes, { retryCount: 0 }).readWriteLock("deno:rw");
        const readers = [await doc.acquireRead(5_000), await doc.acquireRead(5_000)];
        await assert.rejects(doc.acquireWrite(5_000), LockAcquisitionError);
        for (const reader of readers) await (await reader.release()).pending;
        const writer = await doc.acquireWrite(5_000, { fencing: true });
        assert.match(writer.fence ?? "", /^[0-9]+$/);
        await assert.rejects(doc.acquireRead(5_000), LockAcquisitionError);
        await (await writer.release()).pending;

        await (await fetch(`${base}/docs/deno-doc/runs`, { method: "DELETE" })).body?.cancel();
        const reads = Array.from({ length: 3 }, () => fetch(`${base}/docs/deno-doc?wait=15000`));
        await new Promise((r) => setTimeout(r, 100));
        const write = fetch(`${base}/docs/deno-doc?wait=15000`, { method: "PUT", body: "v2" });
        await new Promise((r) => setTimeout(r, 100));
        const after = Array.from({ length: 3 }, () => fetch(`${base}/docs/deno-doc?wait=15000`));
        const responses = await Promise.all([...reads, write, ...after]);
        const statuses = await Promise.all(
          responses.map(async (r) => {
            await r.body?.cancel();
            return r.status;
          }),
        );
        assert.deepEqual(statuses, Array(7).fill(200));
        const runs = (await (await fetch(`${base}/docs/deno-doc/runs`)).json()) as {
          runs: number;
          writerOverlaps: number;
          mostReadersAtOnce: number;
        };
        assert.equal(runs.runs, 7);
        assert.equal(runs.writerOverlaps, 0);
        assert.ok(runs.mostReadersAtOnce >= 2);
      },
    );

    await t.step("busy → 423 with Retry-After", async () => {
      const holder = await new Redlock(cluster.nodes).acquire(["lock:stock:deno-busy"], 6_000);
      const res = await fetch(`${base}/stock/deno-busy/reserve`, { method: "POST" });
      assert.equal(res.status, 423);
      assert.ok(Number(res.headers.get("Retry-After")) >= 5);
      await res.body?.cancel();
      await holder.release();
    });
  } finally {
    await server.shutdown();
    await cluster.stop();
  }
});
