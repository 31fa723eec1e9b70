// `npm run bench:workerd`: CPU per acquire+release inside workerd, the runtime of Cloudflare Workers, the
// way Workers bill it: per invocation, the CPU the runtime spent on it, not the time it waited for I/O.
// Local workerd reports no CPU time to tail workers (their `cpuTime` is 0), so this reads the workerd
// process's own CPU time (every thread, /proc/<pid>/task/*/schedstat, ns) across many invocations and
// takes away an empty invocation's: what is left is the handler's JS and the runtime's work on its
// subrequests. Against the local cluster (bridges in their own process); interleaved rounds.
import { readFileSync, readdirSync } from "node:fs";
import { build } from "esbuild";
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { spawnCluster } from "../dev/cluster-process.ts";
import { percentile, table } from "./stats.ts";

const INVOCATIONS = Number(process.argv[2] ?? 200);
const ROUNDS = 4;

/** CPU ns of every thread of the process `pid`. */
function cpuNs(pid: number): number {
  let total = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    total += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, "utf8").split(" ")[0]);
  }
  return total;
}

/** The workerd processes started by this process (Miniflare's runtime). */
function workerdPids(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const comm = /\((.*)\)/.exec(stat)?.[1] ?? "";
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (comm.startsWith("workerd") && ppid === process.pid) pids.push(Number(entry));
    } catch {
      // the process ended meanwhile
    }
  }
  return pids;
}

const cluster = await spawnCluster({ nodes: 5 });
const bundle = await build({
  entryPoints: ["bench/workerd-cpu-worker.ts"],
  bundle: true,
  format: "esm",
  platform: "browser",
  conditions: ["workerd", "worker", "browser"],
  write: false,
  logLevel: "silent",
});
const mf = new Miniflare(
  convertV4MiniflareOptions({
    modules: true,
    script: bundle.outputFiles[0].text,
    compatibilityDate: "2026-10-30",
    bindings: { NODES: JSON.stringify(cluster.nodes) },
  }),
);
await mf.ready;
const pids = workerdPids();
if (pids.length === 0) throw new Error("no workerd process found");
const cpu = () => pids.reduce((sum, pid) => sum + cpuNs(pid), 0);
const call = async (path: string) => {
  const res = await mf.dispatchFetch(`http://worker${path}`);
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  await res.text();
};

const routes: Record<string, { path: string; cycles: number }> = {
  "empty invocation": { path: "/empty", cycles: 1 },
  "edge-redlock: 1 lock": { path: "/lock?n=1", cycles: 1 },
  "floor (raw fetch): 1 lock": { path: "/floor?n=1", cycles: 1 },
  "edge-redlock: 20 locks": { path: "/many?n=1", cycles: 1 },
  "edge-redlock: 1 lock, fetch answered in the isolate": { path: "/lock?n=1&local", cycles: 1 },
  "floor: 1 lock, fetch answered in the isolate": { path: "/floor?n=1&local", cycles: 1 },
  "edge-redlock: 20 locks, fetch answered in the isolate": { path: "/many?n=1&local", cycles: 1 },
};
for (const { path } of Object.values(routes)) for (let i = 0; i < 50; i++) await call(path);
const samples = new Map(Object.keys(routes).map((name) => [name, [] as number[]]));
for (let r = 0; r < ROUNDS; r++) {
  const order = r % 2 ? Object.entries(routes).reverse() : Object.entries(routes);
  for (const [name, { path }] of order) {
    for (let i = 0; i < INVOCATIONS / ROUNDS; i++) {
      const before = cpu();
      await call(path);
      samples.get(name)!.push((cpu() - before) / 1e6);
    }
  }
}
await mf.dispose();
await cluster.stop();

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const empty = mean(samples.get("empty invocation")!);
console.log(
  `workerd process CPU per invocation (all threads), ${INVOCATIONS} invocations ` +
    `each in ${ROUNDS} interleaved rounds; ms\n`,
);
console.log(
  table(
    ["invocation", "mean ms", "p50 ms", "minus empty ms", "of the free plan's 10 ms"],
    [...samples].map(([name, xs]) => [
      name,
      mean(xs),
      percentile(xs, 50),
      mean(xs) - empty,
      `${(((mean(xs) - empty) / 10) * 100).toFixed(1)} %`,
    ]),
  ),
);
process.exit(0);
