/**
 * `edge-redlock/scripts`: the Lua scripts the lock sends, each with the rule that turns its reply into a
 * vote, and the helpers around Upstash's key-locking flag. For people who write their own
 * `RedlockNode` (another transport) and want to run or test the library's scripts themselves.
 *
 * @example
 * ```ts
 * import { ACQUIRE, scriptSha, withoutKeyLocking } from "edge-redlock/scripts";
 *
 * // A node over plain Redis 7, which rejects the key-locking flag:
 * const lua = withoutKeyLocking(ACQUIRE.lua);
 * const sha = await scriptSha(lua);
 * ```
 * @module
 */
export { KEY_LOCKING, rejectsKeyLocking, scriptSha, withoutKeyLocking, type Script } from "./script.ts";
export { ACQUIRE, EXTEND, FENCED_ACQUIRE, RELEASE } from "./lock.ts";
export { FENCE, FENCED_READ, FENCED_WRITE } from "./fencing.ts";
export { FAIR_SEMAPHORE_ACQUIRE, SEMAPHORE_ACQUIRE } from "./semaphore.ts";
export { FAIR_ACQUIRE, FENCED_FAIR_ACQUIRE, LEAVE, REQUEUE } from "./fair-mutex.ts";
export { CLOCK_STEP_MS, LINE_LINGER_MS, WAKE_PREFIX } from "./queue.ts";
export {
  FENCED_RW_WRITE_ACQUIRE,
  RW_INSPECT,
  RW_READ_ACQUIRE,
  RW_READ_EXTEND,
  RW_READ_RELEASE,
  RW_WRITE_ACQUIRE,
} from "./rw.ts";
export { READERS_CLOCK_MEMBER } from "./readers.ts";
export { INSPECT } from "./inspect.ts";
export type { NodeVote, Vote } from "./vote.ts";
