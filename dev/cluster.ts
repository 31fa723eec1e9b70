// N real redis-server processes, each behind its own Upstash-compatible REST bridge.
import { randomBytes } from "node:crypto";
import { Bridge } from "./bridge.ts";
import { RedisBackend } from "./redis-backend.ts";
import { TcpProxy } from "./tcp-proxy.ts";
import { RedisProcess, ensureRedisServer, freeServerPort } from "./redis-server.ts";

/** How to reach one node of the local cluster. */
export interface ClusterNode {
  /** Upstash REST URL of the bridge (`UPSTASH_REDIS_REST_URL`). */
  url: string;
  /** Bearer token the bridge requires (`UPSTASH_REDIS_REST_TOKEN`). */
  token: string;
  /** Plain Redis TCP URL of the redis-server behind the bridge. */
  redisUrl: string;
  /** Fault-injection API of the bridge (see the README). */
  adminUrl: string;
  /** With `tcpProxy: true`: a TCP proxy to the redis-server that takes the same latency and hang faults. */
  proxyUrl?: string;
}

/** A running local cluster. */
export interface Cluster {
  nodes: ClusterNode[];
  /** The bridges, for tests that run in the same Node process. */
  bridges: Bridge[];
  /** The redis-server processes, for tests that run in the same Node process. */
  servers: RedisProcess[];
  stop(): Promise<void>;
}

export interface ClusterOptions {
  /** Number of independent nodes (default 5). */
  nodes?: number;
  /** Bearer token for every bridge (default: random). */
  token?: string;
  /** The redis-server binary (default: found on PATH, or installed with apt-get when root). */
  binary?: string;
  /** Also put a fault-injecting TCP proxy in front of each redis-server (for TCP clients in benchmarks). */
  tcpProxy?: boolean;
}

const running = new Set<Cluster>();
let exitHookInstalled = false;

/**
 * Starts `nodes` redis-server processes on free 127.0.0.1 ports, no persistence, each behind a REST bridge.
 * @example
 * const cluster = await startCluster({ nodes: 5 });
 * const redlock = new Redlock(cluster.nodes);
 * await cluster.stop();
 */
export async function startCluster(options: ClusterOptions = {}): Promise<Cluster> {
  const count = options.nodes ?? 5;
  const token = options.token ?? randomBytes(18).toString("base64url");
  const binary = options.binary ?? ensureRedisServer();
  installExitHook();

  const servers: RedisProcess[] = [];
  const bridges: Bridge[] = [];
  const proxies: TcpProxy[] = [];
  const cluster: Cluster = {
    nodes: [],
    bridges,
    servers,
    async stop() {
      running.delete(cluster);
      await Promise.all([...bridges.map((bridge) => bridge.stop()), ...proxies.map((proxy) => proxy.stop())]);
      await Promise.all(servers.map((server) => server.kill()));
    },
  };
  running.add(cluster);
  try {
    await Promise.all(
      Array.from({ length: count }, async (_, index) => {
        const server = new RedisProcess(binary, await freeServerPort());
        servers[index] = server;
        await server.start();
        const bridge = new Bridge({ backend: new RedisBackend(server.port), token });
        if (options.tcpProxy) {
          const proxy = new TcpProxy(server.port);
          await proxy.start();
          proxies[index] = proxy;
          bridge.onFaults = (faults) =>
            proxy.setFaults({ latencyMs: faults.latencyMs, spread: faults.spread, hang: faults.hang });
        }
        bridge.onAdmin = async (action) => {
          const result = await controlRedis(server, action);
          if (action === "restart" || action === "resume") await bridge.ready();
          return result;
        };
        bridges[index] = bridge;
        await bridge.start();
      }),
    );
  } catch (error) {
    await cluster.stop().catch(() => {});
    throw error;
  }
  cluster.nodes = bridges.map((bridge, index) => ({
    url: bridge.url,
    token,
    redisUrl: servers[index].url,
    adminUrl: bridge.adminUrl,
    ...(proxies[index] ? { proxyUrl: proxies[index].url } : {}),
  }));
  return cluster;
}

async function controlRedis(server: RedisProcess, action: string): Promise<unknown> {
  switch (action) {
    case "state":
      return { state: server.state, port: server.port };
    case "kill":
      return server.kill();
    case "pause":
      return server.pause();
    case "resume":
      return server.resume();
    case "restart":
      return server.restartEmpty();
    default:
      throw new Error(`unknown redis action: ${action} (kill, pause, resume, restart)`);
  }
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const cluster of running) for (const server of cluster.servers) server.forceKill();
  });
}
