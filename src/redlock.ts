// Redlock: the mutex (redlock-mutex.ts) and the factory of the other locks over the same nodes and rounds.
import { FROM_ENV_OPTION_NAMES, checkOptionNames, checkResources } from "./check.ts";
import { inspectResources, type Inspection } from "./lock/lock-inspection.ts";
import { nodesFromEnv, type EnvOptions } from "./node/env.ts";
import type { RedlockOptions } from "./options.ts";
import { machineryOf, RedlockMutex } from "./redlock-mutex.ts";
import { ReadWriteLock } from "./rwlock/read-write.ts";
import { Semaphore } from "./semaphore/semaphore.ts";

/**
 * The Redlock distributed lock over N independent Redis databases (5 recommended), spoken to over HTTP:
 * the mutex ({@link RedlockMutex}: acquire, `using`, extend, release), and over the same nodes and options
 * a semaphore, a read-write lock and inspection. A Worker that only needs the mutex imports `Redlock` from
 * `edge-redlock/mutex` instead, and bundles none of the three.
 * @example
 * ```ts
 * declare function pay(orderId: number): Promise<void>; // your own work
 * const redlock = new Redlock(nodes); // [{ url, token }, …]: five independent databases
 * const lock = await redlock.acquire(["orders:42"], 10_000);
 * try { await pay(42); } finally { await lock.release(); }
 * ```
 */
export class Redlock extends RedlockMutex {
  /**
   * A Redlock over the databases named in environment variables or Worker bindings:
   * `UPSTASH_REDIS_REST_URL_1` … `_N` and `UPSTASH_REDIS_REST_TOKEN_1` … `_N` (N = `options.nodes`, default 5).
   * `env` is any object (a Worker's `interface Env` included); those variables must be non-empty strings.
   * Throws {@link MissingConfigurationError} naming every missing variable.
   * @example
   * ```ts
   * export default {
   *   fetch: (request: Request, env: Record<string, string>) =>
   *     Redlock.fromEnv(env).using(["report"], 5_000, async () => new Response("done")),
   * };
   * ```
   */
  static override fromEnv(env: object, options?: RedlockOptions & EnvOptions): Redlock {
    if (options) checkOptionNames(options, FROM_ENV_OPTION_NAMES, "options");
    const { nodes, ...rest } = options ?? {};
    return new Redlock(nodesFromEnv(env, { nodes }), rest);
  }

  /**
   * A semaphore over the same nodes and options: at most `limit` holders of `key` at once
   * (1 ≤ limit ≤ 100). Each slot is a mutex of its own, so it never over-admits (docs/SAFETY.md).
   * @throws {InvalidArgumentError} for a bad key or limit.
   * @example
   * ```ts
   * declare function upload(file: Blob, options: { signal: AbortSignal }): Promise<void>; // your own work
   * const uploads = redlock.semaphore("uploads", 3);
   * await uploads.using(10_000, async (signal) => upload(new Blob(["…"]), { signal }));
   * ```
   */
  semaphore(key: string, limit: number): Semaphore {
    const { rounds, lifecycle } = machineryOf(this);
    return new Semaphore(key, limit, rounds, lifecycle);
  }

  /**
   * A read-write lock over the same nodes and options: any number of readers of `key` at once, or one writer
   * alone. Readers and writers wait in one fair queue, so neither starves (docs/SAFETY.md, "Read-write locks").
   * @throws {InvalidArgumentError} for a bad key.
   * @example
   * ```ts
   * const doc = redlock.readWriteLock("doc:7");
   * const text = await doc.usingRead(5_000, async () => redis.get<string>("doc:7"));
   * await doc.usingWrite(10_000, async () => redis.set("doc:7", `${text ?? ""} (edited)`));
   * ```
   */
  readWriteLock(key: string): ReadWriteLock {
    const { rounds, lifecycle } = machineryOf(this);
    return new ReadWriteLock(key, rounds, lifecycle);
  }

  /**
   * Who holds `resources`, read from every node without taking anything (never counted as a vote): per
   * node, held or not, its PTTL or why it gave no answer; whether one holder holds them on a quorum; and
   * how long until a quorum of nodes would let them go.
   * @example
   * ```ts
   * const { heldByQuorum, freeInMs, nodes } = await redlock.inspect(["orders:42"]);
   * ```
   */
  inspect(resources: string | readonly string[]): Promise<Inspection> {
    return inspectResources(machineryOf(this).rounds, checkResources(resources));
  }
}
