// `npm run -s cluster`: start the local cluster, print it (JSON, or with --env as KEY=VALUE lines), run until Ctrl-C
// or SIGTERM. Only the nodes go to stdout, so `npm run -s cluster > nodes.json` is clean; `-- --out .tmp/local.env`
// writes the variables to a file with mode 0600 (a shell redirect would leave the tokens world-readable).
import { startCluster, type Cluster } from "./cluster.ts";
import { envNames } from "../src/node/env.ts";
import { writeDevVars } from "./dev-vars.ts";

// The handlers come first: a parent that reads the nodes may signal at once, before a handler installed after the
// print would run, and the default action would leave the redis-servers running. Stopped before the cluster is up,
// the exit hook of dev/cluster.ts kills the servers started so far.
let cluster: Cluster | undefined;
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await cluster?.stop();
  process.exit(0);
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
process.on("SIGHUP", stop);

const nodes = Number(process.argv.find((arg) => arg.startsWith("--nodes="))?.split("=")[1] ?? 5);
const binary = process.argv.find((arg) => arg.startsWith("--binary="))?.slice("--binary=".length);
cluster = await startCluster({ nodes, tcpProxy: process.argv.includes("--tcp-proxy"), binary });
const out = process.argv.find((arg) => arg.startsWith("--out="))?.slice("--out=".length);
if (out) {
  const vars = cluster.nodes.flatMap((node, i) => [
    [envNames(i + 1).url, node.url],
    [envNames(i + 1).token, node.token],
  ]);
  writeDevVars(out, Object.fromEntries(vars));
  process.stderr.write(`variables written to ${out} (mode 600)\n`);
} else if (process.argv.includes("--env")) {
  const lines = cluster.nodes.flatMap((node, i) => [
    `# node ${i + 1}: admin API ${node.adminUrl}`,
    `${envNames(i + 1).url}=${node.url}`,
    `${envNames(i + 1).token}=${node.token}`,
  ]);
  process.stdout.write(`${lines.join("\n")}\n`);
} else {
  process.stdout.write(`${JSON.stringify({ nodes: cluster.nodes }, null, 2)}\n`);
}
process.stderr.write(`${nodes} nodes running. Ctrl-C to stop.\n`);
// A SIGTERM to `npm run cluster` ends npm (and its shell) without reaching this process, which is then
// re-parented: notice that and stop, so no redis-server outlives the command.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) void stop();
}, 500).unref();
