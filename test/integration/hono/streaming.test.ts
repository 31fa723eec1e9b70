// The Hono middleware and responses whose body is still being produced after the handler returned, on
// the real cluster: the lock covers the handler's stream until it is over, whatever the client does.
import { createServer, type Server } from "node:net";
import type { AddressInfo } from "node:net";
import { Hono } from "hono";
import { streamSSE, streamText } from "hono/streaming";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LockExtensionError, Redlock, ResponseAbandonedError } from "../../../src/index.ts";
import { redlock, type RedlockVariables } from "../../../src/hono/index.ts";
import { useCluster } from "../fixture.ts";

const env = useCluster();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const holding = async (key: string) =>
  (await Promise.all(env.tcp.map((t) => t.exists(key)))).reduce((a, b) => a + b, 0);

/** A Workers-like execution context that collects what is handed to waitUntil. */
function executionContext() {
  const waited: Promise<unknown>[] = [];
  return {
    waited,
    ctx: { waitUntil: (p: Promise<unknown>) => void waited.push(p), passThroughOnException: () => {}, props: {} },
  };
}

/** Critical sections as they run: every moment two were inside at once. */
function criticalSections() {
  const inside = new Set<string>();
  const overlaps: string[] = [];
  return {
    overlaps,
    async run(who: string, ms: number) {
      if (inside.size > 0) overlaps.push(`${who} entered while ${[...inside].join(",")} was inside`);
      inside.add(who);
      await sleep(ms);
      inside.delete(who);
    },
  };
}

const app = (ttl = 2_000) => ({
  hono: new Hono<{ Variables: RedlockVariables }>(),
  guard: (key: string) => redlock(key, { redlock: new Redlock(env.nodes, { nodeTimeout: 300, retryCount: 0 }), ttl }),
});

describe("a streamed body", () => {
  it("holds and extends the lock until the body has been streamed in full, then releases it", async () => {
    const { hono, guard } = app(600);
    hono.get("/stream", guard("stream:full"), (c) =>
      streamText(c, async (s) => {
        for (let i = 0; i < 10; i++) {
          await s.writeln(`line ${i}`);
          await s.sleep(100);
        }
      }),
    );
    const { waited, ctx } = executionContext();
    const res = await hono.request("/stream", {}, {}, ctx);
    const reader = res.body!.getReader();
    await reader.read();
    await sleep(700); // past the 600 ms ttl: the key is still there only because the lock was extended
    expect(await holding("stream:full")).toBeGreaterThanOrEqual(3);
    const second = await hono.request("/stream", {}, {}, executionContext().ctx);
    expect(second.status).toBe(423); // no second critical section while the first body streams
    await second.body?.cancel();
    let text = "";
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
      text += new TextDecoder().decode(chunk.value);
    expect(text).toContain("line 9");
    await waited[0];
    expect(await holding("stream:full")).toBe(0);
  });

  it("is cut when the lock is lost while it streams", async () => {
    const { hono, guard } = app(600);
    hono.get("/stream", guard("stream:lost"), (c) =>
      streamText(c, async (s) => {
        for (let i = 0; i < 30 && !s.aborted; i++) {
          await s.writeln(`line ${i}`);
          await s.sleep(100);
        }
      }),
    );
    const { waited, ctx } = executionContext();
    const reader = (await hono.request("/stream", {}, {}, ctx)).body!.getReader();
    await reader.read();
    await Promise.all([0, 1, 2].map((i) => env.admins[i].kill()));
    const outcome = await (async () => {
      for (;;) if ((await reader.read()).done) return "ended normally";
    })().catch((e: unknown) => e);
    expect(outcome).toBeInstanceOf(LockExtensionError);
    await waited[0];
  });
});

