// A counting semaphore over the lock's nodes: `limit` slots, each a Redlock mutex; a permit is one slot.
import { checkResources, checkRetryPolicy, checkTtl, checkUsing } from "../check.ts";
import { InvalidArgumentError } from "../errors.ts";
import { inspectSlots, type SemaphoreInspection } from "./semaphore-inspection.ts";
import { holdWhile } from "../lock/keeper.ts";
import type { Lifecycle } from "../lock/lifecycle.ts";
import { Lock, type LockState } from "../lock/lock.ts";
import { RESERVED_PREFIX, type AcquireOptions, type UsingOptions } from "../options.ts";
import type { Rounds } from "../quorum/rounds.ts";
import { acquire, type LockStrategy } from "../lock/acquire.ts";
import { Line, lineOptions, SEMAPHORE_LINE_PREFIX } from "../lock/line.ts";
import { FAIR_SEMAPHORE_ACQUIRE } from "../scripts/semaphore.ts";
import { randomUnit } from "../support/random.ts";
import { freeSlot } from "./slots.ts";

/** The most permits a semaphore may have: every request carries all its slot keys. */
export const MAX_PERMITS = 100;

/**
 * One permit of a {@link Semaphore}: a lock on one of its slots. It behaves like a {@link Lock}
 * (`release()`, `extend(ttl)`, `validityMs`, `expiresAt`, `await using`); `resources` is the semaphore's key.
 * @example
 * ```ts
 * await using permit = await semaphore.acquire(10_000);
 * console.log(permit.slot, permit.validityMs);
 * ```
 */
export class Permit extends Lock {
  /** The semaphore's key. */
  readonly semaphore: string;
  /** Which of the `limit` slots this permit holds (0-based). */
  readonly slot: number;

  /** @internal Made by {@link Semaphore.acquire}. */
  constructor(
    semaphore: string,
    slot: number,
    value: string,
    attempts: number,
    state: Omit<LockState, "value" | "released">,
  ) {
    super([semaphore], value, attempts, undefined, state);
    this.semaphore = semaphore;
    this.slot = slot;
  }

  /** Keeps the value out of `JSON.stringify` and logs. */
  override toJSON(): { resources: readonly string[]; expiresAt: number; semaphore: string; slot: number } {
    return { ...super.toJSON(), semaphore: this.semaphore, slot: this.slot };
  }
}

/**
 * At most `limit` holders at once, across every process, isolate and region that shares the nodes.
 * Made by {@link Redlock.semaphore}. Sound for every `limit`: each of the `limit` slots is a Redlock
 * mutex, and a permit is a lock on one slot, so two valid permits never share a slot. (Counting holders
 * per node and calling a permit valid on a majority over-admits: docs/SAFETY.md, "Semaphores".)
 * @example
 * ```ts
 * declare function render(job: string, options: { signal: AbortSignal }): Promise<Uint8Array>; // your own work
 * const renders = redlock.semaphore("renders", 2);
 * const pdf = await renders.using(30_000, async (signal) => render("invoice:7", { signal }));
 * ```
 */
export class Semaphore {
  /** The semaphore's key (its slots are keys of their own under the library's reserved prefix). */
  readonly key: string;
  /** How many holders may hold a permit at once. */
  readonly limit: number;
  readonly #rounds: Rounds;
  readonly #lifecycle: Lifecycle;
  readonly #slots: string[];

