// A fair waiter's failed attempt keeps its place in line, on five real redis-server nodes through the REST bridge:
// where the attempt was granted (nodes 0 and 1) the undo (REQUEUE) puts its ticket back in line, and once the waiter
// holds nothing of it is left in line. A waiter that can never reach a quorum does not keep the others out: the lock
// stays available to those who can.
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, Redlock, type Lock, type RedlockNode } from "../../../src/index.ts";
import { loadScripts, settle, useCluster } from "../fixture.ts";

const env = useCluster();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const LINE = (key: string) => `edge-redlock:line:${key}`;

describe("fair waiting on the real cluster: a failed attempt", () => {
  it("a failed attempt granted on nodes 0 and 1 puts the ticket back in line there (REQUEUE), and leaves none once held", async () => {
    await Promise.all([2, 3, 4].map((n) => env.tcp[n].set("requeue", "someone-else", "PX", 400)));
    const inLine: number[][] = env.nodes.map(() => []);
    const watched: RedlockNode[] = env.nodes.map((node, i) => ({
      label: node.label,
      run: (script, keys, args, signal) =>
        node.run(script, keys, args, signal).then(async (reply) => {
          if (script.name === "requeue") inLine[i].push(await env.tcp[i].zcard(LINE("requeue")));
          return reply;
        }),
    }));
    const lock = await new Redlock(watched).acquire(["requeue"], 2_000, { maxWait: 3_000 });
    expect(lock.attempts).toBeGreaterThan(1);
    expect(inLine[0].length).toBeGreaterThan(0);
    expect([...inLine[0], ...inLine[1]].every((n) => n === 1)).toBe(true);
    expect(inLine.slice(2).flat()).toEqual([]);
    await lock.release();
    await settle(env);
    expect(await Promise.all(env.tcp.map((c) => c.zcard(LINE("requeue"))))).toEqual([0, 0, 0, 0, 0]);
  });
});

/** A client of its own: one link per node, so faults can cut this client alone. */
async function linkedClient(name: string, options: ConstructorParameters<typeof Redlock>[1] = {}) {
  const urls = await Promise.all(env.admins.map((a) => a.addLink(name)));
  const redlock = new Redlock(
    urls.map((url, n) => ({ url, token: env.cluster.nodes[n].token })),
    options,
  );
  const reach = (nodes: number[]) =>
    Promise.all(env.admins.map((a, n) => a.linkFaults(name, { cut: !nodes.includes(n) })));
  return { redlock, reach };
}

describe("a waiter that can never reach a quorum (real cluster)", () => {
  it("a waiter that cannot reach a quorum does not keep the others out: the lock stays available to those who can", async () => {
    await loadScripts(env);
    // Node 4 is down for everyone; the early waiter also lost its route to nodes 2 and 3: it reaches only 0 and 1,
    // never a quorum. Everyone else reaches 0..3: a quorum of live nodes, and the key is free there.
    await env.admins[4].kill();
    const holder = await new Redlock(env.nodes, { retryCount: 0 }).acquire(["cut-off"], 1_000);
    const early = await linkedClient("early", { nodeTimeout: 150 });
    await early.reach([0, 1, 2, 3, 4]);
    const stopEarly = new AbortController();
    const earlyWait = early.redlock
      .acquire(["cut-off"], 1_000, { retryCount: -1, signal: stopEarly.signal })
      .then((lock) => lock.release().then(() => "held" as const))
      .catch(() => "gave up" as const);
    // It is in line on the live nodes before the partition.
    for (
      let i = 0;
      i < 200 && (await Promise.all([0, 1, 2, 3].map((n) => env.tcp[n].zcard(LINE("cut-off"))))).some((c) => c !== 1);
      i++
    )
      await sleep(5);
    await early.reach([0, 1]);
    await holder.release();
    // Everyone else: the early waiter sits ahead of them on nodes 0 and 1 for as long as it keeps asking.
    const began = Date.now();
    let lock: Lock | undefined;
    let error: unknown;
    try {
      lock = await new Redlock(env.nodes, { nodeTimeout: 150 }).acquire(["cut-off"], 1_000, { maxWait: 2_000 });
    } catch (e) {
      error = e;
    }
    const waited = Date.now() - began;
    stopEarly.abort();
    expect(await earlyWait).toBe("gave up");
    if (error) expect(error).toBeInstanceOf(LockAcquisitionError);
    expect({ held: lock !== undefined, waitedUnder1s: waited < 1_000 }).toEqual({ held: true, waitedUnder1s: true });
    await lock?.release();
    await env.admins[4].restart();
    await settle(env);
  });
});
