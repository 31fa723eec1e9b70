// `npm run bench:where`: where an acquire's time goes, for the floor, @upstash/redis called directly, and
// the library, in interleaved rounds. First against the local cluster: per acquire (p50, ms) from the call
// to the last request handed to fetch, the network part up to the quorum-th reply, and from that reply to
// the caller holding the lock. Then with fetch answered in-process (no network, no bridge): the client's
// own time to send the five requests, and its CPU per acquire+release cycle. Last, the throughput workload
// in-process, the library split into core and transport (bench/where-batched.ts). Bounded: about 30 s.
import { spawnCluster } from "../dev/cluster-process.ts";
import { edgeRedlockImpl, floorImpl, upstashDirectImpl, type Impl, type ImplOptions } from "./impls.ts";
import { previousImpl } from "./previous.ts";
import { percentile, table } from "./stats.ts";
import { batchedSplit } from "./where-batched.ts";

const ROUNDS = 20;
const PER_ROUND = 50;
const QUORUM = 3;
const OPTIONS: ImplOptions = { nodeTimeout: 500, retryDelay: 200, retryJitter: 100 };

// Every implementation goes through the global fetch; note when each request leaves and each reply arrives.
let sent: number[] = [];
let replied: number[] = [];
const fetchOf = globalThis.fetch;
globalThis.fetch = ((input: RequestInfo | URL, init?: RequestInit) => {
  sent.push(performance.now());
  return fetchOf(input, init).then((res) => {
    replied.push(performance.now());
    return res;
  });
}) as typeof fetch;

const cluster = await spawnCluster({ nodes: 5 });
const edge = edgeRedlockImpl(cluster.nodes, OPTIONS);
const impls: Impl[] = [await floorImpl(cluster.nodes, OPTIONS), await upstashDirectImpl(cluster.nodes, OPTIONS), edge];
for (const impl of [edge, ...impls])
  for (let i = 0; i < 100; i++) await (await impl.acquire(`warm:${impl.name}:${i}`, 10_000)).release();

type Parts = { toLastSent: number[]; network: number[]; afterQuorum: number[]; acquire: number[]; cpuUs: number };
const parts = new Map<string, Parts>(
  impls.map((impl) => [impl.name, { toLastSent: [], network: [], afterQuorum: [], acquire: [], cpuUs: 0 }]),
);
for (let round = 0; round < ROUNDS; round++) {
  for (const impl of round % 2 ? [...impls].reverse() : impls) {
    const p = parts.get(impl.name)!;
    const cpu = process.cpuUsage();
    for (let i = 0; i < PER_ROUND; i++) {
      sent = [];
      replied = [];
      const start = performance.now();
      const held = await impl.acquire(`where:${impl.name}:${round}:${i}`, 10_000);
      const end = performance.now();
      const quorumReply = [...replied].sort((a, b) => a - b)[QUORUM - 1];
      p.toLastSent.push(Math.max(...sent) - start);
      p.network.push(quorumReply - Math.max(...sent));
      p.afterQuorum.push(end - quorumReply);
      p.acquire.push(end - start);
      await held.release();
    }
    const used = process.cpuUsage(cpu);
    p.cpuUs += used.user + used.system;
  }
}
await cluster.stop();

const n = ROUNDS * PER_ROUND;
const ms = (samples: number[]) => percentile(samples, 50);
const floor = parts.get("floor")!;
console.log(`${n} acquires each, interleaved; p50 ms (reply = response headers in)\n`);
console.log(
  table(
    [
      "impl",
      "call → last request sent",
      "→ quorum-th reply",
      "→ lock held",
      "acquire",
      "× floor",
      "CPU µs/cycle",
      "× floor",
    ],
    [...parts].map(([name, p]) => [
      name,
      ms(p.toLastSent),
      ms(p.network),
      ms(p.afterQuorum),
      ms(p.acquire),
      ms(p.acquire) / ms(floor.acquire),
      p.cpuUs / n,
      p.cpuUs / floor.cpuUs,
    ]),
  ),
);

// The same clients, and the library's previous version (the A/B of bench/previous.ts), with fetch answered
// in-process: what each costs on the client alone.
globalThis.fetch = (async (_input: RequestInfo | URL, init?: RequestInit) => {
  sent.push(performance.now());
  // EVALSHA sha numkeys key value ttl [n] is an acquire (every version's), EVALSHA sha numkeys key value a release.
  const command = JSON.parse(String(init?.body)) as unknown[];
  return Response.json({ result: command.length >= 6 ? [1] : 1 });
}) as typeof fetch;
const fakeNodes = cluster.nodes.map((node, i) => ({ ...node, url: `http://127.0.0.1:${1 + i}` }));
const previous = await previousImpl(fakeNodes, OPTIONS);
const local: Impl[] = [
  await floorImpl(fakeNodes, OPTIONS, { loadScripts: false }),
  await upstashDirectImpl(fakeNodes, OPTIONS),
  edgeRedlockImpl(fakeNodes, OPTIONS),
  ...(typeof previous === "string" ? [] : [previous]),
];
const LOCAL_CYCLES = 10_000;
const client = new Map(local.map((impl) => [impl.name, { toLastSent: [] as number[], cpuUs: 0 }]));
for (const impl of local) for (let i = 0; i < 3_000; i++) await (await impl.acquire(`warm:${i}`, 10_000)).release();
for (let round = 0; round < 4; round++) {
  for (const impl of round % 2 ? [...local].reverse() : local) {
    const c = client.get(impl.name)!;
    const cpu = process.cpuUsage();
    for (let i = 0; i < LOCAL_CYCLES / 4; i++) {
      sent = [];
      const start = performance.now();
      const held = await impl.acquire(`local:${i}`, 10_000);
      c.toLastSent.push(Math.max(...sent) - start);
      await held.release();
    }
    const used = process.cpuUsage(cpu);
    c.cpuUs += used.user + used.system;
  }
}
console.log(`\nfetch answered in-process, ${LOCAL_CYCLES} cycles each: the client alone\n`);
console.log(
  table(
    ["impl", "call → last request sent µs (p50)", "CPU µs/cycle"],
    [...client].map(([name, c]) => [name, ms(c.toLastSent) * 1000, c.cpuUs / LOCAL_CYCLES]),
  ),
);

const SPLIT_CYCLES = 40_000;
console.log(
  `\nthe throughput workload (${SPLIT_CYCLES} cycles, 32 at once, one pipeline per node per turn), ` +
    "fetch answered in-process\n",
);
console.log(table(["part", "CPU µs/cycle"], await batchedSplit(fakeNodes, OPTIONS, SPLIT_CYCLES)));
process.exit(0);