  /** @internal Made by {@link Redlock.semaphore}. */
  constructor(key: string, limit: number, rounds: Rounds, lifecycle: Lifecycle) {
    const [checked] = checkResources(key);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PERMITS)
      throw new InvalidArgumentError("limit", `must be an integer from 1 to ${MAX_PERMITS}`);
    this.key = checked;
    this.limit = limit;
    this.#rounds = rounds;
    this.#lifecycle = lifecycle;
    this.#slots = Array.from({ length: limit }, (_, slot) => `${RESERVED_PREFIX}semaphore:${checked}:${slot}`);
  }

  /**
   * Takes a permit for `ttl` ms: one slot, locked on a quorum within validity, like a lock. The first
   * try takes a random slot; a refusal tells which slots look free on each node: when another slot is
   * free on a quorum, it is tried at once (at most `limit` tries an attempt); otherwise the attempt fails
   * as full and the next one, after the retry delay, picks the slot free on the most nodes. One request
   * per node per try.
   * @throws {InvalidArgumentError} before any request, for bad arguments.
   * @throws {LockAcquisitionError} when every attempt failed: `reason` `held` means every permit is held
   * (`retryAfterMs`: when the soonest held permit expires, as the nodes reported it), `unreachable` too
   * many nodes gave no answer.
   * @example
   * ```ts
   * const permit = await semaphore.acquire(10_000, { maxWait: 5_000 });
   * try { await fetch("https://api.example.com/"); } finally { await permit.release(); }
   * ```
   */
  async acquire(ttl: number, options: AcquireOptions = {}): Promise<Permit> {
    const rounds = this.#rounds;
    checkTtl(ttl, rounds.options.nodeTimeout);
    const policy = checkRetryPolicy(options, rounds.options);
    if (options.fencing) throw new InvalidArgumentError("options.fencing", "is not available for semaphore permits");
    // Waiters are admitted in ticket order, one line per semaphore, in the same request.
    const queues = [SEMAPHORE_LINE_PREFIX + this.key];
    const line = new Line(
      rounds.clock,
      rounds.nodeClock,
      queues,
      lineOptions(policy, rounds.options.nodeTimeout, { slowRoundMs: rounds.slowRoundMs, woken: rounds.wakeable }),
    );
    const script = FAIR_SEMAPHORE_ACQUIRE;
    const keys = [...this.#slots, ...line.queues];
    let slot = Math.floor(randomUnit() * this.limit);
    let take = slot;
    const tried = new Set<number>();
    const permit: LockStrategy<Permit> = {
      kind: "permit",
      resources: [this.key],
      ttl,
      line,
      leaveKeys: [this.#slots[0]],
      next: (first) => {
        if (first) tried.clear();
        take = slot;
        tried.add(take);
        return { script, keys, args: (value) => [value, String(ttl), String(take + 1)], holds: [this.#slots[take]] };
      },
      // Another slot free on a quorum is tried at once; otherwise the attempt fails, and the next one starts there.
      again: (round) => {
        const next = freeSlot(round, this.limit, rounds.quorum, tried);
        slot = next.slot;
        return next.onQuorum;
      },
      build: (grant, attempts, state) =>
        new Permit(this.key, take, grant.value, attempts, { ...state, keys: [this.#slots[take]] }),
    };
    return acquire({ rounds, lifecycle: this.#lifecycle }, permit, policy, "permit");
  }

  /**
   * Runs `routine` while holding a permit: acquires, extends automatically, releases at the end — also
   * when the routine throws — exactly as {@link Redlock.using} does for a lock.
   * @example
   * ```ts
   * const answer = await semaphore.using(10_000, async (signal) => fetch("https://api.example.com/", { signal }));
   * ```
   */
  async using<T>(
    ttl: number,
    routine: (signal: AbortSignal, permit: Permit) => Promise<T> | T,
    options: UsingOptions = {},
  ): Promise<T> {
    const { acquire, ...keep } = checkUsing(ttl, routine, options, this.#rounds.options.nodeTimeout);
    const permit = await this.acquire(ttl, acquire);
    return holdWhile(permit, routine, { clock: this.#rounds.clock, ttl, ...keep, signal: options?.signal });
  }

  /**
   * How many permits a quorum holds now, and when the soonest of them expires — read from every node
   * without taking anything.
   * @example
   * ```ts
   * const { held, limit } = await semaphore.inspect();
   * ```
   */
  inspect(): Promise<SemaphoreInspection> {
    return inspectSlots(this.#rounds, this.key, this.#slots);
  }
}
