// The third part of `npm run bench:where`: the throughput workload (32 concurrent acquire+release cycles on
// distinct keys, so the requests to each node go out as one pipeline) with fetch answered in-process, and
// the library cut in two: its core (redlock, quorum, lock, values, timers) over nodes that answer at once,
// and its transport (batching, @upstash/redis) without the core. Client CPU per cycle, nothing else.
import type { ClusterNode } from "../dev/cluster.ts";
import { floorImpl } from "./floor.ts";
import { edgeRedlockImpl, type Impl, type ImplOptions } from "./impls.ts";
import { ACQUIRE, FAIR_ACQUIRE, RELEASE, scriptShaOf } from "./lib.ts";
import { Redlock, upstashNode, type RedlockNode } from "../src/index.ts";

const CONCURRENCY = 32;

/**
 * Client CPU µs per cycle of each part over `cycles` (in interleaved rounds), after half as many to warm up.
 * @example
 * console.table(await batchedSplit(nodes, OPTIONS, 40_000));
 */
export async function batchedSplit(
  nodes: ClusterNode[],
  options: ImplOptions,
  cycles: number,
): Promise<[string, number][]> {
  // An acquire (classic, or fair as the library sends it by default) is granted; anything else is a release. A
  // node's first run of a script is an EVAL (its Lua), the later ones EVALSHA (its SHA-1).
  const acquires = new Set([
    ACQUIRE.lua,
    FAIR_ACQUIRE.lua,
    await scriptShaOf(ACQUIRE.lua),
    await scriptShaOf(FAIR_ACQUIRE.lua),
  ]);
  const answer = (command: unknown[]) => (acquires.has(command[1] as string) ? [1] : 1);
  globalThis.fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const body = JSON.parse(String(init?.body)) as unknown[];
    await new Promise((r) => setImmediate(r));
    if (String(input).endsWith("/pipeline"))
      return Response.json((body as unknown[][]).map((c) => ({ result: answer(c) })));
    return Response.json({ result: answer(body) });
  }) as typeof fetch;

  const instant: RedlockNode[] = nodes.map((_, i) => ({
    label: `n${i}`,
    run: async (script) => (script.name.endsWith("acquire") ? [1] : 1),
  }));
  const core = new Redlock(instant, { nodeTimeout: options.nodeTimeout });
  const transports = nodes.map((node) => upstashNode({ url: node.url, token: node.token }));
  const parts: [string, (key: string) => Promise<unknown>][] = [];
  for (const impl of [
    await floorImpl(nodes, options, { batching: true, loadScripts: false }),
    edgeRedlockImpl(nodes, options),
  ] as Impl[]) {
    parts.push([impl.name, async (key) => (await impl.acquire(key, 10_000)).release()]);
  }
  parts.push([
    "library core only (nodes answer at once)",
    async (key) => (await core.acquire([key], 10_000, { retryCount: 0 })).release(),
  ]);
  parts.push([
    "library transport only (all 5 nodes, no quorum)",
    async (key) => {
      const signal = new AbortController().signal;
      await Promise.all(transports.map((t) => t.run(ACQUIRE, [key], ["v", "10000", "1"], signal)));
      await Promise.all(transports.map((t) => t.run(RELEASE, [key], ["v"], signal)));
    },
  ]);

  const run = async (cycle: (key: string) => Promise<unknown>, count: number) => {
    let n = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async (_, w) => {
        while (n < count) await cycle(`split:${w}:${n++}`);
      }),
    );
  };
  for (const [, cycle] of parts) await run(cycle, cycles / 2);
  // Interleaved rounds, order alternating: a slow spell of the machine hits every part alike.
  const ROUNDS = 4;
  const cpuUs = new Map(parts.map(([name]) => [name, 0]));
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, cycle] of r % 2 ? [...parts].reverse() : parts) {
      const cpu = process.cpuUsage();
      await run(cycle, cycles / ROUNDS);
      const used = process.cpuUsage(cpu);
      cpuUs.set(name, cpuUs.get(name)! + used.user + used.system);
    }
  }
  return [...cpuUs].map(([name, us]) => [name, us / cycles]);
}
