// A read-write lock over the lock's nodes: readers share it, a writer has it alone; both wait in one queue.
import { checkResources, checkRetryPolicy, checkTtl, checkUsing } from "../check.ts";
import { InvalidArgumentError } from "../errors.ts";
import { holdWhile } from "../lock/keeper.ts";
import type { Lifecycle } from "../lock/lifecycle.ts";
import { Lock } from "../lock/lock.ts";
import { acquire, type LockStrategy, type Try } from "../lock/acquire.ts";
import { Line, lineOptions } from "../lock/line.ts";
import type { AcquireOptions, UsingOptions } from "../options.ts";
import type { Rounds } from "../quorum/rounds.ts";
import { RELEASE } from "../scripts/lock.ts";
import {
  FENCED_RW_WRITE_ACQUIRE,
  RW_READ_ACQUIRE,
  RW_READ_EXTEND,
  RW_READ_RELEASE,
  RW_WRITE_ACQUIRE,
} from "../scripts/rw.ts";
import { inspectReadWrite, type ReadWriteInspection } from "./read-write-inspection.ts";
import { rwKeys, type RwKeys } from "./keys.ts";

/**
 * Options of a read or write acquisition: those of a lock's. `fencing` is for writers only; `fair: false` is
 * refused, because readers and writers always wait in line (without the line a stream of readers starves writers).
 * @example
 * ```ts
 * const options: ReadWriteOptions = { maxWait: 2_000, signal: AbortSignal.timeout(5_000) };
 * ```
 */
export type ReadWriteOptions = AcquireOptions;

/**
 * Many readers or one writer of `key`, across every process, isolate and region that shares the nodes. Made by
 * {@link Redlock.readWriteLock}. A reader is an entry of a per-node reader set, a writer a per-node key; a grant
 * on a node needs no writer there (a reader) or neither writer nor reader (a writer), so two quorums meet on a
 * node whose script refused the second (docs/SAFETY.md, "Read-write locks"). Readers and writers wait in one
 * queue in order of arrival: a waiting writer stops the readers that came after it, the readers before it go
 * first, so neither starves.
 * @example
 * ```ts
 * const doc = redlock.readWriteLock("doc:7");
 * const text = await doc.usingRead(5_000, async () => redis.get<string>("doc:7"));
 * await doc.usingWrite(10_000, async () => redis.set("doc:7", `${text ?? ""} (edited)`));
 * ```
 */
export class ReadWriteLock {
  /** The lock's name (its keys are keys of their own under the library's reserved prefix). */
  readonly key: string;
  readonly #rounds: Rounds;
  readonly #lifecycle: Lifecycle;
  readonly #keys: RwKeys;

  /** @internal Made by {@link Redlock.readWriteLock}. */
  constructor(key: string, rounds: Rounds, lifecycle: Lifecycle) {
    const [checked] = checkResources(key);
    this.key = checked;
    this.#rounds = rounds;
    this.#lifecycle = lifecycle;
    this.#keys = rwKeys(checked);
  }

  /**
   * Takes a read lock for `ttl` ms: held on a quorum of nodes where no writer holds it and no writer waits
   * ahead, alongside any number of other readers. Resolves with a {@link Lock} (`release()`, `extend(ttl)`,
   * `validityMs`, `expiresAt`, `await using`).
   * @throws {InvalidArgumentError} before any request, for bad arguments (and for `fencing` or `fair: false`).
   * @throws {LockAcquisitionError} when every attempt failed (`retryAfterMs`: when to ask again, if known).
   * @example
   * ```ts
   * const doc = redlock.readWriteLock("doc:7");
   * await using read = await doc.acquireRead(5_000, { maxWait: 2_000 });
   * const text = await redis.get<string>("doc:7");
   * ```
   */
  acquireRead(ttl: number, options: ReadWriteOptions = {}): Promise<Lock> {
    return this.#acquire("read", ttl, options);
  }

  /**
   * Takes the write lock for `ttl` ms: held on a quorum of nodes where no writer and no reader holds it and
   * nobody waits ahead. `{ fencing: true }` hands out `lock.fence` as for a plain lock (one more round trip).
   * @throws {InvalidArgumentError} before any request, for bad arguments.
   * @throws {LockAcquisitionError} when every attempt failed (`retryAfterMs`: when to ask again, if known).
   * @example
   * ```ts
   * import { fencedWrite } from "edge-redlock";
   *
   * const doc = redlock.readWriteLock("doc:7");
   * const write = await doc.acquireWrite(10_000, { fencing: true });
   * try { await fencedWrite(redis, "doc:7", "new text", write.fence!); } finally { await write.release(); }
   * ```
   */
  acquireWrite(ttl: number, options: ReadWriteOptions = {}): Promise<Lock> {
    return this.#acquire("write", ttl, options);
  }

  /**
   * Runs `routine` under a read lock: acquires, extends automatically, releases at the end (also when the
   * routine throws), exactly as {@link Redlock.using}. The routine's signal aborts the moment the lock is lost.
   * @example
   * ```ts
   * const doc = redlock.readWriteLock("doc:7");
   * const text = await doc.usingRead(5_000, async () => redis.get<string>("doc:7"));
   * ```
   */
  usingRead<T>(
    ttl: number,
    routine: (signal: AbortSignal, lock: Lock) => Promise<T> | T,
    options: UsingOptions = {},
  ): Promise<T> {
    return this.#using("read", ttl, routine, options);
  }

