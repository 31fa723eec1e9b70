// A caller that gives up inside a batch leaves nothing behind. With batching, a member whose caller aborts (the Hono
// middleware passes the client's request signal) stops waiting, but its command stays in the pipeline request, which is
// not cut while another member waits; a cleanup release sent at once (a new request) could overtake that pipeline under
// ordinary jitter, far below nodeTimeout, and the acquire would then land and set the key for the full ttl: nobody
// holding, every contender refused (docs/SAFETY.md, "Two residues", bounds that residue to a request the network holds
// back for longer than nodeTimeout). So a member that stops waiting carries when its pipeline request is over
// (src/node/batch.ts, Abandoned), and cleanups and follow-up releases wait for it; a decided round is not cut by the
// caller's signal.
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, Redlock } from "../../../src/index.ts";
import { loadScripts, settle, useCluster } from "../fixture.ts";

const env = useCluster();
const config = () => env.cluster.nodes.map(({ url, token }) => ({ url, token }));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const held = async (key: string) => (await Promise.all(env.tcp.map((t) => t.exists(key)))).reduce((a, b) => a + b, 0);

/** Two acquisitions in one turn; the second's caller gives up at 150 ms; the pipeline is held 300 ms, later requests 0 ms. */
async function scenario(batching: boolean, tag: string) {
  await loadScripts(env);
  const redlock = new Redlock(config(), { retryCount: 0, nodeTimeout: 2_000, batching });
  await (await (await redlock.acquire([`${tag}:warm`], 3_000)).release()).pending; // SHA computed: one batch below
  await Promise.all(env.admins.map((a) => a.faults({ latencyMs: 300 })));
  const quitter = new AbortController();
  const keep = redlock.acquire([`${tag}:keep`], 10_000);
  const quit = redlock.acquire([`${tag}:quit`], 10_000, { signal: quitter.signal }).catch((e: unknown) => e);
  await sleep(100);
  await Promise.all(env.admins.map((a) => a.faults({ latencyMs: 0 }))); // jitter: the next requests are fast
  await sleep(50);
  quitter.abort(new Error("client went away"));
  expect(await quit).toEqual(new Error("client went away"));
  const kept = await keep;
  await settle(env);
  const residue = await held(`${tag}:quit`);
  const contender = await new Redlock(config(), { retryCount: 0 }).acquire([`${tag}:quit`], 1_000).then(
    () => "granted",
    (e: unknown) =>
      e instanceof LockAcquisitionError ? `refused (${e.reason}, retry after ${e.retryAfterMs} ms)` : String(e),
  );
  await (await kept.release()).pending;
  return { residue, contender };
}

describe("a caller that gives up inside a batch leaves nothing behind (real cluster)", () => {
  it("control, batching off: the aborted request never runs; a contender gets the lock", async () => {
    const result = await scenario(false, "ctl");
    console.log(`batching off:`, result);
    expect(result).toEqual({ residue: 0, contender: "granted" });
  });

  it("batching on, network delay 300 ms (< nodeTimeout 2000 ms): the given-up lock is not left behind; a contender gets it", async () => {
    const result = await scenario(true, "atk");
    console.log(`batching on:`, result);
    expect(result).toEqual({ residue: 0, contender: "granted" });
  });

  it("a held lock whose acquire signal aborts later (the middleware passes the client's request signal): its straggler still gets its follow-up release", async () => {
    const run = async (batching: boolean, tag: string) => {
      await loadScripts(env);
      const redlock = new Redlock(config(), { retryCount: 0, nodeTimeout: 2_000, batching });
      await (await (await redlock.acquire([`${tag}:warm`], 3_000)).release()).pending;
      await env.admins[4].faults({ latencyMs: 300 });
      const client = new AbortController();
      // two locks in one turn (one pipeline to node 4), decided on {0,1,2,3}; node 4's replies are stragglers
      const [lock, other] = await Promise.all([
        redlock.acquire([`${tag}:held`], 10_000, { signal: client.signal }),
        redlock.acquire([`${tag}:other`], 10_000),
      ]);
      await env.admins[4].faults({ latencyMs: 0 });
      await sleep(30);
      client.abort(new Error("client went away")); // mid-handler
      await sleep(20);
      await (await lock.release()).pending;
      await (await other.release()).pending;
      await settle(env);
      return held(`${tag}:held`);
    };
    const off = await run(false, "h-off");
    const on = await run(true, "h-on");
    console.log(
      `held lock, client left, then released: nodes still holding it — batching off ${off}, batching on ${on}`,
    );
    expect(off).toBe(0);
    expect(on).toBe(0);
  });

  it("semaphore: a client that gave up mid-acquire does not burn the permit (limit 1: free again, nobody inside)", async () => {
    await loadScripts(env);
    const redlock = new Redlock(config(), { retryCount: 0, nodeTimeout: 2_000 });
    // scripts loaded and their SHAs computed (a first SHA-1 is a macrotask in Node: it would split the batch)
    await (await (await redlock.semaphore("warm", 1).acquire(3_000)).release()).pending;
    await (await (await redlock.acquire(["warm"], 3_000)).release()).pending;
    await Promise.all(env.admins.map((a) => a.resetCounters()));
    await Promise.all(env.admins.map((a) => a.faults({ latencyMs: 300 })));
    const quitter = new AbortController();
    const keep = redlock.acquire(["sem-res:other"], 10_000);
    const quit = redlock
      .semaphore("sem-res", 1)
      .acquire(10_000, { signal: quitter.signal })
      .catch((e: unknown) => e);
    await sleep(100);
    await Promise.all(env.admins.map((a) => a.faults({ latencyMs: 0 })));
    await sleep(50);
    quitter.abort(new Error("client went away"));
    await quit;
    const other = await keep;
    await settle(env);
    const seen = await redlock.semaphore("sem-res", 1).inspect();
    const pipelines = (await Promise.all(env.admins.map((a) => a.state()))).map((st) => st.counters.pipelines);
    const next = await redlock
      .semaphore("sem-res", 1)
      .acquire(3_000)
      .then(
        () => "granted",
        (e: unknown) => (e as Error).message,
      );
    console.log(
      `semaphore after a given-up acquire: held ${seen.held} of 1 (soonest ends in ${seen.soonestExpiresInMs} ms); next acquire: ${next}; pipelines ${pipelines}`,
    );
    await (await other.release()).pending;
    expect(seen.held).toBe(0);
  });
});
