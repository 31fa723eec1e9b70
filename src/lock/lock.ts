// A held lock: what the caller keeps, and what release and extend need.
/// <reference lib="esnext.disposable" preserve="true" />
import type { Emit } from "../events/emit.ts";
import type { LockKind } from "../events/types.ts";
import type { Script } from "../scripts/script.ts";
import type { NodeVote, Vote } from "../scripts/vote.ts";

/**
 * What {@link Lock.release} reports, as it stood when a quorum had answered. `released` counts the
 * nodes that deleted the lock's keys; nodes that no longer held them (expired, or taken over) are not
 * errors; nodes that had not answered yet are `unanswered` in `votes`.
 * @example
 * ```ts
 * const { released, errors, pending } = await lock.release();
 * ctx.waitUntil(pending);
 * ```
 */
export interface ReleaseResult {
  /** Nodes that deleted the lock's keys. */
  released: number;
  /** Nodes that gave no usable answer within nodeTimeout. */
  errors: number;
  /** Per node, what it answered (`unanswered`: not yet when a quorum had). */
  votes: NodeVote[];
  /**
   * What runs on after `release()` resolved: the release requests still out when a quorum had answered,
   * and a follow-up release for each acquire reply that was still on its way at release time (so a
   * late-landing acquire is undone too). Each request is bounded by nodeTimeout; never rejects.
   * On Workers, hand it to `ctx.waitUntil`.
   */
  pending: Promise<void>;
}

/** The operations a lock delegates to the {@link Redlock} that made it. */
export interface LockOwner {
  extend(lock: Lock, ttl: number): Promise<Lock>;
  release(lock: Lock): Promise<ReleaseResult>;
  now(): number;
  /** Reports to the Redlock's `onEvent`; absent without one. */
  emit: Emit | undefined;
}

/** Package-internal state of a lock. */
export interface LockState {
  owner: LockOwner;
  /** What kind of lock this is, for events. */
  kind: LockKind;
  value: string;
  /** The keys the lock holds on the nodes (a permit's slot key; a lock's resources). */
  keys: readonly string[];
  /** Monotonic time at which validity ends. */
  deadline: number;
  expiresAt: number;
  /** Nodes whose acquire reply was still out when the round was decided, with the reply to come. */
  stragglers: Map<number, Promise<Vote>>;
  /** Set when release() is called: the lock is dead from then on. */
  released: boolean;
  /** The HTTP requests its acquisition sent, at most (a middleware's request budget counts on from it). */
  requests?: number;
  /** A fair lock's wait queues (one per key, in the same order) and its ticket: its release leaves them too. */
  queue?: { keys: readonly string[]; ticket: string };
  /**
   * How this kind of lock is released and extended on a node, when not as a mutex's key: `release` is sent with
   * `keys` (then the queue's keys) and `[value]` (then the ticket), `extend` with `keys` and `[value, ttl]`.
   * A reader of a read-write lock is an entry of a reader set, not a key of its own.
   */
  scripts?: { release: Script; extend: Script };
}

const states = new WeakMap<Lock, LockState>();

/** @internal */
export function lockState(lock: Lock): LockState {
  const state = states.get(lock);
  if (!state) throw new TypeError("not a lock made by this library");
  return state;
}

const asyncDispose: typeof Symbol.asyncDispose =
  Symbol.asyncDispose ?? (Symbol.for("Symbol.asyncDispose") as typeof Symbol.asyncDispose);

/**
 * A lock held on a quorum of nodes until {@link Lock.expiresAt}. Act on the resources only while
 * `Date.now() < lock.expiresAt` (better: check {@link Lock.validityMs}); extend before it ends.
 * @example
 * ```ts
 * declare function charge(orderId: string): Promise<void>; // your own work
 * const lock = await redlock.acquire(["orders:42"], 10_000);
 * try { await charge("42"); } finally { await lock.release(); }
 * ```
 */
export class Lock {
  /** The keys this lock holds, in the order given. */
  readonly resources: readonly string[];
  /** How many attempts the acquisition took. */
  readonly attempts: number;
  /**
   * The fencing token (a decimal string; compare with `BigInt` or {@link compareFences}) when acquired
   * with `{ fencing: true }`: larger than the token of every earlier holder of any of these resources.
   */
  readonly fence: string | undefined;

  /**
   * @internal Made by {@link Redlock.acquire} (or a semaphore); `keys` are the keys on the nodes, `resources` by
   * default.
   */
  constructor(
    resources: readonly string[],
    value: string,
    attempts: number,
    fence: string | undefined,
    state: Omit<LockState, "value" | "released" | "keys"> & { keys?: readonly string[] },
  ) {
    this.resources = Object.freeze([...resources]);
    this.attempts = attempts;
    this.fence = fence;
    states.set(this, { ...state, keys: Object.freeze([...(state.keys ?? resources)]), value, released: false });
  }

  /** The random value that proves ownership on every node (a getter, so logging the lock does not print it). */
  get value(): string {
    return lockState(this).value;
  }

  /** Epoch ms at which the validity ends (ttl − elapsed − drift after the last acquire or extend). */
  get expiresAt(): number {
    return lockState(this).expiresAt;
  }

  /** ms of validity left now, on the monotonic clock; ≤ 0 means the lock must be treated as lost (0 once released). */
  get validityMs(): number {
    const state = lockState(this);
    return state.released ? Math.min(0, state.deadline - state.owner.now()) : state.deadline - state.owner.now();
  }

  /**
   * Sets a new ttl on a quorum, with the same validity rule as acquire (a node never shortens the key).
   * Resolves with this lock, its `expiresAt` moved; rejects with {@link LockExtensionError} when the
   * lock is lost or was released.
   * @example
   * ```ts
   * await lock.extend(10_000);
   * ```
   */
  extend(ttl: number): Promise<Lock> {
    return lockState(this).owner.extend(this, ttl);
  }

  /**
   * Deletes the keys on every node that still holds this lock's value. Never throws for node failures.
   * From the call on the lock is dead: `extend` rejects, and an extension in flight reports failure.
   * @example
   * ```ts
   * const { released } = await lock.release();
   * ```
   */
  release(): Promise<ReleaseResult> {
    return lockState(this).owner.release(this);
  }

  /**
   * Releases at the end of an `await using` scope: the scope is left once a quorum answered the
   * release, as with `release()`; {@link ReleaseResult.pending} runs on in the background (on Workers,
   * call `release()` yourself and hand `pending` to `ctx.waitUntil`).
   * @example
   * ```ts
   * await using lock = await redlock.acquire(["k"], 5_000);
   * ```
   */
  async [asyncDispose](): Promise<void> {
    await this.release();
  }

  /** Keeps the value out of `JSON.stringify` and logs. */
  toJSON(): { resources: readonly string[]; expiresAt: number; fence?: string } {
    return {
      resources: this.resources,
      expiresAt: this.expiresAt,
      ...(this.fence === undefined ? {} : { fence: this.fence }),
    };
  }
}
