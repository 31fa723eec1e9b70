// `npm run chaos [-- --seed N --duration S --cycles N --clients N --semaphore-clients N --rw-clients N --resources K
// --work A-B --episode S --unsafe-restart --naive-semaphore --naive-rw --no-faults --soak]`:
// clients in worker threads contend for shared resources on five real lock nodes, each client over links
// of its own (so partitions can split clients): lock clients for fenced mutexes, semaphore clients for the
// permits of `redlock.semaphore("chaos:semaphore", 3)` (or, with --naive-semaphore, of the naive per-node
// counting semaphore: the negative control), read-write clients for `redlock.readWriteLock("chaos:rw")` (every
// third a writer; with --naive-rw, the naive reader-counting read-write lock: its negative control). The run alternates
// a seeded random fault scheduler with three targeted scenarios: the quorum-crash nemesis, a client crash mid-section,
// the semaphore windows. Then the independent checker judges the log. Exits 1 on any violation.
import { createWriteStream, mkdirSync } from "node:fs";
import { Redis as TcpRedis } from "ioredis";
import { startCluster } from "../dev/cluster.ts";
import { launchFromShell } from "../dev/redis-server.ts";
import { Bed, linkName } from "./bed.ts";
import { check, formatReport, readLog } from "./checker.ts";
import { formatLiveness, liveness } from "./liveness.ts";
import { crashMidSection } from "./crash.ts";
import { planQuorumCrash, prng, type PartitionKind } from "./faults.ts";
import { naiveKey } from "./naive-semaphore.ts";
import { quorumCrash } from "./nemesis.ts";
import { ClientPool } from "./pool.ts";
import { sharedNow, watchStalls, type ChaosRecord, type ResourceSpec } from "./records.ts";
import { randomEpisode } from "./scheduler.ts";
import { ResourceWatch, type PermitKeys } from "./watch.ts";
import { semaphoreWindows } from "./windows.ts";

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
// The soak: 100,000 sections (or 100 min) on 2 cores — several resources, two lock clients on each, short sections.
const seed = arg("seed", 1);
const durationMs = arg("duration", soak ? 6_000 : 150) * 1000;
const maxCycles = arg("cycles", soak ? 100_000 : Number.POSITIVE_INFINITY);
const lockClients = arg("clients", soak ? 12 : 16);
// The semaphore's clients come after the lock clients: 5 of them, one per window of the targeted scenario.
const semaphoreClients = arg("semaphore-clients", 5);
// The read-write lock's clients come last: every third one writes, the others read.
const rwClients = arg("rw-clients", 6);
const clients = lockClients + semaphoreClients + rwClients;
const resourceCount = arg("resources", soak ? 6 : 1);
const workMs = range("work", soak ? [2, 8] : [100, 400]);
const episodeMs = arg("episode", soak ? 15 : 2.5) * 1000;
const unsafeRestart = flag("unsafe-restart");
const naiveSemaphore = flag("naive-semaphore");
const naiveRw = flag("naive-rw");
const noFaults = flag("no-faults");
const TTL = 1_000;
const NODE_TIMEOUT = 150;
const NODES = 5;
const FREE_SLACK_MS = 1_000;
const COUNTER = (r: number) => `chaos:counter:${r}`;
const mutexes: ResourceSpec[] = Array.from({ length: resourceCount }, (_, r) => ({
  name: `chaos:resource:${r}`,
  limit: 1,
}));
const SEMAPHORE: ResourceSpec = { name: "chaos:semaphore", limit: 3 };
const READ_WRITE: ResourceSpec = { name: "chaos:rw", limit: 1, readWrite: true };
const resources: ResourceSpec[] = [
  ...mutexes,
  ...(semaphoreClients > 0 ? [SEMAPHORE] : []),
  ...(rwClients > 0 ? [READ_WRITE] : []),
];
// Where the permits live on the nodes (the sound semaphore's slot keys are documented in docs/SAFETY.md).
const permitKeys: PermitKeys = naiveSemaphore
  ? { naive: naiveKey(SEMAPHORE.name) }
  : { slots: Array.from({ length: SEMAPHORE.limit }, (_, s) => `edge-redlock:semaphore:${SEMAPHORE.name}:${s}`) };
const logSuffix = [
  unsafeRestart ? "-unsafe" : "",
  naiveSemaphore ? "-naive" : "",
  naiveRw ? "-naive-rw" : "",
  soak ? "-soak" : "",
].join("");
const logPath = `.tmp/chaos/chaos-seed${seed}${logSuffix}.jsonl`;

mkdirSync(".tmp/chaos", { recursive: true });
const log = createWriteStream(logPath);
const write = (record: ChaosRecord) => log.write(`${JSON.stringify(record)}\n`);

// Restarted nodes are forked by a small shell, not by this process, which grows to gigabytes with the clients.
launchFromShell();
// Stopped by a signal, leave through "exit": the cluster's exit hook kills the servers the shell started.
for (const [signal, code] of [
  ["SIGINT", 130],
  ["SIGTERM", 143],
] as const)
  process.once(signal, () => process.exit(code));
