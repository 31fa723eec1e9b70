// `npm run -s cluster`: start the local cluster, print it (JSON, or with --env as KEY=VALUE lines), run until Ctrl-C.
// Only the nodes go to stdout, so `npm run -s cluster > nodes.json` (or `-- --env > .tmp/local.env`) is clean.
import { startCluster } from "./cluster.ts";
import { envNames } from "../src/node/env.ts";

const nodes = Number(process.argv.find((arg) => arg.startsWith("--nodes="))?.split("=")[1] ?? 5);
const cluster = await startCluster({ nodes, tcpProxy: process.argv.includes("--tcp-proxy") });
if (process.argv.includes("--env")) {
  const lines = cluster.nodes.flatMap((node, i) => [
    `# node ${i + 1}: admin API ${node.adminUrl}`,
    `${envNames(i + 1).url}=${node.url}`,
    `${envNames(i + 1).token}=${node.token}`,
  ]);
  process.stdout.write(lines.join("\n") + "\n");
} else {
  process.stdout.write(JSON.stringify({ nodes: cluster.nodes }, null, 2) + "\n");
}
process.stderr.write(`${nodes} nodes running. Ctrl-C to stop.\n`);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await cluster.stop();
  process.exit(0);
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
