// The worker of `npm run bench:workerd` (bench/workerd-cpu.ts), bundled by esbuild and run in workerd by
// Miniflare: one invocation does `n` cycles of one implementation, so its CPU can be read per invocation.
// /empty does nothing (the per-invocation baseline); /lock: acquire+release of one lock, n times;
// /many: 20 locks with Promise.all, then released with Promise.all; /floor: raw fetch doing a lock's
// requests (bench/floor.ts), n times. With `local=1`, fetch is answered in the isolate itself (no
// subrequest leaves it): what is left is the implementation's own JS.
import type { ClusterNode } from "../dev/cluster.ts";
import { Redlock } from "../src/index.ts";
import { floorImpl } from "./floor.ts";
import type { Impl } from "./impl-kit.ts";

interface Env {
  NODES: string;
}

let redlock: Redlock | undefined;
let floor: Promise<Impl> | undefined;
let seq = 0;
const networkFetch = globalThis.fetch;

/** Grants every acquire (`EVALSHA sha 1 key value ttl n`: `[1]`), 1 to anything shorter; plain or pipelined. */
const answered: typeof fetch = async (input, init) => {
  const body = JSON.parse(String(init?.body)) as unknown[];
  const answer = (command: unknown[]) => (command.length >= 6 ? [1] : 1);
  if (String(input).endsWith("/pipeline"))
    return Response.json((body as unknown[][]).map((c) => ({ result: answer(c) })));
  return Response.json({ result: answer(body) });
};

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    const n = Number(url.searchParams.get("n") ?? 1);
    const nodes = JSON.parse(env.NODES) as ClusterNode[];
    redlock ??= new Redlock(nodes, { retryCount: 0 });
    floor ??= floorImpl(nodes, { nodeTimeout: 500, retryDelay: 200, retryJitter: 100 }, { loadScripts: false });
    const tag = `wd:${seq++}`;
    globalThis.fetch = url.searchParams.has("local") ? answered : networkFetch;
    if (url.pathname === "/lock") {
      for (let i = 0; i < n; i++) {
        const result = await (await redlock.acquire([`${tag}:${i}`], 10_000)).release();
        await result.pending;
      }
    } else if (url.pathname === "/many") {
      for (let i = 0; i < n; i++) {
        const locks = await Promise.all(
          Array.from({ length: 20 }, (_, k) => redlock!.acquire([`${tag}:${i}:${k}`], 10_000)),
        );
        const results = await Promise.all(locks.map((lock) => lock.release()));
        await Promise.all(results.map((r) => r.pending));
      }
    } else if (url.pathname === "/floor") {
      const impl = await floor;
      for (let i = 0; i < n; i++) await (await impl.acquire(`${tag}:${i}`, 10_000)).release();
    } else if (url.pathname !== "/empty") return new Response("not found", { status: 404 });
    return new Response("ok");
  },
};
