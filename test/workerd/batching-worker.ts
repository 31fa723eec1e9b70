// A worker for test/integration/transport/workerd-batching.test.ts: one module-scope Redlock shared by every
// request of the isolate, as users write it. Bundled with esbuild and run in workerd by Miniflare.
import { Redlock } from "../../src/index.ts";

interface Env {
  NODES: string;
}

let redlock: Redlock | undefined;
/** Every fetch this isolate made (the subrequests), counted at the one place they all go through. */
let subrequests = 0;
const realFetch = globalThis.fetch;
globalThis.fetch = (input: RequestInfo | URL, init?: RequestInit) => {
  subrequests++;
  return realFetch(input, init);
};
/** Negative control: a promise created by one request and resolved by another. */
let resolveShared: ((value: string) => void) | undefined;

export default {
  async fetch(request: Request, env: Env, ctx: { waitUntil(promise: Promise<unknown>): void }): Promise<Response> {
    const url = new URL(request.url);
    // A generous nodeTimeout: a request answered after it may land after its follow-up release (a documented
    // residue, docs/SAFETY.md), which would leave a key behind for its ttl on a loaded machine.
    redlock ??= new Redlock(JSON.parse(env.NODES), {
      retryCount: 2,
      retryDelay: 20,
      retryJitter: 10,
      nodeTimeout: 2_000,
    });
    if (url.pathname === "/many") {
      // Lock every item of an order at once ("locking many items"), work a moment, release them all.
      const locker = redlock;
      const keys = Array.from(
        { length: Number(url.searchParams.get("n")) },
        (_, i) => `${url.searchParams.get("id")}:item:${i}`,
      );
      const before = subrequests;
      if (url.searchParams.has("quit")) {
        // A request that gives up at once and answers: its own fetches are cancelled when it ends.
        const quit = await Promise.allSettled(
          keys.map((key) => locker.acquire([key], 5_000, { signal: AbortSignal.timeout(3) })),
        );
        return Response.json({ gaveUp: quit.filter((q) => q.status === "rejected").length });
      }
      const locks = await Promise.all(keys.map((key) => locker.acquire([key], 5_000)));
      await new Promise((r) => setTimeout(r, Number(url.searchParams.get("work") ?? 5)));
      const results = await Promise.all(locks.map((lock) => lock.release()));
      const pending = Promise.all(results.map((result) => result.pending));
      ctx.waitUntil(pending);
      await pending; // so the count below is complete
      return Response.json({ locked: locks.length, subrequests: subrequests - before });
    }
    if (url.pathname === "/cross-a") {
      new Promise<string>((resolve) => (resolveShared = resolve)).then(() => undefined);
      return new Response("a");
    }
    if (url.pathname === "/cross-b") {
      resolveShared?.("from b");
      await new Promise((r) => setTimeout(r, 20));
      return new Response("b");
    }
    return new Response("not found", { status: 404 });
  },
};
