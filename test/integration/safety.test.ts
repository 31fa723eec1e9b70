// What lands late cannot make two holders, on five real redis-server nodes: a late, shorter extension;
// an extension racing a release; a streamed response still being produced after the handler returned.
import { Hono } from "hono";
import { streamText } from "hono/streaming";
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, LockExtensionError, Redlock } from "../../src/index.ts";
import { redlock, type RedlockVariables } from "../../src/hono.ts";
import { loadScripts, settle, until, useCluster, type Fixture } from "./fixture.ts";

const env = useCluster();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const holding = async (fixture: Fixture, key: string) => (await Promise.all(fixture.tcp.map((t) => t.exists(key)))).reduce((a, b) => a + b, 0);

/** A Workers-like execution context that collects what is handed to waitUntil. */
function executionContext() {
  const waited: Promise<unknown>[] = [];
  return { waited, ctx: { waitUntil: (p: Promise<unknown>) => void waited.push(p), passThroughOnException: () => {}, props: {} } };
}

describe("a late, shorter extension (real Redis)", () => {
  it("does not shorten the key on a majority: a contender is refused while the holder's validity lasts", async () => {
    await loadScripts(env);
    const lock = await new Redlock(env.nodes, { retryCount: 0 }).acquire(["late:k"], 10_000);
    await settle(env);
    await Promise.all([3, 4].map((i) => env.admins[i].faults({ latencyMs: 300 })));
    await lock.extend(1_000); // decided on {0,1,2}; the requests to 3 and 4 wait 300 ms in their bridges
    await Promise.all([3, 4].map((i) => env.admins[i].faults({ latencyMs: 0 })));
    await env.admins[2].faults({ hang: true });
    await lock.extend(10_000); // decided without node 2
    await settle(env); // the PX 1000 requests have run on 3 and 4; node 2's request was cut
    await env.admins[2].reset();
    await sleep(1_100); // past the first extension's ttl
    const pttls = await Promise.all(env.tcp.map((t) => t.pttl("late:k")));
    expect(lock.validityMs).toBeGreaterThan(7_000);
    expect(pttls.filter((pttl) => pttl >= lock.validityMs).length, `PTTLs ${pttls}`).toBeGreaterThanOrEqual(3);
    const contender = await new Redlock(env.nodes, { retryCount: 0 }).acquire(["late:k"], 5_000).catch((e: unknown) => e);
    expect(contender).toBeInstanceOf(LockAcquisitionError);
    expect((contender as LockAcquisitionError).reason).toBe("held");
    await lock.release();
  });
});

describe("a released lock is dead (real Redis)", () => {
  it("an extension slower than the release neither reports success nor brings the keys back", async () => {
    await loadScripts(env);
    const lock = await new Redlock(env.nodes, { retryCount: 0 }).acquire(["race:k"], 5_000);
    await settle(env);
    await Promise.all(env.admins.map((a) => a.faults({ latencyMs: 200 })));
    const extension = lock.extend(5_000).then(
      () => "extended",
      (e: unknown) => e,
    );
    // Every extension request is held in its bridge; the release then overtakes it.
    await until(async () => (await Promise.all(env.admins.map((a) => a.state()))).every((s) => s.counters.waiting === 1));
    await Promise.all(env.admins.map((a) => a.faults({ latencyMs: 0 })));
    const result = await lock.release();
    expect(result.released).toBeGreaterThanOrEqual(3);
    await result.pending;
    const outcome = await extension;
    expect(outcome).toBeInstanceOf(LockExtensionError);
    expect((outcome as LockExtensionError).reason).toBe("released");
    await settle(env);
    expect(await holding(env, "race:k")).toBe(0);
    const next = await new Redlock(env.nodes, { retryCount: 0 }).acquire(["race:k"], 1_000);
    await next.release();
  });

  it("extend() after release() throws at once and sends nothing", async () => {
    const lock = await new Redlock(env.nodes, { retryCount: 0 }).acquire(["dead:k"], 5_000);
    await settle(env);
    await (await lock.release()).pending;
    await Promise.all(env.admins.map((a) => a.resetCounters()));
    const error = await lock.extend(5_000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockExtensionError);
    expect((error as LockExtensionError).reason).toBe("released");
    expect((await Promise.all(env.admins.map((a) => a.state()))).map((s) => s.counters.received)).toEqual([0, 0, 0, 0, 0]);
    expect(await holding(env, "dead:k")).toBe(0);
  });
});

describe("the Hono middleware and streamed responses (real Redis)", () => {
  /** A route that streams `lines` lines, one every `everyMs`, under a lock with a short ttl. */
  function streamingApp(options: { lines: number; everyMs: number; ttl?: number }) {
    const aborted: string[] = [];
    const app = new Hono<{ Variables: RedlockVariables }>();
    const rl = new Redlock(env.nodes, { nodeTimeout: 150 });
    app.get("/stream", redlock("stream:k", { redlock: rl, ttl: options.ttl ?? 600 }), (c) =>
      streamText(c, async (s) => {
        s.onAbort(() => void aborted.push("aborted"));
        for (let i = 0; i < options.lines && !s.aborted; i++) {
          await s.writeln(`line ${i}`);
          await s.sleep(options.everyMs);
        }
      }),
    );
    return { app, aborted };
  }

  it("holds and extends the lock until the body has been streamed in full, then releases it", async () => {
    const { app } = streamingApp({ lines: 10, everyMs: 100 });
    const { waited, ctx } = executionContext();
    const res = await app.request("/stream", {}, {}, ctx);
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    await reader.read();
    await sleep(700); // past the 600 ms ttl: the key is still there only because the lock was extended
    expect(await holding(env, "stream:k")).toBeGreaterThanOrEqual(3);
    const second = await app.request("/stream", {}, {}, executionContext().ctx);
    expect(second.status).toBe(423); // no second critical section while the first body streams
    await second.body?.cancel();
    let text = "";
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += new TextDecoder().decode(chunk.value);
    expect(text).toContain("line 9");
    expect(waited).toHaveLength(1);
    await waited[0];
    expect(await holding(env, "stream:k")).toBe(0);
  });

  it("releases when the client cancels the body, and the handler's stream sees the abort", async () => {
    const { app, aborted } = streamingApp({ lines: 50, everyMs: 100 });
    const { waited, ctx } = executionContext();
    const res = await app.request("/stream", {}, {}, ctx);
    const reader = res.body!.getReader();
    await reader.read();
    expect(await holding(env, "stream:k")).toBeGreaterThanOrEqual(3);
    await reader.cancel("client went away");
    await waited[0];
    expect(await holding(env, "stream:k")).toBe(0);
    expect(aborted).toEqual(["aborted"]);
  });

  it("cuts the body when the lock is lost while it streams", async () => {
    const { app } = streamingApp({ lines: 30, everyMs: 100, ttl: 600 });
    const { waited, ctx } = executionContext();
    const res = await app.request("/stream", {}, {}, ctx);
    const reader = res.body!.getReader();
    await reader.read();
    await Promise.all([0, 1, 2].map((i) => env.admins[i].kill()));
    const outcome = await (async () => {
      for (;;) if ((await reader.read()).done) return "ended normally";
    })().catch((e: unknown) => e);
    expect(outcome).toBeInstanceOf(LockExtensionError);
    await waited[0];
  });
});
