// The implementations compared, behind one shape: acquire a key, release it.
import { Lock as UpstashLock } from "@upstash/lock";
import { Redis as UpstashRedis } from "@upstash/redis";
import { Redis as UpstashFetchRedis } from "@upstash/redis/cloudflare";
import { Redis as IORedis } from "ioredis";
import NodeRedlock from "redlock";
import { RedlockMutex } from "redis-semaphore";
import type { ClusterNode } from "../dev/cluster.ts";
import { ACQUIRE, CLIENT_SETTINGS, RELEASE, Redlock, scriptShaOf, type RedlockOptions } from "./lib.ts";
import { decide, retryFor, type Impl, type ImplOptions } from "./impl-kit.ts";

export { floorImpl } from "./floor.ts";
export type { Held, Impl, ImplOptions } from "./impl-kit.ts";

/**
 * `@upstash/redis` called directly with the floor's fan-out and decision, from the same entry point and
 * with the same settings as the library's clients: what the library costs on top of its HTTP client
 * (`bench/where.ts`).
 */
export async function upstashDirectImpl(nodes: ClusterNode[], options: ImplOptions): Promise<Impl> {
  const [acquireSha, releaseSha] = await Promise.all([scriptShaOf(ACQUIRE.lua), scriptShaOf(RELEASE.lua)]);
  const quorum = Math.floor(nodes.length / 2) + 1;
  let nextSignal: AbortSignal | undefined;
  const clients = nodes.map(
    (node) =>
      new UpstashFetchRedis({ url: node.url, token: node.token, ...CLIENT_SETTINGS, signal: () => nextSignal! }),
  );
  const call = (client: UpstashFetchRedis, sha: string, keys: string[], args: string[]) => {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), options.nodeTimeout);
    nextSignal = controller.signal;
    const reply = client.evalsha(sha, keys, args);
    nextSignal = undefined;
    return reply.finally(() => clearTimeout(timer));
  };
  const release = (key: string, v: string) =>
    Promise.all(clients.map((c) => call(c, releaseSha, [key], [v]).catch(() => null)));
  return {
    name: "upstash-direct",
    async acquire(key, ttl) {
      const v = crypto.randomUUID();
      const grants = clients.map((client) =>
        call(client, acquireSha, [key], [v, String(ttl), "1"]).then(
          (r) => Array.isArray(r) && r.length === 1 && r[0] === 1,
          () => false,
        ),
      );
      await decide(grants, quorum, () => release(key, v));
      return { release: () => release(key, v) };
    },
    close: async () => {},
  };
}

/** This library; `RedlockClass` lets the A/B in `bench/previous.ts` run an earlier version beside it. */
export function edgeRedlockImpl(
  nodes: ClusterNode[],
  options: ImplOptions,
  name = "edge-redlock",
  extra: RedlockOptions = {},
  RedlockClass: typeof Redlock = Redlock,
): Impl {
  const redlock = new RedlockClass(nodes, {
    nodeTimeout: options.nodeTimeout,
    retryDelay: options.retryDelay,
    retryJitter: options.retryJitter,
    ...extra,
  });
  return {
    name,
    async acquire(key, ttl, { wait = 0 } = {}) {
      const lock = await redlock.acquire([key], ttl, wait > 0 ? { retryCount: -1, maxWait: wait } : { retryCount: 0 });
      return { release: () => lock.release(), attempts: lock.attempts };
    },
    close: async () => {},
  };
}

/** node-redlock 5.0.0-beta.2 over ioredis, through the TCP proxies (same faults as the bridges). */
export function nodeRedlockImpl(nodes: ClusterNode[], options: ImplOptions): Impl {
  const clients = nodes.map((node) => {
    const client = new IORedis(node.proxyUrl!, { maxRetriesPerRequest: 0, enableOfflineQueue: true });
    client.on("error", () => {});
    return client;
  });
  const redlock = new NodeRedlock(clients, {
    retryCount: 0,
    retryDelay: options.retryDelay,
    retryJitter: options.retryJitter,
    driftFactor: 0.01,
  });
  redlock.on("error", () => {});
  return {
    name: "node-redlock",
    tcp: true,
    // The same retry loop as the floor's (node-redlock's own retries keep one value across attempts).
    acquire: (key, ttl, { wait = 0 } = {}) =>
      retryFor(wait, options, async () => {
        const lock = await redlock.acquire([key], ttl, { retryCount: 0 });
        return { release: () => lock.release().catch(() => null) };
      }),
    close: async () => {
      for (const client of clients) client.disconnect();
    },
  };
}

/**
 * redis-semaphore's RedlockMutex over ioredis, through the TCP proxies like node-redlock. It waits for
 * every node (no early decision) and has no per-node timeout of its own: without ioredis' `commandTimeout`
 * one hung node blocks every acquire for good (the benchmark hung so), so its clients get
 * `commandTimeout = nodeTimeout`. Auto-refresh is off (the others do not refresh).
 */
export function redisSemaphoreImpl(nodes: ClusterNode[], options: ImplOptions): Impl {
  const clients = nodes.map((node) => {
    const client = new IORedis(node.proxyUrl!, {
      maxRetriesPerRequest: 0,
      enableOfflineQueue: true,
      commandTimeout: options.nodeTimeout,
    });
    client.on("error", () => {});
    return client;
  });
  return {
    name: "redis-semaphore",
    tcp: true,
    acquire: (key, ttl, { wait = 0 } = {}) =>
      retryFor(wait, options, async () => {
        const mutex = new RedlockMutex(clients, key, {
          lockTimeout: ttl,
          acquireAttemptsLimit: 1,
          refreshInterval: 0,
          onLockLost: () => {},
        });
        if (!(await mutex.tryAcquire())) throw new Error("not acquired");
        return { release: () => mutex.release() };
      }),
    close: async () => {
      for (const client of clients) client.disconnect();
    },
  };
}

/** @upstash/lock on one database (node 1) through its bridge: no quorum, for reference. */
export function upstashLockImpl(nodes: ClusterNode[], options: ImplOptions): Impl {
  const redis = new UpstashRedis({
    url: nodes[0].url,
    token: nodes[0].token,
    retry: { retries: 0 },
    enableTelemetry: false,
  });
  return {
    name: "upstash-lock",
    async acquire(key, ttl, { wait = 0 } = {}) {
      const lock = new UpstashLock({ id: key, redis, lease: ttl });
      // @upstash/lock counts every try in `attempts` (0 would never try).
      const attempts = 1 + (wait > 0 ? Math.ceil(wait / Math.max(1, options.retryDelay)) : 0);
      if (!(await lock.acquire({ lease: ttl, retry: { attempts, delay: options.retryDelay } })))
        throw new Error("not acquired");
      return { release: () => lock.release() };
    },
    close: async () => {},
  };
}
