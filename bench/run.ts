// `npm run bench [-- --quick]`: every implementation against the same local five-node cluster, in one run.
import { writeFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { Redis as IORedis } from "ioredis";
import { nodeAdmin } from "../dev/admin.ts";
import { spawnCluster } from "../dev/cluster-process.ts";
import { edgeRedlockImpl, floorImpl, nodeRedlockImpl, redisSemaphoreImpl, upstashLockImpl, type Impl, type ImplOptions } from "./impls.ts";
import { percentile, round, table } from "./stats.ts";

const quick = process.argv.includes("--quick");
const SIZE = quick
  ? { healthy: 60, slow: 12, hung: 5, contentionMs: 2_000, throughputMs: 2_000 }
  : { healthy: 600, slow: 60, hung: 15, contentionMs: 12_000, throughputMs: 8_000 };
const TTL = 10_000;
const HUNG_CAP_MS = 1_500;
const OPTIONS: ImplOptions = { nodeTimeout: 500, retryDelay: 200, retryJitter: 100 };

type Result = { acquireP50Ms?: number; healthyAcquireP50Ms?: number; p50Ms?: number; p99Ms?: number; cpuUsPerCycle?: number; opsPerSec?: number; idleGapP50Ms?: number; idleGapP99Ms?: number; requestsPerGrant?: number; releaseP50Ms?: number; releaseP99Ms?: number; capped?: number; note?: string };
const results: Record<string, Record<string, Result>> = {};
const record = (scenario: string, impl: string, result: Result) => ((results[scenario] ??= {})[impl] = result);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const started = performance.now();

// The cluster runs in its own process, so the client CPU measured here is the clients' alone.
const cluster = await spawnCluster({ nodes: 5, tcpProxy: true });
const nodes = cluster.nodes;
const admins = nodes.map((n) => nodeAdmin(n.adminUrl));
const direct = nodes.map((n) => new IORedis(n.redisUrl));

const impls: Impl[] = [
  await floorImpl(nodes, OPTIONS),
  edgeRedlockImpl(nodes, OPTIONS),
  nodeRedlockImpl(nodes, OPTIONS),
  upstashLockImpl(nodes, OPTIONS),
  redisSemaphoreImpl(nodes, OPTIONS),
];
const tuned = edgeRedlockImpl(nodes, { ...OPTIONS, retryDelay: 30, retryJitter: 25 }, "edge-redlock-tuned");

async function resetFaults(): Promise<void> {
  await Promise.all(admins.map((a) => a.reset()));
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
async function healthy(all: Impl[]): Promise<void> {
  for (const impl of all) await warm(impl, quick ? 30 : 100);
  const samples = perImpl<number[]>(all, () => []);
  const acquires = perImpl<number[]>(all, () => []);
  const cpu = perImpl(all, () => 0);
  const rounds = quick ? 4 : 12;
  for (let r = 0; r < rounds; r++) {
    for (const impl of inRoundOrder(all, r)) {
      const before = process.cpuUsage();
      for (let i = 0; i < SIZE.healthy / rounds; i++) {
        const t = performance.now();
        const held = await impl.acquire(`healthy:${impl.name}:${r}:${i}`, TTL);
        acquires.get(impl.name)!.push(performance.now() - t);
        await held.release();
        samples.get(impl.name)!.push(performance.now() - t);
      }
      const used = process.cpuUsage(before);
      cpu.set(impl.name, cpu.get(impl.name)! + used.user + used.system);
    }
  }
  for (const impl of all) {
    const s = samples.get(impl.name)!;
    const a = acquires.get(impl.name)!;
    record("healthy", impl.name, { p50Ms: percentile(s, 50), p99Ms: percentile(s, 99), acquireP50Ms: percentile(a, 50), cpuUsPerCycle: cpu.get(impl.name)! / s.length });
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
    record("slow-minority", impl.name, { p50Ms: percentile(s, 50), p99Ms: percentile(s, 99), healthyAcquireP50Ms: percentile(h, 50) });
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
    const held = await Promise.race([impl.acquire(`hung:${impl.name}:${i}`, TTL), sleep(HUNG_CAP_MS).then(() => undefined)]);
    acquire.push(performance.now() - t);
    if (!held) {
      acquireCapped++;
      continue;
    }
    t = performance.now();
    const outcome = await Promise.race([held.release().then(() => "done", () => "done"), sleep(HUNG_CAP_MS).then(() => "capped")]);
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
    ...(capped ? { capped, note: `release never returned in ${capped}/${SIZE.hung} cycles: cut at ${HUNG_CAP_MS} ms` } : {}),
    ...(acquireCapped ? { capped: acquireCapped, note: `acquire never returned in ${acquireCapped}/${SIZE.hung} cycles: cut at ${HUNG_CAP_MS} ms` } : {}),
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
      let held;
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

async function throughput(impl: Impl): Promise<void> {
  const deadline = performance.now() + SIZE.throughputMs;
  const samples: number[] = [];
  let n = 0;
  const worker = async (w: number) => {
    while (performance.now() < deadline) {
      const t = performance.now();
      await (await impl.acquire(`tp:${impl.name}:${w}:${n++}`, TTL)).release();
      samples.push(performance.now() - t);
    }
  };
  await Promise.all(Array.from({ length: 32 }, (_, w) => worker(w)));
  record("throughput", impl.name, { opsPerSec: samples.length / (SIZE.throughputMs / 1000), p50Ms: percentile(samples, 50), p99Ms: percentile(samples, 99) });
}

try {
  await healthy(impls);
  await slowMinority(impls);
  for (const impl of impls) await hungNode(impl);
  for (const impl of [...impls, tuned]) await contention(impl);
  for (const impl of impls) await throughput(impl);
} finally {
  await Promise.all([...impls, tuned].map((impl) => impl.close()));
  for (const r of direct) r.disconnect();
  await cluster.stop();
}

// Ratios of p50 (or ops/s for contention and throughput) to the floor and to node-redlock, from this run.
for (const [name, scenario] of Object.entries(results)) {
  const metric = (r: Result) => (name === "contention" || name === "throughput" ? r.opsPerSec : r.p50Ms);
  for (const r of Object.values(scenario) as (Result & { vsFloor?: number; vsNodeRedlock?: number })[]) {
    const floor = scenario.floor && metric(scenario.floor);
    const nr = scenario["node-redlock"] && metric(scenario["node-redlock"]);
    if (floor && metric(r) !== undefined) r.vsFloor = round(metric(r)! / floor, 3);
    if (nr && metric(r) !== undefined) r.vsNodeRedlock = round(metric(r)! / nr, 3);
  }
}

const rows: (string | number)[][] = [];
for (const [scenario, byImpl] of Object.entries(results)) {
  for (const [impl, r] of Object.entries(byImpl) as [string, Result & { vsFloor?: number; vsNodeRedlock?: number }][]) {
    rows.push([
      scenario,
      impl,
      r.acquireP50Ms ?? "",
      r.healthyAcquireP50Ms ?? "",
      r.p50Ms ?? "",
      r.p99Ms ?? "",
      r.opsPerSec ?? "",
      r.cpuUsPerCycle ?? "",
      r.releaseP50Ms ?? "",
      r.idleGapP50Ms ?? "",
      r.idleGapP99Ms ?? "",
      r.requestsPerGrant ?? "",
      r.vsFloor ?? "",
      r.vsNodeRedlock ?? "",
    ]);
  }
}
const machine = { cpu: cpus()[0]?.model ?? "unknown", cores: cpus().length, memoryGiB: round(totalmem() / 2 ** 30, 1), node: process.version, platform: `${process.platform}-${process.arch}` };
process.stdout.write(
  table(["scenario", "impl", "acquire p50", "baseline p50", "p50 ms", "p99 ms", "ops/s", "cpu µs/cycle", "release p50", "gap p50", "gap p99", "cmds/grant", "×floor", "×node-redlock"], rows) + "\n",
);
const healthyEdge = results.healthy?.["edge-redlock"];
const slowEdge = results["slow-minority"]?.["edge-redlock"];
const hungEdge = results["hung-node"]?.["edge-redlock"];
process.stdout.write(
  `\ntargets (edge-redlock): healthy p50 ${round(healthyEdge.p50Ms! / results.healthy.floor.p50Ms!, 3)}× floor (≤ 1.10); ` +
    `slow-minority acquire p50 ${round(slowEdge.p50Ms! / slowEdge.healthyAcquireP50Ms!, 3)}× healthy acquire p50 of the same rounds (≤ 1.25; floor ${round(results["slow-minority"].floor.p50Ms! / results["slow-minority"].floor.healthyAcquireP50Ms!, 3)}×); ` +
    `hung-node release p50 ${round(hungEdge.releaseP50Ms!, 1)} ms (≤ ${OPTIONS.nodeTimeout + 20}); ` +
    `CPU ${round(healthyEdge.cpuUsPerCycle! / results.healthy.floor.cpuUsPerCycle!, 3)}× floor (≤ 1.10)\n`,
);
for (const scenario of Object.values(results)) for (const r of Object.values(scenario)) for (const k of Object.keys(r) as (keyof Result)[]) if (typeof r[k] === "number") (r as Record<string, unknown>)[k] = round(r[k] as number, 3);
writeFileSync("bench/results.json", JSON.stringify({ machine, date: new Date().toISOString(), quick, scenarios: results }, null, 2) + "\n");
process.stdout.write(`\nwrote bench/results.json (${quick ? "quick" : "full"} run, ${round((performance.now() - started) / 1000, 1)} s)\n`);
process.exit(0);
