// N memory nodes, each behind its own Upstash-compatible REST bridge, in this process: the local nodes
// of `edge-redlock dev --memory` and `startLocalNodes({ memory: true })`. No redis-server, no Redis client.
import { randomBytes } from "node:crypto";
import { Bridge } from "./bridge.ts";
import type { ClusterNode } from "./cluster.ts";
import { MemoryBackend } from "./memory-backend.ts";

/** Running memory nodes behind their bridges. */
export interface MemoryCluster {
  /** How to reach each node (no `redisUrl`: there is no Redis behind it). */
  nodes: Pick<ClusterNode, "url" | "token" | "adminUrl">[];
  /** The bridges, for tests in the same process. */
  bridges: Bridge[];
  stop(): Promise<void>;
}

/**
 * Starts `nodes` memory nodes (default 5) behind REST bridges on free 127.0.0.1 ports. The admin API's
 * faults and process controls work as with redis-server: `/redis/kill` (no answer and the data gone until
 * restart), `/redis/pause` and `/redis/resume`, `/redis/restart` (empty, script cache included).
 * @example
 * const cluster = await startMemoryCluster({ nodes: 5 });
 * const redlock = new Redlock(cluster.nodes);
 * await cluster.stop();
 */
export async function startMemoryCluster(options: { nodes?: number; token?: string } = {}): Promise<MemoryCluster> {
  const count = options.nodes ?? 5;
  const token = options.token ?? randomBytes(18).toString("base64url");
  const bridges = Array.from({ length: count }, (_, i) => {
    const backend = new MemoryBackend(`memory-${i + 1}`);
    const bridge = new Bridge({ backend, token });
    bridge.onAdmin = async (action) => {
      switch (action) {
        case "state":
          return { state: backend.state, memory: true };
        case "kill":
          return backend.kill();
        case "pause":
          return backend.pause();
        case "resume":
          return backend.resume();
        case "restart":
          return backend.restart();
        default:
          throw new Error(`unknown redis action: ${action} (kill, pause, resume, restart)`);
      }
    };
    return bridge;
  });
  const stop = async () => void (await Promise.all(bridges.map((bridge) => bridge.stop())));
  try {
    await Promise.all(bridges.map((bridge) => bridge.start()));
  } catch (error) {
    await stop().catch(() => {});
    throw error;
  }
  const nodes = bridges.map((bridge) => ({ url: bridge.url, token, adminUrl: bridge.adminUrl }));
  return { nodes, bridges, stop };
}
