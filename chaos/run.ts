// `npm run chaos [-- --seed N --duration S --cycles N --clients N --resources K --work A-B --episode S --unsafe-restart --no-faults --soak]`:
// clients in worker threads contend for shared resources on five real lock nodes, each client over links
// of its own (so partitions can split clients), while the run alternates a seeded random fault scheduler
// with two targeted scenarios: the quorum-crash nemesis and a client crash mid-section. Then the
// independent checker judges the log. Exits 1 on any violation.
import { createWriteStream, mkdirSync } from "node:fs";
import { Redis as TcpRedis } from "ioredis";
import { startCluster } from "../dev/cluster.ts";
import { Bed, linkName } from "./bed.ts";
import { check, formatReport, readLog } from "./checker.ts";
import { crashMidSection } from "./crash.ts";
import { planQuorumCrash, prng, type PartitionKind } from "./faults.ts";
import { quorumCrash } from "./nemesis.ts";
import { ClientPool } from "./pool.ts";
import { sharedNow, type ChaosRecord, type ResourceSpec } from "./records.ts";
import { randomEpisode } from "./scheduler.ts";
import { ResourceWatch } from "./watch.ts";

const flag = (name: string) => process.argv.includes(`--${name}`);
const soak = flag("soak");
const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const range = (name: string, fallback: [number, number]): [number, number] => {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const [lo, hi] = process.argv[i + 1].split("-").map(Number);
  return [lo, hi ?? lo];
};
// The soak: ≥ 10,000 sections within 30 min on 2 cores — more clients, several resources, short sections.
const seed = arg("seed", 1);
const durationMs = arg("duration", soak ? 1_800 : 150) * 1000;
const maxCycles = arg("cycles", soak ? 10_000 : Number.POSITIVE_INFINITY);
const clients = arg("clients", soak ? 24 : 16);
const resourceCount = arg("resources", soak ? 4 : 1);
const workMs = range("work", soak ? [10, 40] : [100, 400]);
const episodeMs = arg("episode", soak ? 15 : 2.5) * 1000;
const unsafeRestart = flag("unsafe-restart");
const noFaults = flag("no-faults");
const TTL = 1_000;
const NODE_TIMEOUT = 150;
const NODES = 5;
const FREE_SLACK_MS = 1_000;
const COUNTER = (r: number) => `chaos:counter:${r}`;
const resources: ResourceSpec[] = Array.from({ length: resourceCount }, (_, r) => ({ name: `chaos:resource:${r}`, limit: 1 }));
const logPath = `.tmp/chaos/chaos-seed${seed}${unsafeRestart ? "-unsafe" : ""}${soak ? "-soak" : ""}.jsonl`;

mkdirSync(".tmp/chaos", { recursive: true });
const log = createWriteStream(logPath);
const write = (record: ChaosRecord) => log.write(JSON.stringify(record) + "\n");

const cluster = await startCluster({ nodes: NODES + 1 });
const lockNodes = cluster.nodes.slice(0, NODES);
const store = cluster.nodes[NODES];
// Each client reaches each lock node through a link of its own.
const links = await Promise.all(
  Array.from({ length: clients }, (_, client) => Promise.all(cluster.bridges.slice(0, NODES).map((bridge) => bridge.addLink(linkName(client))))),
);
write({ type: "start", seed, unsafeRestart, clients, ttl: TTL, at: sharedNow(), nodes: NODES, resources, freeSlackMs: FREE_SLACK_MS });
process.stderr.write(
  `chaos: seed ${seed}, ${clients} clients on ${resourceCount} resource(s), work ${workMs.join("-")} ms, ${durationMs / 1000} s${Number.isFinite(maxCycles) ? ` or ${maxCycles} sections` : ""}` +
    `${unsafeRestart ? ", UNSAFE immediate empty restarts (negative control)" : ""}; log ${logPath}\n`,
);

const pool = new ClientPool(
  clients,
  (client) => ({
    lockNodes: links[client].map((url) => ({ url, token: lockNodes[0].token })),
    store: { url: store.url, token: store.token },
    ttl: TTL,
    nodeTimeout: NODE_TIMEOUT,
    resource: resources[client % resourceCount].name,
    counterKey: COUNTER(client % resourceCount),
    workMs,
  }),
  write,
);
const bed = new Bed({ cluster, pool, nodes: NODES, ttl: TTL, unsafeRestart, write });
const watch = new ResourceWatch(lockNodes.map((n) => n.redisUrl));
pool.start();

const began = Date.now();
const running = () => Date.now() - began < durationMs && pool.cycles < maxCycles;
const plan = { ttl: TTL, nodes: NODES, clients, unsafeRestart };
const random = prng(seed);
const openers: PartitionKind[] = ["partition-split", "partition-minority", "partition-flap"];
let lastProgress = Date.now();
const progress = (line?: string) => {
  if (line) process.stderr.write(`chaos: ${line}\n`);
  if (Date.now() - lastProgress < 10_000) return;
  lastProgress = Date.now();
  const s = (Date.now() - began) / 1000;
  process.stderr.write(`chaos: ${Math.round(s)} s, ${pool.cycles} critical sections (${Math.round((pool.cycles / s) * 60)}/min)\n`);
};

// The director: random faults, the quorum-crash nemesis, a client crash, random faults, … Each targeted
// scenario starts once every random fault has ended, so it has the cluster to itself.
let nemeses = 0;
let crashes = 0;
for (let episode = 0; running() && !noFaults; episode++) {
  switch (episode % 3) {
    case 0:
      await randomEpisode(bed, random, plan, episodeMs, openers[(episode / 3) % openers.length], running);
      await bed.drain();
      break;
    case 1:
      progress(await quorumCrash(bed, watch, planQuorumCrash(random, NODES), random, { resource: resources[0].name, holdMs: 0.8 * TTL, restartDelayMs: 1.5 * TTL, index: ++nemeses }));
      break;
    case 2:
      progress(await crashMidSection(bed, watch, random, { sectionMs: 0.5 * TTL, freeSlackMs: FREE_SLACK_MS, index: ++crashes }));
      break;
  }
  progress();
}
while (running()) {
  await new Promise((r) => setTimeout(r, 200));
  progress();
}

// Wind down: stop the clients after their current cycle, let the faults end, record the final state.
write({ type: "stop", at: sharedNow() });
await pool.stop(15_000);
await bed.drain();
watch.close();
const tcp = new TcpRedis(store.redisUrl);
const counters = Object.fromEntries(await Promise.all(resources.map(async (r, i) => [r.name, Number((await tcp.get(COUNTER(i))) ?? 0)] as const)));
tcp.disconnect();
write({ type: "final", at: sharedNow(), counter: counters[resources[0].name], counters });
await new Promise((r) => log.end(r));
await cluster.stop();

const elapsed = (Date.now() - began) / 1000;
const report = check(readLog(logPath));
process.stdout.write(formatReport(report) + "\n");
process.stdout.write(`rate: ${report.cycles} critical sections in ${Math.round(elapsed)} s = ${Math.round((report.cycles / elapsed) * 60)} per minute\n`);
process.stdout.write(`reproduce: npm run chaos -- --seed ${seed} ${process.argv.slice(2).filter((a, i, all) => a !== "--seed" && all[i - 1] !== "--seed").join(" ")}\n`);
process.exit(report.violations.length > 0 ? 1 : 0);