const cluster = await startCluster({ nodes: NODES + 1 });
const lockNodes = cluster.nodes.slice(0, NODES);
const store = cluster.nodes[NODES];
// Each client reaches each lock node through a link of its own.
const links = await Promise.all(
  Array.from({ length: clients }, (_, client) =>
    Promise.all(cluster.bridges.slice(0, NODES).map((bridge) => bridge.addLink(linkName(client)))),
  ),
);
write({
  type: "start",
  seed,
  unsafeRestart,
  clients,
  ttl: TTL,
  at: sharedNow(),
  nodes: NODES,
  resources,
  freeSlackMs: FREE_SLACK_MS,
  ...(naiveSemaphore ? { naiveSemaphore } : {}),
  ...(naiveRw ? { naiveRw } : {}),
});
process.stderr.write(
  `chaos: seed ${seed}, ${lockClients} lock clients on ${resourceCount} mutex(es)` +
    (semaphoreClients > 0
      ? ` + ${semaphoreClients} on ${SEMAPHORE.name} (limit ${SEMAPHORE.limit}` +
        `${naiveSemaphore ? ", NAIVE per-node counting semaphore (negative control)" : ""})`
      : "") +
    (rwClients > 0
      ? ` + ${rwClients} readers and writers on ${READ_WRITE.name}` +
        `${naiveRw ? " (NAIVE reader-counting read-write lock: negative control)" : ""}`
      : "") +
    `, work ${workMs.join("-")} ms, ${durationMs / 1000} s` +
    `${Number.isFinite(maxCycles) ? ` or ${maxCycles} sections` : ""}` +
    `${unsafeRestart ? ", UNSAFE immediate empty restarts (negative control)" : ""}; log ${logPath}\n`,
);

const pool = new ClientPool(
  clients,
  (client) => ({
    lockNodes: links[client].map((url) => ({ url, token: lockNodes[0].token })),
    store: { url: store.url, token: store.token },
    ttl: TTL,
    nodeTimeout: NODE_TIMEOUT,
    ...(client < lockClients
      ? {
          resource: mutexes[client % resourceCount].name,
          guard: { kind: "lock", counterKey: COUNTER(client % resourceCount) } as const,
        }
      : client < lockClients + semaphoreClients
        ? {
            resource: SEMAPHORE.name,
            guard: { kind: "semaphore", limit: SEMAPHORE.limit, naive: naiveSemaphore } as const,
          }
        : {
            resource: READ_WRITE.name,
            guard: {
              kind: "rw",
              mode: (client - lockClients - semaphoreClients) % 3 === 0 ? "write" : "read",
              naive: naiveRw,
            } as const,
          }),
    workMs,
  }),
  write,
);
const bed = new Bed({ cluster, pool, nodes: NODES, ttl: TTL, unsafeRestart, write });
const watch = new ResourceWatch(lockNodes.map((n) => n.redisUrl));
// The main thread runs the five bridges: when it stalls, every client times out on every node.
const stopStallWatch = watchStalls(write);
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
  process.stderr.write(
    `chaos: ${Math.round(s)} s, ${pool.cycles} critical sections (${Math.round((pool.cycles / s) * 60)}/min)\n`,
  );
};

// The director: random faults, the quorum-crash nemesis, a client crash, the semaphore windows, random
// faults, … Each targeted scenario starts once every random fault has ended, so it has the cluster to itself.
const scenarios = semaphoreClients > 0 ? 4 : 3;
const semaphoreClientIds = Array.from({ length: semaphoreClients }, (_, j) => lockClients + j);
let nemeses = 0;
let crashes = 0;
let windows = 0;
for (let episode = 0; running() && !noFaults; episode++) {
  switch (episode % scenarios) {
    case 0:
      await randomEpisode(
        bed,
        random,
        plan,
        episodeMs,
        openers[Math.floor(episode / scenarios) % openers.length],
        running,
      );
      await bed.drain();
      break;
    case 1:
      progress(
        await quorumCrash(bed, watch, planQuorumCrash(random, NODES), random, {
          resource: mutexes[0].name,
          holdMs: 0.8 * TTL,
          restartDelayMs: 1.5 * TTL,
          index: ++nemeses,
        }),
      );
      break;
    case 2:
      // A crashed holder's lock must come free within its ttl: judged on the mutexes (a semaphore has other slots).
      progress(
        await crashMidSection(bed, watch, random, {
          sectionMs: 0.5 * TTL,
          freeSlackMs: FREE_SLACK_MS,
          index: ++crashes,
          resources: mutexes.map((r) => r.name),
        }),
      );
      break;
    case 3:
      progress(
        await semaphoreWindows(bed, watch, random, {
          resource: SEMAPHORE.name,
          clients: semaphoreClientIds,
          keys: permitKeys,
          holdMs: 0.8 * TTL,
          token: lockNodes[0].token,
          index: ++windows,
        }),
      );
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
stopStallWatch();
const tcp = new TcpRedis(store.redisUrl);
const counters = Object.fromEntries(
  await Promise.all(mutexes.map(async (r, i) => [r.name, Number((await tcp.get(COUNTER(i))) ?? 0)] as const)),
);
tcp.disconnect();
write({ type: "final", at: sharedNow(), counter: counters[mutexes[0].name], counters });
await new Promise((r) => log.end(r));
await cluster.stop();

const elapsed = (Date.now() - began) / 1000;
const records = readLog(logPath);
const report = check(records);
process.stdout.write(`${formatReport(report)}\n`);
process.stdout.write(`${formatLiveness(liveness(records))}\n`);
process.stdout.write(
  `rate: ${report.cycles} critical sections in ${Math.round(elapsed)} s = ` +
    `${Math.round((report.cycles / elapsed) * 60)} per minute\n`,
);
process.stdout.write(
  `reproduce: npm run chaos -- --seed ${seed} ${process.argv
    .slice(2)
    .filter((a, i, all) => a !== "--seed" && all[i - 1] !== "--seed")
    .join(" ")}\n`,
);
process.exit(report.violations.length > 0 ? 1 : 0);
