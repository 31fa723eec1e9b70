// TEST-ONLY: the naive per-node counting semaphore, the negative control of the semaphore's invariant.
// Each node keeps a sorted set of holders and admits while it has fewer than `limit`; a permit is valid
// when a majority admitted it within validity. Admission on a node is not exclusive, so two permits that
// share a node can both be admitted there: it over-admits (docs/SAFETY.md, "Semaphores"). Never use it.
import { Redis } from "@upstash/redis";

/** Where the holders live on every node (apart from the library's reserved `edge-redlock:` keys). */
export const naiveKey = (key: string) => `chaos:naive:${key}`;

/**
 * KEYS[1] the holders (member → expiry in the node's ms); ARGV[1] member, ARGV[2] ttl ms, ARGV[3] limit.
 * Drops the expired holders by the node's own clock, then admits (1) while fewer than `limit` remain, else 0.
 */
export const NAIVE_ACQUIRE = `local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now)
if redis.call("ZCARD", KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call("ZADD", KEYS[1], now + ttl, ARGV[1])
if redis.call("PTTL", KEYS[1]) < ttl then redis.call("PEXPIRE", KEYS[1], ttl) end
return 1`;

/** KEYS[1] the holders; ARGV[1] member. */
export const NAIVE_RELEASE = `return redis.call("ZREM", KEYS[1], ARGV[1])`;

/** A permit of the naive semaphore: what the chaos client needs of a permit. */
export interface NaivePermit {
  readonly validityMs: number;
  /** Removes the member from every node; resolves with how many removed it. */
  release(): Promise<number>;
}

/** Every attempt failed (the semaphore looked full, or too many nodes gave no answer) within `maxWait`. */
export class NaiveSemaphoreError extends Error {
  override name = "NaiveSemaphoreError";
}

export interface NaiveOptions {
  /** Each request's timeout in ms. */
  nodeTimeout: number;
  /** A permit's release: each request's timeout in ms (default `nodeTimeout`). */
  releaseTimeout?: number;
  /** As the lock's (default 0.01): drift = ttl × driftFactor + 2 ms. */
  driftFactor?: number;
  /** Wait between attempts: retryDelay ± retryJitter ms (default 200 ± 100, as the lock's). */
  retryDelay?: number;
  retryJitter?: number;
}

/**
 * The naive counting semaphore over the same nodes (and, in the chaos run, the same links) as the lock.
 * Decides early like the lock: admitted as soon as a quorum admitted, refused as soon as it cannot get one.
 * @example
 * const naive = new NaiveSemaphore(links, "chaos:semaphore", 3, { nodeTimeout: 150 });
 * const permit = await naive.acquire(1_000, { maxWait: 5_000 });
 * await permit.release();
 */
export class NaiveSemaphore {
  readonly #nodes: Redis[];
  readonly #releaseNodes: Redis[];
  readonly #key: string;
  readonly #limit: number;
  readonly #options: Required<NaiveOptions>;
  readonly #quorum: number;

  constructor(nodes: { url: string; token: string }[], key: string, limit: number, options: NaiveOptions) {
    const releaseTimeout = options.releaseTimeout ?? options.nodeTimeout;
    this.#options = { driftFactor: 0.01, retryDelay: 200, retryJitter: 100, ...options, releaseTimeout };
    this.#nodes = nodes.map((node) => naiveClient(node, this.#options.nodeTimeout));
    this.#releaseNodes = nodes.map((node) => naiveClient(node, releaseTimeout));
    this.#key = naiveKey(key);
    this.#limit = limit;
    this.#quorum = Math.floor(nodes.length / 2) + 1;
  }

  /** Takes a permit for `ttl` ms, retrying until `maxWait` ms after the call; `signal` stops it. */
  async acquire(ttl: number, options: { signal?: AbortSignal; maxWait?: number } = {}): Promise<NaivePermit> {
    const { signal, maxWait = 0 } = options;
    const { retryDelay, retryJitter, driftFactor } = this.#options;
    const called = performance.now();
    for (;;) {
      signal?.throwIfAborted();
      const member = memberId();
      const t1 = performance.now();
      const admitted = await this.#round(member, ttl);
      const validityMs = ttl - (performance.now() - t1) - (ttl * driftFactor + 2);
      if (admitted >= this.#quorum && validityMs > 0 && !signal?.aborted) {
        return { validityMs, release: () => this.#release(this.#releaseNodes, member) };
      }
      await this.#release(this.#nodes, member);
      signal?.throwIfAborted();
      const delay = retryDelay + (2 * Math.random() - 1) * retryJitter;
      if (performance.now() + delay - called > maxWait)
        throw new NaiveSemaphoreError(
          `no permit: ${admitted} of ${this.#nodes.length} nodes admitted at the last attempt`,
        );
      await abortableSleep(delay, signal);
    }
  }

  /** One fan-out; resolves with the admissions as soon as the outcome is known (a quorum, or no chance of one). */
  #round(member: string, ttl: number): Promise<number> {
    const total = this.#nodes.length;
    return new Promise((resolve) => {
      let yes = 0;
      let other = 0;
      for (const node of this.#nodes) {
        node
          .eval(NAIVE_ACQUIRE, [this.#key], [member, String(ttl), String(this.#limit)])
          .then(
            (reply) => (Number(reply) === 1 ? yes++ : other++),
            () => other++,
          )
          .finally(() => {
            if (yes >= this.#quorum || other > total - this.#quorum || yes + other === total) resolve(yes);
          });
      }
    });
  }

  /** Removes `member` through `nodes` (an attempt's undo waits `nodeTimeout`, a permit's `releaseTimeout`). */
  async #release(nodes: Redis[], member: string): Promise<number> {
    const removed = await Promise.all(
      nodes.map((node) => node.eval(NAIVE_RELEASE, [this.#key], [member]).then(Number, () => 0)),
    );
    return removed.reduce((a, b) => a + b, 0);
  }
}

/**
 * One node's client for the naive controls: no retries, no pipelining, raw replies, `timeout` ms per request.
 * @example
 * const node = naiveClient({ url, token }, 150);
 */
export function naiveClient(node: { url: string; token: string }, timeout: number): Redis {
  return new Redis({
    url: node.url,
    token: node.token,
    retry: { retries: 0 },
    enableAutoPipelining: false,
    automaticDeserialization: false,
    enableTelemetry: false,
    // Called once per request: every request gets its own timeout and throws when it runs out.
    signal: () => AbortSignal.timeout(timeout),
  });
}

/** 20 random bytes, hex: unique per attempt. */
function memberId(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(20)), (b) => b.toString(16).padStart(2, "0")).join("");
}

function abortableSleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(done, Math.max(0, ms));
    function done() {
      signal?.removeEventListener("abort", abort);
      resolve();
    }
    function abort() {
      clearTimeout(timer);
      reject(signal!.reason);
    }
    signal?.addEventListener("abort", abort, { once: true });
  });
}
