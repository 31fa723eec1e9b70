// The Lua scripts and what each of their replies means. Keys always travel in KEYS.
import { toHex } from "./token.ts";
import type { Vote } from "./vote.ts";

/**
 * A Lua script run with EVALSHA (EVAL on a node that does not have it yet), plus the rule that
 * turns its reply into a vote. Anything but the exact success or refusal shape is an error.
 * @example
 * const vote = ACQUIRE.vote([1]); // { outcome: "granted" }
 */
export interface Script {
  readonly name: "acquire" | "release" | "extend";
  readonly lua: string;
  vote(reply: unknown): Vote;
}

/** ARGV[1] value, ARGV[2] ttl ms. Grants all KEYS or none; refuses with the longest PTTL (-1: no expiry). */
export const ACQUIRE: Script = {
  name: "acquire",
  lua: `local held, wait = false, 0
for i = 1, #KEYS do
  local pttl = redis.call("PTTL", KEYS[i])
  if pttl ~= -2 then
    held = true
    if pttl == -1 or wait == -1 then wait = -1 elseif pttl > wait then wait = pttl end
  end
end
if held then return {0, wait} end
for i = 1, #KEYS do redis.call("SET", KEYS[i], ARGV[1], "PX", ARGV[2]) end
return {1}`,
  vote: grantOrRefuse,
};

/** ARGV[1] value. Deletes each key that still holds the value; returns how many. */
export const RELEASE: Script = {
  name: "release",
  lua: `local released = 0
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
 * ARGV[1] value, ARGV[2] ttl ms. Refuses if another value holds any key; otherwise sets every key
 * to the value with the new ttl — re-seeding a node that lost the key, e.g. after a restart.
 */
export const EXTEND: Script = {
  name: "extend",
  lua: `for i = 1, #KEYS do
  local current = redis.call("GET", KEYS[i])
  if current and current ~= ARGV[1] then return {0, redis.call("PTTL", KEYS[i])} end
end
for i = 1, #KEYS do redis.call("SET", KEYS[i], ARGV[1], "PX", ARGV[2]) end
return {1}`,
  vote: grantOrRefuse,
};

/** `{1}` grants; `{0, pttl}` refuses; nothing else counts. */
function grantOrRefuse(reply: unknown): Vote {
  if (!Array.isArray(reply)) return unexpected(reply);
  if (reply.length === 1 && reply[0] === 1) return { outcome: "granted" };
  if (reply.length === 2 && reply[0] === 0 && isInteger(reply[1]) && reply[1] >= -1) return { outcome: "denied", pttl: reply[1] };
  return unexpected(reply);
}

function isInteger(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value);
}

function unexpected(reply: unknown): Vote {
  const shape = Array.isArray(reply) ? `array(${reply.length})` : reply === null ? "null" : typeof reply;
  return { outcome: "error", cause: `unexpected reply (${shape})` };
}

const shas = new Map<Script, Promise<string>>();

/**
 * The SHA-1 of a script's source, as EVALSHA wants it, from Web Crypto (computed once).
 * @example
 * await redis.evalsha(await scriptSha(ACQUIRE), keys, args);
 */
export function scriptSha(script: Script): Promise<string> {
  let sha = shas.get(script);
  if (!sha) {
    sha = crypto.subtle.digest("SHA-1", new TextEncoder().encode(script.lua)).then((digest) => toHex(new Uint8Array(digest)));
    shas.set(script, sha);
  }
  return sha;
}
