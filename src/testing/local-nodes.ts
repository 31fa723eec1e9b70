// Real local nodes: redis-server processes, each behind the project's Upstash-compatible REST bridge
// (dev/), in this process. Node, Bun and Deno; ioredis (the bridge's Redis client) is an optional peer.
import { envNames } from "../node/env.ts";
import { nodeFaults, type NodeFaults } from "./faults.ts";
import { missingIoredis, missingRedisServer } from "./missing.ts";

/**
 * How to reach one local node.
 * @example
 * ```ts
 * const local = await startLocalNodes();
 * const { url, token } = local.nodes[0];
 * ```
 */
export interface LocalNode {
  /** The REST URL (what `UPSTASH_REDIS_REST_URL_<n>` holds): http://127.0.0.1:<port>. */
  url: string;
  /** The bearer token the node requires (`UPSTASH_REDIS_REST_TOKEN_<n>`). */
  token: string;
  /** The node's admin API (fault controls; see {@link nodeFaults}). */
  adminUrl: string;
  /** The redis-server behind it, for plain Redis clients: redis://127.0.0.1:<port> (absent for memory nodes). */
  redisUrl?: string;
}

/**
 * Running local nodes.
 * @example
 * ```ts
 * import { Redlock } from "edge-redlock";
 *
 * await using local = await startLocalNodes();
 * const redlock = Redlock.fromEnv(local.env);
 * ```
 */
