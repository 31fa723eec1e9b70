// TEST-ONLY: a read-write lock that counts readers per node, the negative control of the read-write lock's
// invariant. Each node keeps a writer key and a reader counter (INCR on read, DECR on release, one expiry for all
// readers); a lock is held when a majority granted it within validity, and released on every node, as Redlock
// releases (also after a failed attempt). A counter cannot tell whose count a release takes away: a release that
// reaches a node the reader was never counted on (a refused attempt's cleanup, a partition) takes another reader's
// count, and a writer is let in beside it (docs/SAFETY.md, "Read-write locks"). Never use it.
import type { Redis } from "@upstash/redis";
import { naiveClient } from "./naive-semaphore.ts";

/** Where the naive lock lives on every node (apart from the library's reserved `edge-redlock:` keys). */
export const naiveRwKeys = (key: string) => [`chaos:naive-rw:${key}:writer`, `chaos:naive-rw:${key}:readers`];

/** KEYS writer, readers; ARGV ttl. Counts a reader where no writer is set. */
const READ = `if redis.call("EXISTS", KEYS[1]) == 1 then return 0 end
redis.call("INCR", KEYS[2])
redis.call("PEXPIRE", KEYS[2], ARGV[1])
return 1`;
/** KEYS writer, readers. Takes one reader away (a node cannot tell whether this reader was ever counted here). */
const READ_RELEASE = `redis.call("DECR", KEYS[2])
return 1`;
/** KEYS writer, readers; ARGV value, ttl. Sets the writer where none is set and no reader is counted. */
const WRITE = `if redis.call("EXISTS", KEYS[1]) == 1 or tonumber(redis.call("GET", KEYS[2]) or "0") > 0 then
  return 0
end
redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
return 1`;
/** KEYS writer; ARGV value. */
const WRITE_RELEASE = `if redis.call("GET", KEYS[1]) == ARGV[1] then redis.call("DEL", KEYS[1]) end
return 1`;

/** A read or write lock of the naive read-write lock: what the chaos client needs of a lock. */
export interface NaiveRwLock {
  readonly validityMs: number;
  release(): Promise<void>;
}

/** Every attempt failed within `maxWait`. */
export class NaiveReadWriteError extends Error {
  override name = "NaiveReadWriteError";
}

/**
 * The naive read-write lock over the same nodes (and, in the chaos run, the same links) as the library's.
 * @example
 * const naive = new NaiveReadWrite(links, "chaos:rw", { nodeTimeout: 150 });
 * const lock = await naive.acquire("read", 1_000, { maxWait: 5_000 });
 * await lock.release();
 */
export class NaiveReadWrite {
  readonly #nodes: Redis[];
  readonly #keys: string[];
  readonly #quorum: number;

  constructor(nodes: { url: string; token: string }[], key: string, options: { nodeTimeout: number }) {
    this.#nodes = nodes.map((node) => naiveClient(node, options.nodeTimeout));
    this.#keys = naiveRwKeys(key);
    this.#quorum = Math.floor(nodes.length / 2) + 1;
  }

  /** Takes a read or write lock for `ttl` ms, retrying every 100–300 ms until `maxWait` ms after the call. */
  async acquire(
    mode: "read" | "write",
    ttl: number,
    options: { signal?: AbortSignal; maxWait?: number } = {},
  ): Promise<NaiveRwLock> {
    const { signal, maxWait = 0 } = options;
    const called = performance.now();
    for (;;) {
      signal?.throwIfAborted();
      const value = crypto.randomUUID();
      const t1 = performance.now();
      const granted = await this.#round(
        mode === "read" ? READ : WRITE,
        mode === "read" ? [String(ttl)] : [value, String(ttl)],
      );
      const validityMs = ttl - (performance.now() - t1) - (ttl * 0.01 + 2);
      const release = () =>
        this.#everywhere(mode === "read" ? READ_RELEASE : WRITE_RELEASE, mode === "read" ? [] : [value]);
      if (granted >= this.#quorum && validityMs > 0 && !signal?.aborted) return { validityMs, release };
      await release(); // as Redlock does: release on every node
      signal?.throwIfAborted();
      const delay = 100 + Math.random() * 200;
      if (performance.now() + delay - called > maxWait)
        throw new NaiveReadWriteError(`not granted: ${granted} of ${this.#nodes.length} nodes`);
      await new Promise((r) => setTimeout(r, delay));
    }
  }

  /** One fan-out; resolves with the grants as soon as the outcome is known. */
  #round(script: string, args: string[]): Promise<number> {
    const total = this.#nodes.length;
    return new Promise((resolve) => {
      let yes = 0;
      let other = 0;
      for (const node of this.#nodes) {
        node
          .eval(script, this.#keys, args)
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

  async #everywhere(script: string, args: string[]): Promise<void> {
    await Promise.all(this.#nodes.map((node) => node.eval(script, this.#keys, args).catch(() => 0)));
  }
}
