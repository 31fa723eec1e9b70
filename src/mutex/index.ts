/**
 * edge-redlock/mutex: the Redlock mutex alone, for a Worker that only locks and wants the smallest bundle.
 * `Redlock` here is {@link RedlockMutex}: the `Redlock` of `edge-redlock` (same constructor, `fromEnv`,
 * `acquire`, `using`, `extend`, `release`, fencing, fair waiting, events) without `semaphore()`,
 * `readWriteLock()` and `inspect()`, which a bundle of this entry does not carry. The `redlock()` middleware
 * of `edge-redlock/hono` takes either. Everything else the mutex needs is exported here too.
 *
 * @example
 * ```ts
 * import { Redlock } from "edge-redlock/mutex";
 *
 * const redlock = Redlock.fromEnv(env); // UPSTASH_REDIS_REST_URL_1 … _5, UPSTASH_REDIS_REST_TOKEN_1 … _5
 * await using lock = await redlock.acquire(["orders:42"], 10_000);
 * ```
 * @module
 */
export { RedlockMutex, RedlockMutex as Redlock } from "../redlock-mutex.ts";
export type { NodeInput } from "../node/input.ts";
export { Lock, type ReleaseResult } from "../lock/lock.ts";
export {
  DEFAULTS,
  MAX_TTL,
  type AcquireOptions,
  type RedlockOptions,
  type ResolvedOptions,
  type UsingOptions,
} from "../options.ts";
export { keepLock, type KeepOptions, type Keeper } from "../lock/keeper.ts";
export {
  InvalidArgumentError,
  LockAcquisitionError,
  LockExtensionError,
  MaxHoldError,
  RedlockError,
  type AttemptTally,
  type FailureReason,
} from "../errors.ts";
export { MissingConfigurationError, envNames, nodesFromEnv, type EnvOptions } from "../node/env.ts";
export type { NodeConfig, PubSubSubscriber, RedlockNode, ScriptClient } from "../node/node.ts";
export type { Subscription } from "../node/subscribe.ts";
export type { Script } from "../scripts/script.ts";
export type { NodeVote, Vote } from "../scripts/vote.ts";
export { upstashNode, type UpstashNodeOptions } from "../node/upstash.ts";
export { FENCE_PREFIX, compareFences, fenceKey, maxFence } from "../fencing/tokens.ts";
export { fencedRead, fencedWrite, type FencedWriteOptions } from "../fencing/guard.ts";
export { systemClock, type Clock, type Deadline } from "../support/clock.ts";
export type {
  AcquireEvent,
  EventBase,
  EventHandler,
  ExtendEvent,
  LockEvent,
  LockKind,
  LostEvent,
  NodeErrorKind,
  NodeTally,
  ReleaseEvent,
  RetryEvent,
} from "../events/types.ts";
