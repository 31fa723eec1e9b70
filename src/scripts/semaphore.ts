// The semaphore: take one slot of `limit`, or say which slots look free here.
import { isInteger, unexpected } from "./replies.ts";
import { KEY_LOCKING, type Script } from "./script.ts";

/**
 * KEYS[1..limit] a semaphore's slots; ARGV[1] value, ARGV[2] ttl ms, ARGV[3] the slot to take (1-based).
 * Takes that slot where it is free (`{1}`); otherwise refuses with the soonest expiry among the held
 * slots and the slots free on this node, 0-based (`{0, pttl, {free…}}`), so the next attempt can pick
 * a slot free on a quorum. Every slot is a Redlock mutex of its own (docs/SAFETY.md, "Semaphores").
 */
export const SEMAPHORE_ACQUIRE: Script = {
  name: "semaphore-acquire",
  lua: `${KEY_LOCKING}local slot = tonumber(ARGV[3])
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
};
