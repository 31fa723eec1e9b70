// `npm run bench [-- --quick] [--only=<scenarios>] [--baseline=<ref>]`: every implementation against the same
// local five-node cluster, in one run: healthy (with an A/B against the library at a baseline ref,
// bench/previous.ts), slow-minority, hung-node, contention, throughput (with a batched floor), many-locks and wan;
// then the targets judged on this run's figures.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { Redis as IORedis } from "ioredis";
import { spawnCluster } from "../dev/cluster-process.ts";
import { bridgesOf } from "./bridges.ts";
import { cpuInProcess } from "./cpu.ts";
import { healthyAlone } from "./healthy-alone.ts";
import {
  edgeRedlockImpl,
  floorImpl,
  nodeRedlockImpl,
  redisSemaphoreImpl,
  upstashLockImpl,
  type Held,
  type Impl,
  type ImplOptions,
} from "./impls.ts";
import { previousImpl } from "./previous.ts";
import { addRatios, render, type Result, type Results } from "./report.ts";
import { markdownTable, percentile, round, table } from "./stats.ts";
import { verdicts } from "./targets.ts";
import { applyWan, roundTripImpl } from "./wan.ts";
import { herd, steady, type Counters } from "./fair-contention.ts";

const quick = process.argv.includes("--quick");
/**
 * `--only=healthy,hung-node`: run just those scenarios (while working on one; the README's table is from a whole run).
 */
const only = process.argv
  .find((arg) => arg.startsWith("--only="))
  ?.slice("--only=".length)
  .split(",");
const SIZE = quick
  ? {
      healthy: 60,
      healthyAlone: 200,
      slow: 12,
      hung: 5,
      contentionMs: 2_000,
      throughputMs: 2_000,
      manyLocks: 10,
      wanRounds: 2,
      wanCycles: 15,
      cpuCycles: 2_000,
    }
  : {
      healthy: 1_200,
      healthyAlone: 3_000,
      slow: 60,
      hung: 15,
      contentionMs: 12_000,
      throughputMs: 8_000,
      manyLocks: 60,
      wanRounds: 4,
      wanCycles: 50,
      cpuCycles: 8_000,
    };
/** Locks taken at once in the many-locks scenario. */
const MANY = 20;
const TTL = 10_000;
const HUNG_CAP_MS = 1_500;
const OPTIONS: ImplOptions = { nodeTimeout: 500, retryDelay: 200, retryJitter: 100 };

