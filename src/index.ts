// edge-redlock: the Redlock distributed lock over HTTP for edge and serverless runtimes.
export { Redlock, type NodeInput } from "./redlock.ts";
export { Lock, type ReleaseResult } from "./lock.ts";
export { DEFAULTS, MAX_TTL, type AcquireOptions, type RedlockOptions, type UsingOptions } from "./options.ts";
export { keepLock, type KeepOptions, type Keeper } from "./keeper.ts";
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
export { MissingConfigurationError, envNames, nodesFromEnv, type EnvOptions } from "./env.ts";
export { upstashNode, type NodeConfig, type RedlockNode, type ScriptClient } from "./node.ts";
export { ACQUIRE, EXTEND, FENCE, FENCED_READ, FENCED_WRITE, RELEASE, type Script } from "./scripts.ts";
export { FENCE_PREFIX, compareFences, fenceKey, fencedRead, fencedWrite, maxFence, type FencedWriteOptions } from "./fencing.ts";
export { systemClock, type Clock } from "./clock.ts";
export type { NodeVote, Vote } from "./vote.ts";
