// The mutex: acquire (optionally with fence counters), release and extend.
import { GREATER } from "./decimal.ts";
import { LONGEST_PTTL, TAKE } from "./mutex-lua.ts";
import { grantOrRefuse, grantWithFence, isInteger, unexpected } from "./replies.ts";
import { KEY_LOCKING, defineScript, type Script } from "./script.ts";

/**
 * KEYS[1..n] resources (n = ARGV[3], default #KEYS), then optionally their n fence counters;
 * ARGV[1] value, ARGV[2] ttl ms. Grants all resources or none; refuses with the longest PTTL
 * (-1: no expiry). Where it grants and counters are given, it advances each counter to
 * max(counter + 1, the node's clock in µs) — so a node that restarted empty still answers more than
 * it did before — and answers the largest, as an exact decimal string.
 */
export const ACQUIRE: Script = /* @__PURE__ */ defineScript({
  name: "acquire",
  lua: () => `${KEY_LOCKING}${GREATER}${LONGEST_PTTL}${TAKE}local n = tonumber(ARGV[3]) or #KEYS
local held, wait = longest_pttl(n)
if held then return {0, wait} end
local fence = take(n, n)
if fence then return {1, fence} end
return {1}`,
  vote: grantOrRefuse,
});

/**
 * {@link ACQUIRE} with fence counters in KEYS: the same script, but only a grant that carries a
 * counter (`{1, "<digits>"}`) counts; a bare `{1}` is an error vote.
 */
export const FENCED_ACQUIRE: Script = /* @__PURE__ */ defineScript({
  name: "acquire",
  lua: () => ACQUIRE.lua,
  vote: grantWithFence,
});

/** ARGV[1] value. Deletes each key that still holds the value; returns how many. */
export const RELEASE: Script = /* @__PURE__ */ defineScript({
  name: "release",
  lua: () => `${KEY_LOCKING}local released = 0
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
});

/**
 * ARGV[1] value, ARGV[2] ttl ms. Where every key still holds the value, moves each key's expiry to at
 * least ttl from now and grants; otherwise refuses (PTTL of the first key it does not hold: -2 when gone).
 * It never shortens a key and never creates one: a late extension, or one that lands after the release,
 * can neither cut short a validity reported earlier nor bring a released lock back (docs/SAFETY.md).
 */
export const EXTEND: Script = /* @__PURE__ */ defineScript({
  name: "extend",
  lua: () => `${KEY_LOCKING}for i = 1, #KEYS do
  if redis.call("GET", KEYS[i]) ~= ARGV[1] then return {0, redis.call("PTTL", KEYS[i])} end
end
local ttl = tonumber(ARGV[2])
for i = 1, #KEYS do
  local pttl = redis.call("PTTL", KEYS[i])
  if pttl >= 0 and pttl < ttl then redis.call("PEXPIRE", KEYS[i], ttl) end
end
return {1}`,
  vote: grantOrRefuse,
});