const results: Results = {};
const record = (scenario: string, impl: string, result: Result) => {
  results[scenario] ??= {};
  results[scenario][impl] = result;
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const started = performance.now();
const loadAtStart = loadavg()[0];

// The cluster runs in its own process, so the client CPU measured here is the clients' alone.
const cluster = await spawnCluster({ nodes: 5, tcpProxy: true });
const nodes = cluster.nodes;
const bridges = bridgesOf(nodes);
const admins = bridges.admins;
const direct = nodes.map((n) => new IORedis(n.redisUrl));

const impls: Impl[] = [
  await floorImpl(nodes, OPTIONS),
  edgeRedlockImpl(nodes, OPTIONS),
  nodeRedlockImpl(nodes, OPTIONS),
  upstashLockImpl(nodes, OPTIONS),
  redisSemaphoreImpl(nodes, OPTIONS),
];
const tuned = edgeRedlockImpl(nodes, { ...OPTIONS, retryDelay: 30, retryJitter: 25 }, "edge-redlock-tuned");
const floorBatched = await floorImpl(nodes, OPTIONS, { batching: true });
// The A/B of the healthy scenario: the library at the baseline ref (bench/previous.ts), in this process.
const previous = await previousImpl(nodes, OPTIONS);
if (typeof previous === "string") process.stdout.write(`${previous}\n`);
const withPrevious = typeof previous === "string" ? impls : [...impls.slice(0, 2), previous, ...impls.slice(2)];
const byName = (name: string) => impls.find((impl) => impl.name === name)!;

async function resetFaults(): Promise<void> {
  await bridges.clearFaults();
}

/** HTTP requests the bridges received during `run`, its stragglers included (undefined for the TCP implementations). */
async function countingRequests<T>(impl: Impl, run: () => Promise<T>): Promise<{ value: T; received?: number }> {
  if (impl.tcp) return { value: await run() };
  await bridges.settle();
  await bridges.resetCounters();
  const value = await run();
  return { value, received: await bridges.received() };
}

/** Redis commands processed on all five nodes (minus the INFO calls that read it). */
async function commandsProcessed(): Promise<number> {
  const infos = await Promise.all(direct.map((r) => r.info("stats")));
  return infos.reduce((sum, info) => sum + Number(/total_commands_processed:(\d+)/.exec(info)?.[1] ?? 0) - 1, 0);
}

async function warm(impl: Impl, cycles: number): Promise<void> {
  for (let i = 0; i < cycles; i++) await (await impl.acquire(`warm:${impl.name}:${i}`, TTL)).release();
}

/** One empty sample list per implementation. */
const perImpl = <T>(all: Impl[], init: () => T) => new Map<string, T>(all.map((impl) => [impl.name, init()]));
/** The implementations in round `r`'s order: reversed every other round, so none always runs first. */
const inRoundOrder = (all: Impl[], r: number) => (r % 2 ? [...all].reverse() : all);

/** Interleaved rounds (order alternating) so JIT warm-up and machine noise hit every implementation alike. */
// 24 windows of 50 cycles (the sizes `bench:healthy-cpu` uses): with 12 windows the CPU ratio of one run moved
// between 1.07 and 1.37 for the same hot path, because each window is ~150 ms of a process shared by six clients.
async function healthy(all: Impl[]): Promise<void> {
  for (const impl of all) await warm(impl, quick ? 30 : 200);
  const samples = perImpl<number[]>(all, () => []);
  const acquires = perImpl<number[]>(all, () => []);
  const releases = perImpl<number[]>(all, () => []);
  const cpu = perImpl(all, () => 0);
  const requests = perImpl(all, () => 0);
  const rounds = quick ? 4 : 24;
  for (let r = 0; r < rounds; r++) {
    for (const impl of inRoundOrder(all, r)) {
      const { received } = await countingRequests(impl, async () => {
        const before = process.cpuUsage();
        for (let i = 0; i < SIZE.healthy / rounds; i++) {
          const t = performance.now();
          const held = await impl.acquire(`healthy:${impl.name}:${r}:${i}`, TTL);
          const acquired = performance.now();
          acquires.get(impl.name)!.push(acquired - t);
          await held.release();
          const end = performance.now();
          releases.get(impl.name)!.push(end - acquired);
          samples.get(impl.name)!.push(end - t);
        }
        const used = process.cpuUsage(before);
        cpu.set(impl.name, cpu.get(impl.name)! + used.user + used.system);
      });
      if (received !== undefined) requests.set(impl.name, requests.get(impl.name)! + received);
    }
  }
  for (const impl of all) {
    const s = samples.get(impl.name)!;
    const a = acquires.get(impl.name)!;
    record("healthy", impl.name, {
      acquireP50Ms: percentile(a, 50),
      p50Ms: percentile(s, 50),
      p99Ms: percentile(s, 99),
      releaseP50Ms: percentile(releases.get(impl.name)!, 50),
      cpuUsPerCycle: cpu.get(impl.name)! / s.length,
      ...(impl.tcp ? {} : { requestsPerCycle: requests.get(impl.name)! / s.length }),
    });
  }
}

/**
 * Acquire latency with 2 of 5 nodes 250 ms slow, next to the healthy acquire latency measured in the
 * same rounds (so the ratio compares like with like). Interleaved rounds like `healthy`; each release
 * is awaited (it waits for the slow nodes) so no earlier cycle's requests run during the next acquire.
 */
async function slowMinority(all: Impl[]): Promise<void> {
  const slow = perImpl<number[]>(all, () => []);
  const healthy = perImpl<number[]>(all, () => []);
  const rounds = quick ? 2 : 4;
  const batch = async (samples: Map<string, number[]>, tag: string, r: number) => {
    for (const impl of inRoundOrder(all, r)) {
      for (let i = 0; i < SIZE.slow / rounds; i++) {
        const t = performance.now();
        const held = await impl.acquire(`${tag}:${impl.name}:${r}:${i}`, TTL);
        samples.get(impl.name)!.push(performance.now() - t);
        await held.release().catch(() => null);
      }
    }
  };
  for (let r = 0; r < rounds; r++) {
    await batch(healthy, "slow-baseline", r);
    await Promise.all([admins[3].faults({ latencyMs: 250 }), admins[4].faults({ latencyMs: 250 })]);
    await batch(slow, "slow", r);
    await resetFaults();
  }
  for (const impl of all) {
    const s = slow.get(impl.name)!;
    const h = healthy.get(impl.name)!;
    record("slow-minority", impl.name, {
      p50Ms: percentile(s, 50),
      p99Ms: percentile(s, 99),
      healthyAcquireP50Ms: percentile(h, 50),
    });
  }
}

async function hungNode(impl: Impl): Promise<void> {
  await admins[4].faults({ hang: true });
  const acquire: number[] = [];
  const release: number[] = [];
  let capped = 0;
  let acquireCapped = 0;
  for (let i = 0; i < SIZE.hung; i++) {
    let t = performance.now();
    // Anchors that wait for every node never return here; the cap bounds what they cost the run.
    const held = await Promise.race([
      impl.acquire(`hung:${impl.name}:${i}`, TTL),
      sleep(HUNG_CAP_MS).then(() => undefined),
    ]);
    acquire.push(performance.now() - t);
    if (!held) {
      acquireCapped++;
      continue;
    }
    t = performance.now();
    const outcome = await Promise.race([
      held.release().then(
        () => "done",
        () => "done",
      ),
      sleep(HUNG_CAP_MS).then(() => "capped"),
    ]);
    if (outcome === "capped") capped++;
    release.push(performance.now() - t);
  }
  await resetFaults();
  await sleep(50);
  record("hung-node", impl.name, {
    p50Ms: percentile(acquire, 50),
    p99Ms: percentile(acquire, 99),
    releaseP50Ms: percentile(release, 50),
    releaseP99Ms: percentile(release, 99),
    ...(capped
      ? { capped, note: `release never returned in ${capped}/${SIZE.hung} cycles: cut at ${HUNG_CAP_MS} ms` }
      : {}),
    ...(acquireCapped
      ? {
          capped: acquireCapped,
          note: `acquire never returned in ${acquireCapped}/${SIZE.hung} cycles: cut at ${HUNG_CAP_MS} ms`,
        }
      : {}),
  });
}

async function contention(impl: Impl): Promise<void> {
  const key = `contention:${impl.name}`;
  const deadline = performance.now() + SIZE.contentionMs;
  const grants: { at: number; releasedAt: number }[] = [];
  const before = await commandsProcessed();
  const contender = async () => {
    while (performance.now() < deadline) {
      const wait = deadline - performance.now();
      let held: Held;
      try {
        held = await impl.acquire(key, TTL, { wait });
      } catch {
        continue;
      }
      const at = performance.now();
      await sleep(5); // the critical section
      const releasedAt = performance.now();
      grants.push({ at, releasedAt });
      await held.release();
    }
  };
  await Promise.all(Array.from({ length: 16 }, contender));
  const requests = (await commandsProcessed()) - before;
  grants.sort((a, b) => a.at - b.at);
  const gaps = grants.slice(1).map((g, i) => g.at - grants[i].releasedAt);
  record("contention", impl.name, {
    opsPerSec: grants.length / (SIZE.contentionMs / 1000),
    idleGapP50Ms: percentile(gaps, 50),
    idleGapP99Ms: percentile(gaps, 99),
    requestsPerGrant: requests / Math.max(1, grants.length),
  });
  await sleep(200);
}

/**
 * 32 workers, each running acquire+release cycles on distinct keys back to back. Interleaved rounds (order
 * alternating) of SIZE.throughputMs / rounds each, so a slow spell of this shared machine hits all alike.
 */
async function throughput(all: Impl[]): Promise<void> {
  const rounds = 4;
  const samples = perImpl<number[]>(all, () => []);
  const requests = perImpl(all, () => 0);
  let n = 0;
  for (let r = 0; r < rounds; r++) {
    for (const impl of inRoundOrder(all, r)) {
      const { received } = await countingRequests(impl, async () => {
        const deadline = performance.now() + SIZE.throughputMs / rounds;
        const worker = async (w: number) => {
          while (performance.now() < deadline) {
            const t = performance.now();
            await (await impl.acquire(`tp:${impl.name}:${w}:${n++}`, TTL)).release();
            samples.get(impl.name)!.push(performance.now() - t);
          }
        };
        await Promise.all(Array.from({ length: 32 }, (_, w) => worker(w)));
      });
      if (received !== undefined) requests.set(impl.name, requests.get(impl.name)! + received);
    }
  }
  for (const impl of all) {
    const s = samples.get(impl.name)!;
    record("throughput", impl.name, {
      opsPerSec: s.length / (SIZE.throughputMs / 1000),
      p50Ms: percentile(s, 50),
      p99Ms: percentile(s, 99),
      ...(impl.tcp ? {} : { requestsPerCycle: requests.get(impl.name)! / s.length }),
    });
  }
}

/** 20 distinct keys acquired with Promise.all, then released with Promise.all; one cycle at a time. */
async function manyLocks(impl: Impl): Promise<void> {
  const all = (c: string) => Array.from({ length: MANY }, (_, k) => `many:${impl.name}:${c}:${k}`);
  for (let w = 0; w < 3; w++)
    await Promise.all(
      (await Promise.all(all(`warm${w}`).map((key) => impl.acquire(key, TTL)))).map((h) => h.release()),
    );
  const cycles: number[] = [];
  const acquires: number[] = [];
  let cpuUs = 0;
  const { received } = await countingRequests(impl, async () => {
    const before = process.cpuUsage();
    for (let c = 0; c < SIZE.manyLocks; c++) {
      const t = performance.now();
      const held = await Promise.all(all(String(c)).map((key) => impl.acquire(key, TTL)));
      acquires.push(performance.now() - t);
      await Promise.all(held.map((h) => h.release()));
      cycles.push(performance.now() - t);
    }
    const used = process.cpuUsage(before);
    cpuUs = used.user + used.system;
  });
  record("many-locks", impl.name, {
    acquireP50Ms: percentile(acquires, 50),
    p50Ms: percentile(cycles, 50),
    p99Ms: percentile(cycles, 99),
    cpuUsPerCycle: cpuUs / cycles.length,
    ...(received === undefined ? {} : { requestsPerCycle: received / cycles.length }),
  });
}

/**
 * The client's own CPU for one lock and for 20, fetch answered in-process (bench/cpu.ts): last, nothing else in flight.
 */
async function cpuScenario(): Promise<void> {
  for (const [impl, f] of await cpuInProcess(OPTIONS, SIZE.cpuCycles))
    record("cpu-in-process", impl, { cpuUsPerCycle: f.oneLockUs, cpuUsPer20Locks: f.twentyLocksUs });
}

/**
 * Acquire and acquire+release under the WAN profile, one cycle at a time, in interleaved rounds. Before
 * each implementation's turn in a round the nodes' PRNGs restart from that round's seed, so every
 * implementation meets the same delays; its stragglers land before the next one starts.
 */
async function wan(all: Impl[]): Promise<void> {
  const acquires = perImpl<number[]>(all, () => []);
  const cycles = perImpl<number[]>(all, () => []);
  const requests = perImpl(all, () => 0);
  for (let r = 0; r < SIZE.wanRounds; r++) {
    for (const impl of inRoundOrder(all, r)) {
      // redis-semaphore waits for the farthest node twice a cycle (about 0.5 s): fewer cycles for it.
      const n = impl.name === "redis-semaphore" ? Math.ceil(SIZE.wanCycles / 3) : SIZE.wanCycles;
      await applyWan(bridges, 1 + r);
      const { received } = await countingRequests(impl, async () => {
        for (let i = 0; i < n; i++) {
          const t = performance.now();
          const held = await impl.acquire(`wan:${impl.name}:${r}:${i}`, TTL);
          acquires.get(impl.name)!.push(performance.now() - t);
          await held.release();
          cycles.get(impl.name)!.push(performance.now() - t);
        }
      });
      if (received !== undefined) requests.set(impl.name, requests.get(impl.name)! + received);
      // The TCP proxies have no in-flight count: wait out the farthest node's round trip and a stall.
      await sleep(impl.tcp ? 600 : 50);
    }
  }
  await resetFaults();
  for (const impl of all) {
    const a = acquires.get(impl.name)!;
    const c = cycles.get(impl.name)!;
    record("wan", impl.name, {
      acquireP50Ms: percentile(a, 50),
      acquireP99Ms: percentile(a, 99),
      p50Ms: percentile(c, 50),
      ...(impl.tcp ? {} : { requestsPerCycle: requests.get(impl.name)! / c.length }),
    });
  }
}

/** HTTP requests (bridges) and Redis commands (all nodes) during one herd or steady row. */
const counters: Counters = {
  async start(impl) {
    if (!impl.tcp) {
      await bridges.settle();
      await bridges.resetCounters();
    }
    const before = await commandsProcessed();
    return {
      async stop() {
        const http = impl.tcp ? undefined : await bridges.received();
        return { http, commands: (await commandsProcessed()) - before };
      },
    };
  },
};

/** One round trip of the fan-out: the median uncontended acquire of the library (one round to all nodes). */
async function roundTripMs(): Promise<number> {
  const impl = edgeRedlockImpl(nodes, OPTIONS, "rtt");
  const samples: number[] = [];
  for (let i = 0; i < 30; i++) {
    const t = performance.now();
    const held = await impl.acquire(`rtt:${i}`, TTL);
    samples.push(performance.now() - t);
    await held.release();
  }
  return percentile(samples, 50);
}

/** The herd and steady rows for the five implementations, each client with its own instance, in one run. */
async function fairContention(): Promise<void> {
  const rtt = await roundTripMs();
  const makers: [string, () => Impl][] = [
    ["edge-redlock", () => edgeRedlockImpl(nodes, OPTIONS)],
    ["edge-redlock-random", () => edgeRedlockImpl(nodes, OPTIONS, "edge-redlock-random", { fair: false })],
    ["node-redlock", () => nodeRedlockImpl(nodes, OPTIONS)],
    ["redis-semaphore", () => redisSemaphoreImpl(nodes, OPTIONS)],
    ["upstash-lock", () => upstashLockImpl(nodes, OPTIONS)],
  ];
  for (const [name, make] of makers) {
    record("contention-herd", name, { ...(await herd(make, `herd:${name}`, rtt, counters)), rttMs: rtt });
    await sleep(200);
    record("contention-steady", name, {
      ...(await steady(make, `steady:${name}`, rtt, SIZE.contentionMs, counters)),
      rttMs: rtt,
    });
    await sleep(200);
  }
}

const timings: Record<string, number> = {};
const timed = async (name: string, run: () => Promise<void>) => {
  if (only && !only.includes(name)) return;
  const t = performance.now();
  await run();
  timings[name] = round((performance.now() - t) / 1000, 1);
};
try {
  await timed("healthy", () => healthy(withPrevious));
  await timed("healthy-alone", async () => {
    for (const [impl, f] of await healthyAlone(nodes, SIZE.healthyAlone)) record("healthy-alone", impl, f);
  });
  await timed("slow-minority", () => slowMinority(impls));
  await timed("hung-node", async () => {
    for (const impl of impls) await hungNode(impl);
  });
  await timed("contention", async () => {
    for (const impl of [...impls, tuned]) await contention(impl);
    await fairContention();
  });
  await timed("throughput", () => throughput([...impls.slice(0, 1), floorBatched, ...impls.slice(1)]));
  await timed("many-locks", async () => {
    for (const impl of [...impls.slice(0, 1), floorBatched, ...impls.slice(1)]) await manyLocks(impl);
  });
  await timed("wan", () =>
    wan([
      roundTripImpl(nodes),
      byName("floor"),
      byName("edge-redlock"),
      byName("node-redlock"),
      byName("upstash-lock"),
      byName("redis-semaphore"),
    ]),
  );
  await timed("cpu-in-process", cpuScenario);
} finally {
  await Promise.all([...impls, tuned, floorBatched].map((impl) => impl.close()));
  for (const r of direct) r.disconnect();
  await cluster.stop();
}

addRatios(results);
const machine = {
  cpu: cpus()[0]?.model ?? "unknown",
  cores: cpus().length,
  memoryGiB: round(totalmem() / 2 ** 30, 1),
  node: process.version,
  platform: `${process.platform}-${process.arch}`,
};
process.stdout.write(`${render(results)}\n`);
const judged = verdicts(results);
process.stdout.write(
  "\ntargets (edge-redlock, ratios from this run)\n" +
    table(
      ["target", "measured", "bound", "met"],
      judged.map((v) => [v.target, v.value.toFixed(3), v.bound, v.met ? "yes" : "NO"]),
    ) +
    "\n",
);
for (const scenario of Object.values(results))
  for (const r of Object.values(scenario))
    for (const k of Object.keys(r) as (keyof Result)[])
      if (typeof r[k] === "number") (r as Record<string, unknown>)[k] = round(r[k] as number, 3);
const seconds = round((performance.now() - started) / 1000, 1);
process.stdout.write(
  `\nscenario seconds: ${Object.entries(timings)
    .map(([k, v]) => `${k} ${v}`)
    .join(", ")}\n`,
);
if (only) {
  process.stdout.write(`--only: bench/results.json left as it was (${seconds} s)\n`);
} else {
  // The figures of `npm run bench:waiting` (its own key) stay as that run wrote them.
  const kept = existsSync("bench/results.json")
    ? { waiting: (JSON.parse(readFileSync("bench/results.json", "utf8")) as { waiting?: unknown }).waiting }
    : {};
  writeFileSync(
    "bench/results.json",
    `${JSON.stringify(
      {
        ...kept,
        machine,
        date: new Date().toISOString(),
        quick,
        seconds,
        scenarioSeconds: timings,
        scenarios: results,
        targets: judged,
      },
      null,
      2,
    )}\n`,
  );
  process.stdout.write(`wrote bench/results.json (${quick ? "quick" : "full"} run, ${seconds} s)\n`);
  if (!quick) {
    // The full run's tables replace the ones docs/PERFORMANCE.md shows, between its two markers.
    const doc = "docs/PERFORMANCE.md";
    const [start, end] = ["<!-- the last full run: start -->", "<!-- the last full run: end -->"];
    const text = readFileSync(doc, "utf8");
    const from = text.indexOf(start);
    const to = text.indexOf(end);
    if (from < 0 || to < from) process.stdout.write(`${doc} has no markers ${start} … ${end}: left as it was\n`);
    else {
      const targetsTable = markdownTable(
        ["target", "measured", "bound", "met"],
        judged.map((v) => [v.target, v.value.toFixed(3), v.bound, v.met ? "yes" : "NO"]),
      );
      const section = [
        `${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB} GiB, Node ${machine.node}; \`npm run bench\`, ` +
          `${seconds} s, load average ${round(loadAtStart, 2)} when it started.`,
        render(results, true),
        `**targets** (edge-redlock, ratios from this run)\n\n${targetsTable}`,
      ].join("\n\n");
      writeFileSync(doc, `${text.slice(0, from + start.length)}\n${section}\n${text.slice(to)}`);
      process.stdout.write(`wrote the tables of ${doc}\n`);
    }
  }
}
process.exit(0);
