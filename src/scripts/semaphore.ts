// The semaphore: take one slot of `limit`, or say which slots look free here.
import { LINE } from "./queue.ts";
import { isInteger, unexpected } from "./replies.ts";
import { KEY_LOCKING, defineScript, type Script } from "./script.ts";

/**
 * KEYS[1..limit] a semaphore's slots; ARGV[1] value, ARGV[2] ttl ms, ARGV[3] the slot to take (1-based).
 * Takes that slot where it is free (`{1}`); otherwise refuses with the soonest expiry among the held
 * slots and the slots free on this node, 0-based (`{0, pttl, {free…}}`), so the next attempt can pick
 * a slot free on a quorum. Every slot is a Redlock mutex of its own (docs/SAFETY.md, "Semaphores").
 */
export const SEMAPHORE_ACQUIRE: Script = /* @__PURE__ */ defineScript({
  name: "semaphore-acquire",
  lua: () => `${KEY_LOCKING}local slot = tonumber(ARGV[3])
if redis.call("EXISTS", KEYS[slot]) == 0 then
  redis.call("SET", KEYS[slot], ARGV[1], "PX", ARGV[2])
  return {1}
end
local free, soonest = {}, -1
for i = 1, #KEYS do
  local pttl = redis.call("PTTL", KEYS[i])
  if pttl == -2 then free[#free + 1] = i - 1
  elseif pttl >= 0 and (soonest == -1 or pttl < soonest) then soonest = pttl end
end
return {0, soonest, free}`,
  vote(reply) {
    if (Array.isArray(reply) && reply.length === 1 && reply[0] === 1) return { outcome: "granted" };
    if (
      Array.isArray(reply) &&
      reply.length === 3 &&
      reply[0] === 0 &&
      isInteger(reply[1]) &&
      reply[1] >= -1 &&
      Array.isArray(reply[2]) &&
      reply[2].every((slot) => isInteger(slot) && slot >= 0)
    ) {
      return { outcome: "denied", pttl: reply[1], free: reply[2] as number[] };
    }
    return unexpected(reply);
  },
});

/**
 * The semaphore's fair acquire. KEYS[1..limit] the slots, KEYS[limit + 1] the semaphore's line;
 * ARGV[1] value, ARGV[2] ttl ms, ARGV[3] the slot to take (1-based), ARGV[4] ticket, ARGV[5] how long its entry
 * lives (ms), ARGV[6] "1" to join the line when refused, ARGV[7] the ticket's age (ms). Takes the slot exactly where
 * {@link SEMAPHORE_ACQUIRE} would (the slot is free) **and** fewer live waiters are ahead than slots are free here;
 * the grant leaves the line. Otherwise refuses as {@link SEMAPHORE_ACQUIRE} does, plus the waiters ahead
 * (`{0, pttl, {free…}, ahead}`), and wakes as many of the first in line as slots are free. A ticket out of step with
 * the node's clock is refused as the mutex's is: `{0, pttl, {free…}, -1, now}`.
 * @example
 * ```ts
 * FAIR_SEMAPHORE_ACQUIRE.vote([0, 900, [], 1]); // { outcome: "denied", pttl: 900, free: [], position: 1 }
 * ```
 */
export const FAIR_SEMAPHORE_ACQUIRE: Script = /* @__PURE__ */ defineScript({
  name: "fair-semaphore-acquire",
  lua: () => `${KEY_LOCKING}${LINE}local limit = #KEYS - 1
local slot, ticket, age = tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[7]) or 0
assert(ticket, "a line member is missing")
local q = KEYS[limit + 1]
local free, soonest = {}, -1
for i = 1, limit do
  local pttl = redis.call("PTTL", KEYS[i])
  if pttl == -2 then free[#free + 1] = i - 1
  elseif pttl >= 0 and (soonest == -1 or pttl < soonest) then soonest = pttl end
end
local ahead, waiting = waiters_ahead(q, ticket)
local open = false
for _, f in ipairs(free) do
  if f == slot - 1 then open = true end
end
if (waiting > 0 or (not open and ARGV[6] == "1")) and not in_step(q, ticket, age) then
  return {0, soonest, free, -1, node_now()}
end
if open and ahead < #free then
  line_leave(q, ticket)
  redis.call("SET", KEYS[slot], ARGV[1], "PX", ARGV[2])
  if waiting > 0 then wake(q, #free - 1) end
  return {1}
end
if ARGV[6] == "1" then enqueue(q, ticket, tonumber(ARGV[5])) end
if #free > 0 then wake(q, #free) end
return {0, soonest, free, ahead}`,
  vote(reply) {
    if (Array.isArray(reply) && reply.length === 1 && reply[0] === 1) return { outcome: "granted" };
    if (Array.isArray(reply) && reply.length === 4 && isInteger(reply[3]) && reply[3] >= 0) {
      const vote = SEMAPHORE_ACQUIRE.vote(reply.slice(0, 3));
      return vote.outcome === "denied" ? { ...vote, position: reply[3] } : unexpected(reply);
    }
    if (Array.isArray(reply) && reply.length === 5 && reply[3] === -1 && isInteger(reply[4]) && reply[4] > 0) {
      const vote = SEMAPHORE_ACQUIRE.vote(reply.slice(0, 3));
      return vote.outcome === "denied" ? { ...vote, nodeTime: reply[4] } : unexpected(reply);
    }
    return unexpected(reply);
  },
});
