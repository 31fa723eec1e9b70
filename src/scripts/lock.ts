// The mutex: acquire (optionally with fence counters), release and extend.
import { GREATER } from "./decimal.ts";
import { grantOrRefuse, grantWithFence, isInteger, unexpected } from "./replies.ts";
import { KEY_LOCKING, type Script } from "./script.ts";

/**
 * KEYS[1..n] resources (n = ARGV[3], default #KEYS), then optionally their n fence counters;
 * ARGV[1] value, ARGV[2] ttl ms. Grants all resources or none; refuses with the longest PTTL
 * (-1: no expiry). Where it grants and counters are given, it advances each counter to
 * max(counter + 1, the node's clock in µs) — so a node that restarted empty still answers more than
 * it did before — and answers the largest, as an exact decimal string.
 */
export const ACQUIRE: Script = {
  name: "acquire",
  lua: `${KEY_LOCKING}${GREATER}local n = tonumber(ARGV[3]) or #KEYS
local held, wait = false, 0
for i = 1, n do
  local pttl = redis.call("PTTL", KEYS[i])
  if pttl ~= -2 then
    held = true
    if pttl == -1 or wait == -1 then wait = -1 elseif pttl > wait then wait = pttl end
  end
end
if held then return {0, wait} end
local fence, now = false, false
for i = 1, n do
  redis.call("SET", KEYS[i], ARGV[1], "PX", ARGV[2])
  if KEYS[n + i] then
    if not now then
      local t = redis.call("TIME")
      now = t[1] .. string.format("%06d", tonumber(t[2]))
    end
    redis.call("INCR", KEYS[n + i])
    local f = redis.call("GET", KEYS[n + i])
    if greater(now, f) then
      redis.call("SET", KEYS[n + i], now)
      f = now
    end
    if not fence or greater(f, fence) then fence = f end
  end
end
if fence then return {1, fence} end
return {1}`,
  vote: grantOrRefuse,
};

/**
 * {@link ACQUIRE} with fence counters in KEYS: the same script, but only a grant that carries a
 * counter (`{1, "<digits>"}`) counts; a bare `{1}` is an error vote.
 */
export const FENCED_ACQUIRE: Script = { ...ACQUIRE, vote: grantWithFence };

/** ARGV[1] value. Deletes each key that still holds the value; returns how many. */
export const RELEASE: Script = {
  name: "release",
  lua: `${KEY_LOCKING}local released = 0
for i = 1, #KEYS do
  if redis.call("GET", KEYS[i]) == ARGV[1] then
    redis.call("DEL", KEYS[i])
    released = released + 1
  end
end
return released`,
  vote(reply) {
    if (!isInteger(reply) || reply < 0) return unexpected(reply);
    return reply > 0 ? { outcome: "granted" } : { outcome: "denied" };
  },
};

/**
 * ARGV[1] value, ARGV[2] ttl ms. Where every key still holds the value, moves each key's expiry to at
 * least ttl from now and grants; otherwise refuses (PTTL of the first key it does not hold: -2 when gone).
 * It never shortens a key and never creates one: a late extension, or one that lands after the release,
 * can neither cut short a validity reported earlier nor bring a released lock back (docs/SAFETY.md).
 */
export const EXTEND: Script = {
  name: "extend",
  lua: `${KEY_LOCKING}for i = 1, #KEYS do
  if redis.call("GET", KEYS[i]) ~= ARGV[1] then return {0, redis.call("PTTL", KEYS[i])} end
end
local ttl = tonumber(ARGV[2])
for i = 1, #KEYS do
  local pttl = redis.call("PTTL", KEYS[i])
  if pttl >= 0 and pttl < ttl then redis.call("PEXPIRE", KEYS[i], ttl) end
end
return {1}`,
  vote: grantOrRefuse,
};
