// globalSetup for tests that run inside another runtime (workerd, edge-runtime): start a five-node
// cluster in a child process, hand its nodes over with `provide` (tests read them with
// `inject("clusterNodes")`), stop it at the end. A child process keeps ioredis out of the project's bundler.
import type { TestProject } from "vitest/node";
import type { ClusterNode } from "../dev/cluster.ts";
import { spawnCluster } from "../dev/cluster-process.ts";

declare module "vitest" {
  interface ProvidedContext {
    clusterNodes: ClusterNode[];
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const cluster = await spawnCluster({ nodes: 5 });
  project.provide("clusterNodes", cluster.nodes);
  return () => cluster.stop();
}
