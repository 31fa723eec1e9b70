// globalSetup for tests that run inside another runtime (workerd, edge-runtime): start a five-node
// cluster in a child process (`dev/cli.ts`), hand its nodes over with `provide` (tests read them with
// `inject("clusterNodes")`), stop it at the end. A child process keeps ioredis out of the project's bundler.
import { spawn } from "node:child_process";
import type { TestProject } from "vitest/node";
import type { ClusterNode } from "../dev/cluster.ts";

declare module "vitest" {
  interface ProvidedContext {
    clusterNodes: ClusterNode[];
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const child = spawn(process.execPath, ["dev/cli.ts", "--nodes=5"], { stdio: ["ignore", "pipe", "pipe"] });
  const nodes = await new Promise<ClusterNode[]>((resolve, reject) => {
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk) => {
      out += String(chunk);
      try {
        resolve((JSON.parse(out) as { nodes: ClusterNode[] }).nodes);
      } catch {
        // not complete yet
      }
    });
    child.stderr.on("data", (chunk) => (err += String(chunk)));
    child.once("exit", (code) => reject(new Error(`cluster exited (${code}): ${err}`)));
  });
  project.provide("clusterNodes", nodes);
  return () =>
    new Promise<void>((resolve) => {
      child.once("exit", () => resolve());
      child.kill("SIGTERM");
    });
}
