// A `redlock()` route that waits fits a Worker's subrequest budget: with `wait: 10_000` behind a holder of 8 s, the
// waiting request is served within 40 subrequests in all (acquiring, waiting, extending, releasing in waitUntil),
// counted by a fetch wrapper that also holds to the runtime's six connections waiting for headers at once. The holder
// runs apart (its requests bypass the wrapper), as another invocation would. Runs inside workerd.
import { Hono } from "hono";
import { describe, expect, inject, it } from "vitest";
import { holding } from "../../dev/admin.ts";
import { Redlock, type RedlockNode } from "../../src/index.ts";
import { redlock } from "../../src/hono/index.ts";

const nodes = inject("clusterNodes");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const original = globalThis.fetch;

/** Nodes that talk to the bridges with the runtime's own fetch: another invocation's requests, not counted. */
const apart: RedlockNode[] = nodes.map((node, i) => ({
  label: `apart ${i + 1}`,
  async run(script, keys, args, signal) {
    const body = JSON.stringify(["eval", script.lua.replace(/^#!lua.*\n/, ""), keys.length, ...keys, ...args]);
    const res = await original(node.url, {
      method: "POST",
      headers: { authorization: `Bearer ${node.token}` },
      body,
      signal,
    });
    const reply = (await res.json()) as { result?: unknown; error?: string };
    if (reply.error) throw new Error(reply.error);
    return reply.result;
  },
}));

/** Counts every fetch from now on, at most six at once waiting for their headers (a seventh waits its turn). */
function countingFetch() {
  let sent = 0;
  let waiting = 0;
  let most = 0;
  const queue: (() => void)[] = [];
  const slot = async () => {
    while (waiting >= 6) await new Promise<void>((resolve) => queue.push(resolve));
    waiting++;
    most = Math.max(most, waiting);
  };
  const free = () => {
    waiting--;
    queue.shift()?.();
  };
  globalThis.fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    sent++;
    await slot();
    try {
      return await original(input, init);
    } finally {
      free();
    }
  };
  return {
    get sent() {
      return sent;
    },
    get most() {
      return most;
    },
    restore: () => {
      globalThis.fetch = original;
    },
  };
}

describe("a waiting route within a Worker's subrequests", () => {
  it("redlock() with wait 10 s behind a holder of 8 s is served within 40 subrequests", async () => {
    const holder = await new Redlock(apart, { warnings: false }).acquire("wd:budget", 10_000);
    const app = new Hono();
    const guard = redlock("wd:budget", {
      ttl: 5_000,
      wait: 10_000,
      maxRequests: 40,
      redlock: () => new Redlock(nodes, { warnings: false }),
    });
    app.post("/run", guard, async (c) => {
      await sleep(1_000);
      return c.json({ ran: true });
    });
    const waited: Promise<unknown>[] = [];
    const ctx = {
      waitUntil: (p: Promise<unknown>) => void waited.push(p),
      passThroughOnException: () => {},
      props: {},
    };
    const counting = countingFetch();
    try {
      const response = app.request("/run", { method: "POST" }, {}, ctx);
      await sleep(8_000);
      await holder.release();
      const res = await response;
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ ran: true });
      await Promise.all(waited);
      expect(counting.sent).toBeLessThanOrEqual(40);
      expect(counting.most).toBeLessThanOrEqual(6);
    } finally {
      counting.restore();
    }
    expect(await holding(nodes, "wd:budget")).toBe(0);
  }, 30_000);
});
