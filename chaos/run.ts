// `npm run chaos [-- --seed N --duration S --cycles N --clients N --unsafe-restart]`:
// 16 clients in worker threads contend for one resource on five real lock nodes while a seeded
// scheduler injects faults; then the independent checker judges the log. Exits 1 on any violation.
import { createWriteStream, mkdirSync } from "node:fs";
import { Worker } from "node:worker_threads";
import { Redis as TcpRedis } from "ioredis";
import { startCluster } from "../dev/cluster.ts";
import { check, formatReport, readLog } from "./checker.ts";
import { nextFault, prng } from "./faults.ts";
import { sharedNow, type ChaosRecord, type FaultKind } from "./records.ts";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const seed = arg("seed", 1);
const durationMs = arg("duration", 150) * 1000;
const maxCycles = arg("cycles", Number.POSITIVE_INFINITY);
const clients = arg("clients", 16);
const unsafeRestart = process.argv.includes("--unsafe-restart");
const noFaults = process.argv.includes("--no-faults");
const TTL = 1_000;
const RESOURCE = "chaos:resource";
const COUNTER = "chaos:counter";
const logPath = `.tmp/chaos/chaos-seed${seed}${unsafeRestart ? "-unsafe" : ""}.jsonl`;

mkdirSync(".tmp/chaos", { recursive: true });
const log = createWriteStream(logPath);
const write = (record: ChaosRecord) => log.write(JSON.stringify(record) + "\n");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const cluster = await startCluster({ nodes: 6 });
const lockNodes = cluster.nodes.slice(0, 5);
const store = cluster.nodes[5];
write({ type: "start", seed, unsafeRestart, clients, ttl: TTL, at: sharedNow() });
process.stderr.write(`chaos: seed ${seed}, ${clients} clients, ${durationMs / 1000} s${unsafeRestart ? ", UNSAFE immediate empty restarts (negative control)" : ""}; log ${logPath}\n`);

let cycles = 0;
const workers = Array.from({ length: clients }, (_, client) => {
  const worker = new Worker(new URL("./client.ts", import.meta.url), {
    workerData: { client, lockNodes, store, ttl: TTL, resource: RESOURCE, counterKey: COUNTER },
  });
  worker.on("message", (record: ChaosRecord) => {
    if (record.type === "cs") cycles++;
    write(record);
  });
  worker.on("error", (error) => process.stderr.write(`client ${client} crashed: ${error.message}\n`));
  return worker;
});

// The fault scheduler: one fault every 300–900 ms, at most one at a time per node, at most two nodes down.
const random = prng(seed);
const busyUntil = new Array(5).fill(0);
const down = new Set<number>();
const pending: Promise<void>[] = [];
const began = Date.now();
const running = () => Date.now() - began < durationMs && cycles < maxCycles;

async function inject(kind: FaultKind, node: number, duration: number): Promise<void> {
  const bridge = cluster.bridges[node];
  const server = cluster.servers[node];
  switch (kind) {
    case "kill-restart":
      down.add(node);
      await server.kill();
      await sleep(duration);
      await server.restartEmpty();
      await bridge.ready();
      down.delete(node);
      return;
    case "pause":
      down.add(node);
      server.pause();
      await sleep(duration);
      server.resume();
      down.delete(node);
      return;
    case "latency":
      bridge.setFaults({ latencyMs: 100 + Math.round(random() * 300) });
      await sleep(duration);
      bridge.setFaults({ latencyMs: 0 });
      return;
    case "hang":
      bridge.setFaults({ hang: true });
      await sleep(duration);
      bridge.setFaults({ hang: false });
      return;
    case "http-500":
    case "http-503":
      bridge.setFaults({ status: kind === "http-500" ? 500 : 503 });
      await sleep(duration);
      bridge.setFaults({ status: null });
      return;
    case "garbage": {
      const kinds = ["html", "text", "json-shape", "truncated", "empty"] as const;
      bridge.setFaults({ garbage: kinds[Math.floor(random() * kinds.length)] });
      await sleep(duration);
      bridge.setFaults({ garbage: null });
      return;
    }
  }
}

let lastProgress = Date.now();
while (running()) {
  await sleep(300 + Math.round(random() * 600));
  const fault = nextFault(random, { ttl: TTL, nodes: 5, clients, unsafeRestart });
  if (noFaults) continue;
  const at = sharedNow();
  if (fault.kind === "client-stall") {
    workers[fault.target].postMessage({ stall: fault.duration });
    write({ type: "fault", kind: fault.kind, target: `client ${fault.target}`, at, until: at + fault.duration });
  } else {
    const targets = fault.also === undefined ? [fault.target] : [fault.target, fault.also];
    const takesDown = fault.kind === "kill-restart" || fault.kind === "pause";
    const free = targets.every((node) => Date.now() >= busyUntil[node] && !down.has(node));
    if (!free || (takesDown && down.size + targets.length > 2)) continue;
    for (const node of targets) busyUntil[node] = Date.now() + fault.duration + 100;
    write({ type: "fault", kind: fault.kind, target: `node ${targets.join("+")}`, at, until: at + fault.duration });
    for (const node of targets) {
      pending.push(inject(fault.kind, node, fault.duration).catch((e: Error) => void process.stderr.write(`fault ${fault.kind} failed: ${e.message}\n`)));
    }
  }
  if (Date.now() - lastProgress > 10_000) {
    lastProgress = Date.now();
    process.stderr.write(`chaos: ${Math.round((Date.now() - began) / 1000)} s, ${cycles} critical sections\n`);
  }
}

// Wind down: stop the clients after their current cycle, let the faults end, record the final state.
for (const worker of workers) worker.postMessage({ stop: true });
await Promise.race([Promise.all(workers.map((w) => new Promise((r) => w.once("exit", r)))), sleep(15_000)]);
await Promise.all(workers.map((w) => w.terminate()));
await Promise.all(pending);
const tcp = new TcpRedis(store.redisUrl);
const counter = Number((await tcp.get(COUNTER)) ?? 0);
tcp.disconnect();
write({ type: "final", at: sharedNow(), counter });
await new Promise((r) => log.end(r));
await cluster.stop();

const report = check(readLog(logPath));
process.stdout.write(formatReport(report) + "\n");
process.stdout.write(`reproduce: npm run chaos -- --seed ${seed} --duration ${durationMs / 1000}${unsafeRestart ? " --unsafe-restart" : ""}\n`);
process.exit(report.violations.length > 0 ? 1 : 0);
