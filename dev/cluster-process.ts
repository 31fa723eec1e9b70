// The local cluster in a child process (`dev/cli.ts`): for callers that must keep ioredis and the
// bridges out of their own process (vitest globalSetup for workerd, benchmarks measuring client CPU).
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { ClusterNode } from "./cluster.ts";

/** A cluster running in a child process. */
export interface ClusterProcess {
  nodes: ClusterNode[];
  stop(): Promise<void>;
}

/**
 * Starts `dev/cli.ts` with the current Node and resolves with the nodes it prints.
 * @example
 * const cluster = await spawnCluster({ nodes: 5, tcpProxy: true });
 * await cluster.stop();
 */
export async function spawnCluster(
  options: { nodes?: number; tcpProxy?: boolean; binary?: string } = {},
): Promise<ClusterProcess> {
  // From source dev/cli.ts; built into the package (dist/dev) it is cli.js.
  const source = import.meta.url.endsWith(".ts");
  const cli = fileURLToPath(new URL(source ? "./cli.ts" : "./cli.js", import.meta.url));
  const args = [
    cli,
    `--nodes=${options.nodes ?? 5}`,
    ...(options.tcpProxy ? ["--tcp-proxy"] : []),
    ...(options.binary ? [`--binary=${options.binary}`] : []),
  ];
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
  let err = "";
  child.stderr.on("data", (chunk) => (err += String(chunk)));
  const nodes = await new Promise<ClusterNode[]>((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (chunk) => {
      out += String(chunk);
      try {
        resolve((JSON.parse(out) as { nodes: ClusterNode[] }).nodes);
      } catch {
        // the JSON is not complete yet
      }
    });
    child.once("exit", (code) => reject(new Error(`cluster exited (${code}): ${err.trim()}`)));
  });
  return {
    nodes,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}
