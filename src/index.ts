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
// The mutex and everything it needs, as edge-redlock/mutex exports them; `Redlock` here is the whole one (an
// export of the module's own takes the place of the star export's of the same name).
export * from "./mutex/index.ts";
export { Redlock } from "./redlock.ts";
export { MAX_PERMITS, Permit, Semaphore } from "./semaphore/semaphore.ts";
export { ReadWriteLock, type ReadWriteOptions } from "./rwlock/read-write.ts";
export type { ReadWriteInspection } from "./rwlock/read-write-inspection.ts";
export type { Inspection, NodeInspection } from "./lock/lock-inspection.ts";
export type { SemaphoreInspection } from "./semaphore/semaphore-inspection.ts";
export { ResponseAbandonedError } from "./errors.ts";
export { checkNodes } from "./doctor/index.ts";
export type { CheckStatus, DoctorCheck, DoctorOptions, DoctorReport, NodeHealth } from "./doctor/types.ts";