  /**
   * Runs `routine` under the write lock: acquires, extends automatically, releases at the end (also when the
   * routine throws), exactly as {@link Redlock.using}. The routine's signal aborts the moment the lock is lost.
   * @example
   * ```ts
   * const doc = redlock.readWriteLock("doc:7");
   * await doc.usingWrite(10_000, async () => redis.set("doc:7", "new text"), { maxHold: 60_000 });
   * ```
   */
  usingWrite<T>(
    ttl: number,
    routine: (signal: AbortSignal, lock: Lock) => Promise<T> | T,
    options: UsingOptions = {},
  ): Promise<T> {
    return this.#using("write", ttl, routine, options);
  }

  /**
   * How many readers a quorum holds now, whether a writer does, and how long until a writer could take it —
   * read from every node without taking anything.
   * @example
   * ```ts
   * const doc = redlock.readWriteLock("doc:7");
   * const { readers, writer, freeInMs } = await doc.inspect();
   * ```
   */
  inspect(): Promise<ReadWriteInspection> {
    return inspectReadWrite(this.#rounds, this.key, this.#keys);
  }

  async #using<T>(
    kind: "read" | "write",
    ttl: number,
    routine: (signal: AbortSignal, lock: Lock) => Promise<T> | T,
    options: UsingOptions,
  ): Promise<T> {
    const { acquire, ...keep } = checkUsing(ttl, routine, options, this.#rounds.options.nodeTimeout);
    const lock = await this.#acquire(kind, ttl, acquire);
    return holdWhile(lock, routine, { clock: this.#rounds.clock, ttl, ...keep, signal: options?.signal });
  }

  /**
   * One acquisition, read or write: the lock's steps (a fresh value per attempt, one request per node, decided
   * early, validity), with the reader's or the writer's script, always in line.
   */
  async #acquire(kind: "read" | "write", ttl: number, options: ReadWriteOptions): Promise<Lock> {
    const rounds = this.#rounds;
    const keys = this.#keys;
    checkTtl(ttl, rounds.options.nodeTimeout);
    const policy = checkRetryPolicy(options, { ...rounds.options, fair: true });
    if (options.fair === false)
      throw new InvalidArgumentError("options.fair", "cannot be false: readers and writers always wait in line");
    if (options.fencing !== undefined && typeof options.fencing !== "boolean")
      throw new InvalidArgumentError("options.fencing", "must be a boolean");
    const fencing = options.fencing === true;
    if (fencing && kind === "read") throw new InvalidArgumentError("options.fencing", "is for write locks only");
    const read = kind === "read";
    const how = lineOptions(policy, rounds.options.nodeTimeout, {
      kind: read ? "r" : "w",
      slowRoundMs: rounds.slowRoundMs,
      woken: rounds.wakeable,
    });
    const line = new Line(rounds.clock, rounds.nodeClock, [keys.queue], how);
    const script = read ? RW_READ_ACQUIRE : fencing ? FENCED_RW_WRITE_ACQUIRE : RW_WRITE_ACQUIRE;
    const roundKeys = [keys.writer, keys.readers, keys.queue, ...(fencing ? [keys.fence] : [])];
    // What a hold is on a node: a reader's entry in the reader set, or the writer key.
    const holds = read ? [keys.readers] : [keys.writer];
    // A reader's failed attempt is undone with its release (given a lease, it keeps the reader's place in line).
    const attempt: Try = {
      script,
      keys: roundKeys,
      args: (value) => [value, String(ttl)],
      holds,
      release: read ? RW_READ_RELEASE : RELEASE,
      // With the writer key, the last reader out wakes the line.
      requeue: read
        ? { script: RW_READ_RELEASE, leave: RW_READ_RELEASE, queues: [keys.queue, keys.writer] }
        : undefined,
    };
    const scripts = read ? { release: RW_READ_RELEASE, extend: RW_READ_EXTEND } : undefined;
    const strategy: LockStrategy<Lock> = {
      kind,
      resources: [this.key],
      ttl,
      line,
      // A waiter that gives up leaves as a reader's release does: it deletes nothing ("-" is never a lock value), and
      // wakes the line only when no reader or writer holds.
      leaveKeys: [keys.writer],
      leave: { script: RW_READ_RELEASE, keys: [keys.readers, keys.queue, keys.writer] },
      fenced: fencing ? { keys: [keys.writer], fenceKeys: [keys.fence] } : undefined,
      next: () => attempt,
      // Its release always sends the line's keys and ticket, a single try's too (the read-write scripts take them).
      build: (grant, attempts, state, fence) => {
        const queue = { keys: read ? [keys.queue, keys.writer] : line.queues, ticket: line.ticket };
        return new Lock([this.key], grant.value, attempts, fence, { ...state, keys: holds, queue, scripts });
      },
    };
    return acquire({ rounds, lifecycle: this.#lifecycle }, strategy, policy, "lock");
  }
}
