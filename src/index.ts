/**
 * edge-redlock: the Redlock distributed lock over HTTP for edge and serverless runtimes
 * (Cloudflare Workers, Vercel Edge, Deno, Bun, Node), on five independent Upstash Redis databases.
 *
 * Module systems: the package is ES modules only. `import` works everywhere; CommonJS `require` of the
 * package works on Node 20.19+ and 22.12+ (which load ES modules from it), not on older Node.
 * TypeScript resolves the types with `moduleResolution` `bundler` or `node16`/`nodenext` (CommonJS
 * projects included, TypeScript 5.8+). The Hono middlewares are `edge-redlock/hono`; the Lua scripts,
 * for people who write their own `RedlockNode`, are `edge-redlock/scripts`; the mutex alone, for the smallest
 * bundle, is `edge-redlock/mutex`.
 *
 * @example
 * ```ts
 * import { Redlock } from "edge-redlock";
 *
 * const redlock = Redlock.fromEnv(env); // UPSTASH_REDIS_REST_URL_1 … _5, UPSTASH_REDIS_REST_TOKEN_1 … _5
 * await using lock = await redlock.acquire(["orders:42"], 10_000);
 * ```
 * @module
 */
export { Redlock } from "./redlock.ts";
export { RedlockMutex } from "./redlock-mutex.ts";
export type { NodeInput } from "./node/input.ts";
export { Lock, type ReleaseResult } from "./lock/lock.ts";
export { MAX_PERMITS, Permit, Semaphore } from "./semaphore/semaphore.ts";
export { ReadWriteLock, type ReadWriteOptions } from "./rwlock/read-write.ts";
export type { ReadWriteInspection } from "./rwlock/inspect.ts";
export type { Inspection, NodeInspection, SemaphoreInspection } from "./lock/inspect.ts";
export {
  DEFAULTS,
  MAX_TTL,
  type AcquireOptions,
  type RedlockOptions,
  type ResolvedOptions,
  type UsingOptions,
} from "./options.ts";
export { keepLock, type KeepOptions, type Keeper } from "./lock/keeper.ts";
export {
  InvalidArgumentError,
  LockAcquisitionError,
  LockExtensionError,
  MaxHoldError,
  RedlockError,
  ResponseAbandonedError,
  type AttemptTally,
  type FailureReason,
} from "./errors.ts";
export { MissingConfigurationError, envNames, nodesFromEnv, type EnvOptions } from "./node/env.ts";
export type { NodeConfig, RedlockNode, ScriptClient } from "./node/node.ts";
export { upstashNode, type UpstashNodeOptions } from "./node/upstash.ts";
export type { Script } from "./scripts/script.ts";
export type { NodeVote, Vote } from "./scripts/vote.ts";
export { FENCE_PREFIX, compareFences, fenceKey, maxFence } from "./fencing/tokens.ts";
export { fencedRead, fencedWrite, type FencedWriteOptions } from "./fencing/guard.ts";
export { systemClock, type Clock, type Deadline } from "./support/clock.ts";
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
} from "./events/types.ts";
export { checkNodes } from "./doctor/index.ts";
export type { CheckStatus, DoctorCheck, DoctorOptions, DoctorReport, NodeHealth } from "./doctor/types.ts";