describe("a client that cancels a streamed body", () => {
  it("tells the handler at once, and keeps the lock until the handler's step under way is over: no second section meanwhile", async () => {
    const sections = criticalSections();
    const reasons: unknown[] = [];
    const { hono, guard } = app();
    let n = 0;
    hono.get("/report", guard("cancel:step"), (c) => {
      const who = `request ${++n}`;
      return streamText(c, async (s) => {
        await s.writeln("begin");
        await sections.run(who, 600); // one step the handler cannot stop half-way, checking nothing
        reasons.push(c.var.lock.signal.reason);
        if (!s.aborted) await s.writeln("done");
      });
    });
    const first = executionContext();
    const reader = (await hono.request("/report", {}, {}, first.ctx)).body!.getReader();
    await reader.read(); // "begin": request 1 is inside its step
    await reader.cancel("client went away");
    const second = await hono.request("/report", {}, {}, executionContext().ctx);
    expect(second.status).toBe(423); // request 1's step still runs under the lock
    await second.body?.cancel();
    expect(await holding("cancel:step")).toBeGreaterThanOrEqual(3);
    await first.waited[0]; // released once request 1's stream was over
    expect(await holding("cancel:step")).toBe(0);
    expect(reasons).toHaveLength(1);
    expect(reasons[0]).toBeInstanceOf(ResponseAbandonedError);
    const third = executionContext();
    const after = await hono.request("/report", {}, {}, third.ctx);
    expect(after.status).toBe(200);
    await after.text();
    await third.waited[0];
    expect(sections.overlaps).toEqual([]);
  });

  it("a handler that stops on c.var.lock.signal frees the lock at once", async () => {
    const { hono, guard } = app();
    hono.get("/ticks", guard("cancel:coop"), (c) =>
      streamText(c, async (s) => {
        while (!c.var.lock.signal.aborted) {
          await s.writeln("tick");
          await s.sleep(50);
        }
      }),
    );
    const { waited, ctx } = executionContext();
    const reader = (await hono.request("/ticks", {}, {}, ctx)).body!.getReader();
    await reader.read();
    const cancelledAt = performance.now();
    await reader.cancel();
    await waited[0];
    expect(performance.now() - cancelledAt).toBeLessThan(1_000); // well within the 2 s ttl: it did not wait for the grace
    expect(await holding("cancel:coop")).toBe(0);
  });

  it("a stream that never ends on its own is cancelled one ttl after the client left, and released once its cancel settled", async () => {
    const events: string[] = [];
    const { hono, guard } = app(800);
    hono.get("/export", guard("cancel:endless"), () => {
      let stopped = false;
      let step: Promise<unknown> = Promise.resolve();
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          if (stopped) return;
          step = sleep(100);
          await step;
          if (!stopped) controller.enqueue(new TextEncoder().encode("row\n"));
        },
        async cancel() {
          stopped = true;
          await step; // a well-behaved source: cancel settles once its step in progress is over
          events.push("source stopped");
        },
      });
      return new Response(body);
    });
    const { waited, ctx } = executionContext();
    const reader = (await hono.request("/export", {}, {}, ctx)).body!.getReader();
    await reader.read();
    const cancelledAt = performance.now();
    await reader.cancel("client went away");
    events.push("client cancelled");
    await sleep(300);
    expect(await holding("cancel:endless")).toBeGreaterThanOrEqual(3); // the source still runs: still held
    await waited[0];
    events.push("lock released");
    expect(performance.now() - cancelledAt).toBeGreaterThanOrEqual(800); // after one ttl of grace
    expect(events).toEqual(["client cancelled", "source stopped", "lock released"]);
    expect(await holding("cancel:endless")).toBe(0);
  });

  it("after the release, the handler's view says so: signal aborted, no validity left, expiresAt passed", async () => {
    const { hono, guard } = app();
    let seen: { reason: unknown; validityMs: number; expiresAhead: boolean } | undefined;
    let done!: () => void;
    const released = new Promise<void>((resolve) => (done = resolve));
    hono.get("/watch", guard("cancel:view"), (c) =>
      streamText(c, async (s) => {
        await s.writeln("begin");
        await released;
        seen = {
          reason: c.var.lock.signal.reason,
          validityMs: c.var.lock.lock.validityMs,
          expiresAhead: Date.now() < c.var.lock.expiresAt,
        };
      }),
    );
    const { waited, ctx } = executionContext();
    const reader = (await hono.request("/watch", {}, {}, ctx)).body!.getReader();
    await reader.read();
    await reader.cancel();
    await untilFree("cancel:view", 2_500);
    done();
    await waited[0];
    // The stream was cancelled after the grace; it ran out once `released` let it go.
    expect(seen?.reason).toBeInstanceOf(ResponseAbandonedError);
    expect(seen?.validityMs).toBeLessThanOrEqual(0);
    expect(seen?.expiresAhead).toBe(false);
  });
});

/** Waits until no node holds `key` (at most `timeoutMs`). */
async function untilFree(key: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await holding(key)) > 0) {
    if (Date.now() > deadline) throw new Error(`${key} still held`);
    await sleep(20);
  }
}

describe("bodies the client never reads", () => {
  it("a HEAD request to an endless SSE route lets the lock go one ttl later", async () => {
    let stopAll = false;
    const { hono, guard } = app(600);
    hono.get("/events", guard("head:events"), (c) =>
      streamSSE(c, async (s) => {
        while (!s.aborted && !stopAll) {
          await s.writeSSE({ data: "tick" });
          await s.sleep(100);
        }
      }),
    );
    try {
      const head = executionContext();
      const res = await hono.request("/events", { method: "HEAD" }, {}, head.ctx);
      expect(res.body).toBeNull();
      await head.waited[0];
      expect(await holding("head:events")).toBe(0);
      const next = await hono.request("/events", {}, {}, executionContext().ctx);
      expect(next.status).toBe(200);
      await next.body?.cancel();
    } finally {
      stopAll = true;
    }
  });
});

describe("a response the middleware cannot copy", () => {
  let upstream: Server;
  let upstreamUrl: string;
  beforeAll(async () => {
    // An upstream whose status line carries a UTF-8 "€": `new Response(body, thatResponse)` throws in Node.
    upstream = createServer((socket) =>
      socket.once("data", () =>
        socket.end(
          Buffer.concat([
            Buffer.from("HTTP/1.1 200 OK "),
            Buffer.from("€", "utf8"),
            Buffer.from("\r\ncontent-type: text/plain\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello"),
          ]),
        ),
      ),
    );
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
    upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/`;
  });
  afterAll(() => void upstream.close());

  it("still goes out, and the lock is still released (not kept and extended for good)", async () => {
    const { hono, guard } = app(600);
    hono.get("/proxy", guard("proxy:k"), () => fetch(upstreamUrl));
    const { waited, ctx } = executionContext();
    const res = await hono.request("/proxy", {}, {}, ctx);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("hello");
    await Promise.all(waited);
    await sleep(700); // past the ttl: nothing extends it any more
    expect(await holding("proxy:k")).toBe(0);
    expect(env.sent.map((s) => s.filter((name) => name === "extend").length)).toEqual([0, 0, 0, 0, 0]);
  });
});
