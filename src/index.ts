/**
 * edge-redlock: the Redlock distributed lock over HTTP for edge and serverless runtimes
 * (Cloudflare Workers, Vercel Edge, Deno, Bun, Node), on five independent Upstash Redis databases.
 *
 * Module systems: the package is ES modules only. `import` works everywhere; CommonJS `require` of the
 * package works on Node 20.19+ and 22.12+ (which load ES modules from it), not on older Node.
 * TypeScript resolves the types with `moduleResolution` `bundler` or `node16`/`nodenext` (CommonJS
 * projects included, TypeScript 5.8+). The Hono middleware is `edge-redlock/hono`.
 *
 * @example
 * import { Redlock } from "edge-redlock";
 * const redlock = Redlock.fromEnv(env); // UPSTASH_REDIS_REST_URL_1 … _5, UPSTASH_REDIS_REST_TOKEN_1 … _5
 * await using lock = await redlock.acquire(["orders:42"], 10_000);
 * @module
 */
export { Redlock, type NodeInput } from "./redlock.ts";
export { Lock, type ReleaseResult } from "./lock.ts";
export { MAX_PERMITS, Permit, Semaphore } from "./semaphore.ts";
export type { Inspection, NodeInspection, SemaphoreInspection } from "./inspect.ts";
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
export { ACQUIRE, EXTEND, FENCE, FENCED_ACQUIRE, FENCED_READ, FENCED_WRITE, INSPECT, KEY_LOCKING, RELEASE, SEMAPHORE_ACQUIRE, withoutKeyLocking, type Script } from "./scripts.ts";
export { FENCE_PREFIX, compareFences, fenceKey, fencedRead, fencedWrite, maxFence, type FencedWriteOptions } from "./fencing.ts";
export { systemClock, type Clock } from "./clock.ts";
export { checkNodes, type CheckStatus, type DoctorCheck, type DoctorOptions, type DoctorReport, type NodeHealth } from "./doctor.ts";
export type { NodeVote, Vote } from "./vote.ts";
