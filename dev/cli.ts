// `npm run cluster`: start the local cluster, print it as JSON, run until Ctrl-C.
import { startCluster } from "./cluster.ts";

const nodes = Number(process.argv.find((arg) => arg.startsWith("--nodes="))?.split("=")[1] ?? 5);
const cluster = await startCluster({ nodes, tcpProxy: process.argv.includes("--tcp-proxy") });
process.stdout.write(JSON.stringify({ nodes: cluster.nodes }, null, 2) + "\n");
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
