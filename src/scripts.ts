// The Lua scripts and what each of their replies means. Keys always travel in KEYS.
import { toHex } from "./token.ts";
import type { Vote } from "./vote.ts";

/**
 * A Lua script run with EVALSHA (EVAL on a node that does not have it yet), plus the rule that
 * turns its reply into a vote. Anything but the exact success or refusal shape is an error. Every
 * script starts with {@link KEY_LOCKING}, and every key it touches travels in KEYS.
 * @example
 * const vote = ACQUIRE.vote([1]); // { outcome: "granted" }
 */
export interface Script {
  readonly name: "acquire" | "release" | "extend" | "fence" | "fenced-write" | "fenced-read" | "semaphore-acquire" | "inspect";
  readonly lua: string;
  vote(reply: unknown): Vote;
}

/**
 * The shebang that lets Upstash lock only the keys in KEYS while the script runs, instead of the whole
 * database (Upstash docs: "Key-Based Locking"). Plain Redis 7 rejects the flag; see {@link withoutKeyLocking}.
 */
export const KEY_LOCKING = "#!lua flags=allow-key-locking\n";

const KEY_LOCKING_FLAG = "allow-key-locking";
const SHEBANG = /^#!lua(?:[ \t]+flags=([^\n]*))?\n/;

/**
 * The script without the key-locking flag, for a node that rejects it (plain Redis 7 behind a REST
 * proxy): other flags stay; the shebang line goes when that flag was its only one.
 * @example
 * withoutKeyLocking(ACQUIRE.lua).startsWith("#!lua"); // false
 */
export function withoutKeyLocking(lua: string): string {
  let plain = withoutFlag.get(lua);
  if (plain === undefined) withoutFlag.set(lua, (plain = stripKeyLocking(lua)));
  return plain;
}

/** The flagless source of each script, computed once (a node that rejects the flag asks for it every request). */
const withoutFlag = new Map<string, string>();

function stripKeyLocking(lua: string): string {
  const match = SHEBANG.exec(lua);
  if (!match?.[1]) return lua;
  const flags = match[1].split(",").map((flag) => flag.trim());
  if (!flags.includes(KEY_LOCKING_FLAG)) return lua;
  const rest = flags.filter((flag) => flag !== KEY_LOCKING_FLAG && flag !== "");
  const body = lua.slice(match[0].length);
  return rest.length === 0 ? body : `#!lua flags=${rest.join(",")}\n${body}`;
}

/**
 * Whether a node's error text (the database's words, without the command `@upstash/redis` appends) says
 * it does not accept the key-locking flag (Redis 7: `ERR Unexpected flag in script shebang: allow-key-locking`).
 * @example
 * if (rejectsKeyLocking(errorText(error))) useScriptsWithoutTheFlag();
 */
export function rejectsKeyLocking(text: string): boolean {
  return /^ERR Unexpected flag in script shebang: /i.test(text) && text.includes(KEY_LOCKING_FLAG);
}

/** Lua: is decimal string a greater than decimal string b (both canonical, no leading zeros)? */
const GREATER = `local function greater(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end
`;

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
    if (Array.isArray(reply) && reply.length === 3 && reply[0] === 0 && isInteger(reply[1]) && reply[1] >= -1 && Array.isArray(reply[2]) && reply[2].every((slot) => isInteger(slot) && slot >= 0)) {
      return { outcome: "denied", pttl: reply[1], free: reply[2] as number[] };
    }
    return unexpected(reply);
  },
};

/**
 * Read-only (`no-writes`): for each key, `{value, pttl}` where it is set, else 0. Never a vote: what
 * {@link Redlock.inspect} and a semaphore's inspect read.
 */
export const INSPECT: Script = {
  name: "inspect",
  lua: `#!lua flags=no-writes,allow-key-locking
local out = {}
for i = 1, #KEYS do
  local value = redis.call("GET", KEYS[i])
  if value then out[i] = {value, redis.call("PTTL", KEYS[i])} else out[i] = 0 end
end
return out`,
  vote(reply) {
    return Array.isArray(reply) ? { outcome: "granted" } : unexpected(reply);
  },
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
    if (Array.isArray(reply) && reply[0] === 1 && (reply.length === 1 || reply.length === 2)) return { outcome: "granted" };
    return unexpected(reply);
  },
};

/** `{1}` grants; `{0, pttl}` refuses; nothing else counts. */
function grantOrRefuse(reply: unknown): Vote {
  if (Array.isArray(reply) && reply.length === 1 && reply[0] === 1) return { outcome: "granted" };
  return refusal(reply);
}

/** `{1, fence}` grants (fence: a canonical decimal, or a safe integer); `{0, pttl}` refuses; nothing else counts. */
function grantWithFence(reply: unknown): Vote {
  if (Array.isArray(reply) && reply.length === 2 && reply[0] === 1) {
    const fence = typeof reply[1] === "number" && Number.isSafeInteger(reply[1]) ? String(reply[1]) : reply[1];
    if (typeof fence === "string" && DECIMAL.test(fence)) return { outcome: "granted", fence };
  }
  return refusal(reply);
}

function refusal(reply: unknown): Vote {
  if (Array.isArray(reply) && reply.length === 2 && reply[0] === 0 && isInteger(reply[1]) && reply[1] >= -2) return { outcome: "denied", pttl: reply[1] };
  return unexpected(reply);
}

/** A canonical non-negative decimal integer. */
export const DECIMAL = /^(0|[1-9][0-9]*)$/;

function isInteger(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value);
}

function unexpected(reply: unknown): Vote {
  const shape = Array.isArray(reply) ? `array(${reply.length})` : reply === null ? "null" : typeof reply;
  return { outcome: "error", cause: `unexpected reply (${shape})` };
}

const shas = new Map<string, Promise<string>>();

/**
 * The SHA-1 of a script's source, as EVALSHA wants it, from Web Crypto (computed once per source).
 * @example
 * await redis.evalsha(await scriptSha(ACQUIRE.lua), keys, args);
 */
export function scriptSha(lua: string): Promise<string> {
  let sha = shas.get(lua);
  if (!sha) {
    sha = crypto.subtle.digest("SHA-1", new TextEncoder().encode(lua)).then((digest) => toHex(new Uint8Array(digest)));
    shas.set(lua, sha);
  }
  return sha;
}
