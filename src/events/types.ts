// What a Redlock reports to `onEvent`: typed, synchronous, and never a token or a lock's value.
import type { FailureReason } from "../errors.ts";

/** Which kind of lock an event is about. */
export type LockKind = "lock" | "permit" | "read" | "write";

/**
 * How the nodes answered one round: counts only. Errors are counted by kind, never with their text:
 * `timeout` (no answer within nodeTimeout), `aborted` (the caller's signal), `network` (no connection),
 * `reply` (an answer of the wrong shape), `refused` (the database or its HTTP front answered an error).
 * @example
 * ```ts
 * const tally: NodeTally = { granted: 3, denied: 0, errors: 2, errorKinds: { timeout: 2 } };
 * ```
 */
export interface NodeTally {
  /** Nodes that granted. */
  granted: number;
  /** Nodes that refused (another holder). */
  denied: number;
  /** Nodes that gave no usable answer. */
  errors: number;
  /** `errors` by kind. */
  errorKinds: Partial<Record<NodeErrorKind, number>>;
}

/** Why a node gave no usable answer, in one word. */
export type NodeErrorKind = "timeout" | "aborted" | "network" | "reply" | "refused";

/**
 * What every event carries: what it is about.
 * @example
 * ```ts
 * const about = (event: LockEvent): EventBase => ({ kind: event.kind, resources: event.resources });
 * ```
 */
export interface EventBase {
  /** Which kind of lock. */
  kind: LockKind;
  /**
   * The resources (a semaphore's key for a permit). They are your keys: normalise them before using
   * them as metric labels (e.g. `orders:42` → `orders:*`), or a label per key will grow without bound.
   */
  resources: readonly string[];
}

/**
 * An acquisition ended: `held`, or `failed` after its last attempt.
 * @example
 * ```ts
 * const onEvent = (event: LockEvent) => {
 *   if (event.type === "acquire" && event.outcome === "held") console.log(event.attempts, event.elapsedMs);
 * };
 * ```
 */
export interface AcquireEvent extends EventBase {
  /** What happened. */
  type: "acquire";
  /** Whether the lock (or permit) is held. */
  outcome: "held" | "failed";
  /** How many attempts it took (or were made). */
  attempts: number;
  /** From the call to the outcome, ms. */
  elapsedMs: number;
  /** The lock's validity when it was handed out (ms); absent when it failed. */
  validityMs?: number;
  /** Why the last attempt failed (`aborted`: the caller's signal ended it); absent when held. */
  reason?: FailureReason | "aborted";
  /** How the nodes answered the last attempt (all zero when it was aborted). */
  tally: NodeTally;
}

/**
 * An attempt failed and the acquisition waits before the next one.
 * @example
 * ```ts
 * const waits: number[] = [];
 * const onEvent = (event: LockEvent) => {
 *   if (event.type === "retry") waits.push(event.waitMs);
 * };
 * ```
 */
export interface RetryEvent extends EventBase {
  /** What happened. */
  type: "retry";
  /** The attempt that failed (1 for the first). */
  attempt: number;
  /** How long it waits before the next attempt, ms. */
  waitMs: number;
  /** Why the attempt failed. */
  reason: FailureReason;
  /** Where this waiter stands in the nodes' queue, when they said (1 = next). */
  position?: number;
  /** How the nodes answered the attempt. */
  tally: NodeTally;
}

/**
 * An extension ended: `extended`, or `failed` (the lock must then be treated as lost).
 * @example
 * ```ts
 * const onEvent = (event: LockEvent) => {
 *   if (event.type === "extend" && event.outcome === "failed") console.error("not extended", event.resources);
 * };
 * ```
 */
export interface ExtendEvent extends EventBase {
  /** What happened. */
  type: "extend";
  /** Whether the extension reached a quorum in time. */
  outcome: "extended" | "failed";
  /** The validity after the extension (ms); absent when it failed. */
  validityMs?: number;
  /** Why it failed; absent when extended. */
  reason?: FailureReason;
  /** How the nodes answered; absent when no request was sent (the lock was released or past its validity). */
  tally?: NodeTally;
}

/**
 * A held lock was lost while it was kept (`using`, the Hono middlewares, `keepLock`): an extension failed,
 * or its validity ran out first. `maxHold` reaching its cap is `max-hold`.
 * @example
 * ```ts
 * const onEvent = (event: LockEvent) => {
 *   if (event.type === "lost") console.warn("lost", event.resources, event.reason);
 * };
 * ```
 */
export interface LostEvent extends EventBase {
  /** What happened. */
  type: "lost";
  /** An extension failed, the validity ran out before one succeeded, or `maxHold` was reached. */
  reason: "extension-failed" | "expired" | "max-hold";
}

/**
 * A release was decided (a quorum answered); requests still out run on in the background.
 * @example
 * ```ts
 * const onEvent = (event: LockEvent) => {
 *   if (event.type === "release" && event.errors > 0) console.warn("release errors", event.errors);
 * };
 * ```
 */
export interface ReleaseEvent extends EventBase {
  /** What happened. */
  type: "release";
  /** Nodes that deleted the lock's keys. */
  released: number;
  /** Nodes that gave no usable answer. */
  errors: number;
  /** From the call to the decision, ms. */
  elapsedMs: number;
}

/**
 * Every event `onEvent` receives. None carries a node token or a lock's value (the value is a capability:
 * who knows it can release the lock).
 * @example
 * ```ts
 * import { Redlock } from "edge-redlock";
 *
 * const redlock = new Redlock(nodes, { onEvent: (event) => console.log(event.type, event.kind, event.resources) });
 * ```
 */
export type LockEvent = AcquireEvent | RetryEvent | ExtendEvent | LostEvent | ReleaseEvent;

/**
 * The handler given as `onEvent`: called synchronously; what it throws is reported once through
 * `console.error` and never reaches the lock.
 */
export type EventHandler = (event: LockEvent) => void;
