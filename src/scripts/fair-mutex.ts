// Fair waiting: acquire that grants only to the first live waiter, and leaving the queue.
import { GREATER } from "./decimal.ts";
import { LONGEST_PTTL, TAKE } from "./mutex-lua.ts";
import { fairRefusal, grantOrRefuse, grantWithFence, isInteger, unexpected } from "./replies.ts";
import { QUEUE_CLOCK } from "./queue.ts";
import { KEY_LOCKING, defineScript, type Script } from "./script.ts";
import type { Vote } from "./vote.ts";

/**
 * KEYS[1..n] resources, KEYS[n+1..2n] their wait queues, then optionally their n fence counters;
 * ARGV[1] value, ARGV[2] ttl ms, ARGV[3] n, ARGV[4] the waiter's ticket, ARGV[5] its lease ms,
 * ARGV[6] "1" to join the queues when refused ("0": one try, never enqueues).
 * Grants exactly where {@link ACQUIRE} would (every resource absent) **and** no live waiter of any of
 * the queues has a smaller ticket; the grant leaves the queues. Otherwise refuses with the longest PTTL
 * (-2 when only the queue stood in the way) and the most waiters ahead in any queue, and (ARGV[6])
 * joins or refreshes the queues with a deadline of the lease from now. The queue only takes grants away.
 * @example
 * ```ts
 * const keys = ["orders:42", "edge-redlock:queue:orders:42"];
 * const reply = await redis.evalsha(sha, keys, [value, "10000", "1", ticket, "300", "1"]); // [0, 4200, 2]
 * ```
 */
export const FAIR_ACQUIRE: Script = /* @__PURE__ */ defineScript({
  name: "fair-acquire",
  lua: () => `${KEY_LOCKING}${GREATER}${LONGEST_PTTL}${TAKE}${QUEUE_CLOCK}local n = tonumber(ARGV[3])
local ticket = ARGV[4]
local held, wait = longest_pttl(n)
local ahead = 0
for i = 1, n do
  local a = waiters_ahead(KEYS[n + i], ticket)
  if a > ahead then ahead = a end
end
if held or ahead > 0 then
  if ARGV[6] == "1" then
    for i = 1, n do enqueue(KEYS[n + i], ticket, tonumber(ARGV[5])) end
  end
  if not held then wait = -2 end
  return {0, wait, ahead}
end
for i = 1, n do redis.call("ZREM", KEYS[n + i], ticket) end
local fence = take(n, 2 * n)
if fence then return {1, fence} end
return {1}`,
  vote: (reply) => (isRefusal(reply) ? fairRefusal(reply) : grantOrRefuse(reply)),
});

/** {@link FAIR_ACQUIRE} with fence counters in KEYS: only a grant that carries a counter counts. * @example
 * ```ts
 * FENCED_FAIR_ACQUIRE.vote([1, "1732406400000001"]); // { outcome: "granted", fence: "1732406400000001" }
 * ```
 */
export const FENCED_FAIR_ACQUIRE: Script = /* @__PURE__ */ defineScript({
  name: "fair-acquire",
  lua: () => FAIR_ACQUIRE.lua,
  vote: (reply) => (isRefusal(reply) ? fairRefusal(reply) : grantWithFence(reply)),
});

/**
 * KEYS[1..n] resources, KEYS[n+1..2n] their wait queues; ARGV[1] value, ARGV[2] ticket, ARGV[3] lease ms.
 * Deletes each resource that still holds the value (as {@link RELEASE}) and puts the ticket back in every
 * queue with a deadline of the lease from now; answers how many resources it deleted. The undoing of a fair
 * attempt that failed while its waiter keeps waiting: where the attempt was granted, the grant took the ticket
 * out of the queue, and without it the next contender was served there first, over and over, for a waiter that
 * needs that node (one that reaches only a bare quorum of nodes was kept out for seconds).
 * @example
 * ```ts
 * await redis.evalsha(sha, ["orders:42", "edge-redlock:queue:orders:42"], [value, ticket, "300"]); // 1
 * ```
 */
export const REQUEUE: Script = /* @__PURE__ */ defineScript({
  name: "requeue",
  lua: () => `${KEY_LOCKING}${QUEUE_CLOCK}${releaseEach("enqueue(KEYS[n + i], ARGV[2], tonumber(ARGV[3]))")}`,
  vote: (reply) => LEAVE.vote(reply),
});

/**
 * Lua over KEYS = resources then their queues: deletes each resource that holds ARGV[1], runs `queueStep` on its
 * queue (`KEYS[n + i]`), and answers how many it deleted.
 */
function releaseEach(queueStep: string): string {
  return `local n = #KEYS / 2
local released = 0
for i = 1, n do
  if redis.call("GET", KEYS[i]) == ARGV[1] then
    redis.call("DEL", KEYS[i])
    released = released + 1
  end
  ${queueStep}
end
return released`;
}

function isRefusal(reply: unknown): boolean {
  return Array.isArray(reply) && reply[0] === 0;
}

/**
 * KEYS[1..n] resources, KEYS[n+1..2n] their wait queues; ARGV[1] value, ARGV[2] ticket.
 * Deletes each resource that still holds the value (as {@link RELEASE}) and takes the ticket out of every
 * queue; answers how many resources it deleted. A waiter that stops waiting, and a fair lock's release.
 * @example
 * ```ts
 * await redis.evalsha(sha, ["orders:42", "edge-redlock:queue:orders:42"], [value, ticket]); // 1
 * ```
 */
export const LEAVE: Script = /* @__PURE__ */ defineScript({
  name: "leave",
  lua: () => `${KEY_LOCKING}${releaseEach(`redis.call("ZREM", KEYS[n + i], ARGV[2])`)}`,
  vote(reply): Vote {
    if (!isInteger(reply) || reply < 0) return unexpected(reply);
    return reply > 0 ? { outcome: "granted" } : { outcome: "denied" };
  },
});
