// Fencing: the write-back of a token to a quorum, and the resource-side guarded write and read.
import { GREATER } from "./decimal.ts";
import { grantOrRefuse, unexpected } from "./replies.ts";
import { KEY_LOCKING, type Script } from "./script.ts";

/**
 * KEYS[1..n] resources, KEYS[n+1..2n] their fence counters; ARGV[1] value, ARGV[2] fencing token.
 * The write-back round: where the caller still holds every resource, raises each counter to at
 * least the token; elsewhere refuses.
 */
export const FENCE: Script = {
  name: "fence",
  lua: `${KEY_LOCKING}${GREATER}local n = #KEYS / 2
for i = 1, n do
  if redis.call("GET", KEYS[i]) ~= ARGV[1] then return {0, redis.call("PTTL", KEYS[i])} end
end
for i = 1, n do
  local f = redis.call("GET", KEYS[n + i])
  if not f or greater(ARGV[2], f) then redis.call("SET", KEYS[n + i], ARGV[2]) end
end
return {1}`,
  vote: grantOrRefuse,
};

/**
 * KEYS[1] a resource's data key, KEYS[2] the highest token it has accepted; ARGV[1] token, ARGV[2]
 * value. Writes the value only if the token is at least the highest accepted, and records it.
 * Answers 1 (written) or 0 (stale token).
 */
export const FENCED_WRITE: Script = {
  name: "fenced-write",
  lua: `${KEY_LOCKING}${GREATER}local seen = redis.call("GET", KEYS[2])
if seen and greater(seen, ARGV[1]) then return 0 end
redis.call("SET", KEYS[2], ARGV[1])
redis.call("SET", KEYS[1], ARGV[2])
return 1`,
  vote(reply) {
    if (reply === 1) return { outcome: "granted" };
    if (reply === 0) return { outcome: "denied" };
    return unexpected(reply);
  },
};

/**
 * KEYS[1] a resource's data key, KEYS[2] the highest token it has accepted; ARGV[1] token.
 * Reads the value only if the token is at least the highest accepted, and records it (so an older
 * holder's later write is refused). Answers {1, value-or-nil} or {0}.
 */
export const FENCED_READ: Script = {
  name: "fenced-read",
  lua: `${KEY_LOCKING}${GREATER}local seen = redis.call("GET", KEYS[2])
if seen and greater(seen, ARGV[1]) then return {0} end
redis.call("SET", KEYS[2], ARGV[1])
return {1, redis.call("GET", KEYS[1])}`,
  vote(reply) {
    if (Array.isArray(reply) && reply.length === 1 && reply[0] === 0) return { outcome: "denied" };
    if (Array.isArray(reply) && reply[0] === 1 && (reply.length === 1 || reply.length === 2))
      return { outcome: "granted" };
    return unexpected(reply);
  },
};