export interface LocalNodes {
  /** `UPSTASH_REDIS_REST_URL_1` … `_N` and `UPSTASH_REDIS_REST_TOKEN_1` … `_N`: bindings, or `process.env`. */
  env: Record<string, string>;
  /** The nodes, in the order of the variables (node 1 first). */
  nodes: LocalNode[];
  /** Fault controls, one per node in the same order. */
  faults: NodeFaults[];
  /** Stops every bridge and redis-server; resolves once they are gone. */
  stop(): Promise<void>;
  /** `stop()`, for `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Options of {@link startLocalNodes}.
 * @example
 * ```ts
 * const local = await startLocalNodes({ nodes: 3, redisServer: "/opt/redis/bin/redis-server" });
 * ```
 */
export interface StartLocalNodesOptions {
  /** How many independent nodes (default 5). */
  nodes?: number;
  /**
   * Memory nodes behind the same Upstash-compatible HTTP front, in this process: no redis-server and no
   * Redis client needed. They run the library's own scripts (held to real Redis by the project's
   * conformance test) and refuse anything else. Default false: real redis-server processes.
   */
  memory?: boolean;
  /** The redis-server binary (default: found on PATH or in /usr/bin, /usr/local/bin, /opt/homebrew/bin). */
  redisServer?: string;
}

/**
 * Starts `nodes` real redis-server processes (default 5) on free 127.0.0.1 ports, without persistence, each
 * behind an Upstash-compatible REST bridge that `@upstash/redis` talks to unchanged, and resolves with their
 * variables. Needs `redis-server` installed and the `ioredis` package (the bridge's Redis client); a clear
 * error says how to install whichever is missing. Runs on Node, Bun and Deno (not inside workerd: start
 * the nodes in a vitest `globalSetup` and pass `env` as bindings).
 * @param options see {@link StartLocalNodesOptions}
 * @returns the running nodes; call `stop()` when done
 * @example
 * ```ts
 * import { Redlock } from "edge-redlock";
 * import { startLocalNodes } from "edge-redlock/testing";
 *
 * const local = await startLocalNodes();
 * const redlock = Redlock.fromEnv(local.env);
 * await redlock.using(["job:1"], 5_000, async () => {});
 * await local.stop();
 * ```
 */
export async function startLocalNodes(options: StartLocalNodesOptions = {}): Promise<LocalNodes> {
  const count = options.nodes ?? 5;
  if (!Number.isInteger(count) || count < 1 || count > 32)
    throw new RangeError("startLocalNodes: nodes must be an integer from 1 to 32");
  if (options.memory !== undefined && typeof options.memory !== "boolean")
    throw new TypeError("startLocalNodes: memory must be a boolean");
  if (options.memory)
    return running(await (await import("../../dev/memory-cluster.ts")).startMemoryCluster({ nodes: count }));
  let dev: typeof import("../../dev/cluster.ts");
  let child: typeof import("../../dev/cluster-process.ts");
  let redis: typeof import("../../dev/redis-server.ts");
  try {
    [dev, child, redis] = await Promise.all([
      import("../../dev/cluster.ts"),
      import("../../dev/cluster-process.ts"),
      import("../../dev/redis-server.ts"),
    ]);
  } catch (error) {
    if (/ioredis/.test(String((error as Error)?.message))) throw missingIoredis(error);
    throw error;
  }
  const binary = redis.findRedisServer(options.redisServer);
  if (!binary) throw missingRedisServer(options.redisServer);
  // On Node, the bridges run in a child process: a bundler or test runner that transforms this module (the
  // Workers test plugin's globalSetup) never touches ioredis. Bun and Deno run them in-process.
  const onNode = !("Bun" in globalThis) && !("Deno" in globalThis);
  const cluster = onNode
    ? await child.spawnCluster({ nodes: count, binary })
    : await dev.startCluster({ nodes: count, binary });
  return running(cluster);
}

/**
 * Options of {@link requireLocalNodes}.
 * @example
 * ```ts
 * await requireLocalNodes({ envFile: ".env", timeoutMs: 1_000 });
 * ```
 */
export interface RequireLocalNodesOptions {
  /** The env file `npx edge-redlock dev` wrote (default `.dev.vars`; `dev --out .env` writes `.env`). */
  envFile?: string;
  /** How long each node has to answer its PING, ms (default 2000). */
  timeoutMs?: number;
}

/**
 * For a test runner's global setup when the nodes run in another terminal (`npx edge-redlock dev`): reads
 * their variables from `.dev.vars` and resolves with them once every node answers. When the file does not
 * exist or a node does not answer, it prints one line to stderr (which variable, which host, why, and the
 * command to run) and ends the process with exit code 1, before any test: a thrown error would come with
 * the runner's stack trace and its own complaints. Node, Bun and Deno; never prints a token. To handle the
 * failure yourself, use `checkLocalNodes`.
 * @param options see {@link RequireLocalNodesOptions}
 * @returns the variables in the file (`UPSTASH_REDIS_REST_URL_1` … and the rest of it)
 * @example
 * ```ts
 * // test/nodes-running.ts, a vitest globalSetup
 * import { requireLocalNodes } from "edge-redlock/testing";
 *
 * export default async function setup() {
 *   await requireLocalNodes(); // one line and exit code 1 when the nodes in .dev.vars are not running
 * }
 * ```
 */
export async function requireLocalNodes(options: RequireLocalNodesOptions = {}): Promise<Record<string, string>> {
  if (options.envFile !== undefined && (typeof options.envFile !== "string" || options.envFile === ""))
    throw new TypeError("requireLocalNodes: envFile must be a non-empty path");
  const { requireDevVars } = await import("../../dev/dev-vars.ts");
  return requireDevVars(options.envFile ?? ".dev.vars", options.timeoutMs);
}

/** The handle of running nodes, real or memory. */
function running(cluster: { nodes: LocalNode[]; stop(): Promise<void> }): LocalNodes {
  const nodes = cluster.nodes.map(({ url, token, adminUrl, redisUrl }) => ({ url, token, adminUrl, redisUrl }));
  const env = Object.fromEntries(
    nodes.flatMap((node, i) => [
      [envNames(i + 1).url, node.url],
      [envNames(i + 1).token, node.token],
    ]),
  );
  let stopped: Promise<void> | undefined;
  const stop = () => (stopped ??= cluster.stop());
  return { env, nodes, faults: nodes.map((node) => nodeFaults(node.adminUrl)), stop, [Symbol.asyncDispose]: stop };
}
