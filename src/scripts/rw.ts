// The read-write lock: per resource a writer key, a reader set and a wait queue shared by readers and writers.
import { GREATER } from "./decimal.ts";
import { READERS, READERS_CLOCK_MEMBER } from "./readers.ts";
import { fairRefusal, grantOrRefuse, grantWithFence, isInteger, unexpected } from "./replies.ts";
import { LINE } from "./queue.ts";
import { KEY_LOCKING, defineScript, type Script } from "./script.ts";
import type { Vote } from "./vote.ts";

/**
 * Lua: `writers_ahead(q, member)`: live waiters of line q ahead of `member` that wait to write (ending in "w"), and
 * how many wait. `rw_wake(q, readers)`: wakes the line; while `readers` hold, only a run of readers at its head may
 * claim (a writer at the head waits for them).
 */
const RW_LINE = `local function writers_ahead(q, member)
  local m = line_sorted(q)
  local ahead = 0
  for _, w in ipairs(m) do
    if w < member and string.sub(w, -1) == "w" then ahead = ahead + 1 end
  end
  return ahead, #m
end
local function rw_wake(q, readers)
  if not readers then return wake(q, nil) end
  local c = 0
  for _, w in ipairs(line_sorted(q)) do
    if string.sub(w, -1) == "r" then c = c + 1 else break end
  end
  wake(q, c)
end
`;

const isRefusal = (reply: unknown) => Array.isArray(reply) && reply[0] === 0;

/**
 * A reader's acquire. KEYS[1] the writer key, KEYS[2] the reader set, KEYS[3] the line; ARGV[1] value,
 * ARGV[2] ttl ms, ARGV[3] the waiter's member of the line (its ticket and `r`), ARGV[4] how long its entry lives
 * (ms), ARGV[5] "1" to join the line when refused, ARGV[6] the ticket's age (ms). Grants where no writer key is set
 * **and** no live writer waits ahead in the line (readers ahead do not stop a reader): adds the value to the reader
 * set until ttl from now, and leaves the line. Otherwise refuses `{0, pttl, ahead}` (the writer key's PTTL, -2 when
 * only the line stood in the way; the writers ahead) and, when asked to, joins the line. A ticket out of step with
 * the node's clock is refused as the mutex's is (`{0, pttl, -1, now}`).
 * @example
 * ```ts
 * import { scriptSha } from "edge-redlock/scripts";
 *
 * const sha = await scriptSha(RW_READ_ACQUIRE.lua);
 * const ticket = "00017324064000009f86d081884c7d65"; // a waiter's: 16 digits of epoch ms, 16 random hex digits
 * const keys = ["edge-redlock:rw:writer:doc", "edge-redlock:rw:readers:doc", "edge-redlock:rw:queue:doc"];
 * await redis.evalsha(sha, keys, [value, "10000", `${ticket}r`, "300", "1"]); // [1]
 * ```
 */
export const RW_READ_ACQUIRE: Script = /* @__PURE__ */ defineScript({
  name: "rw-read-acquire",
  lua: () => `${KEY_LOCKING}${LINE}${READERS}${RW_LINE}local member, age = ARGV[3], tonumber(ARGV[6]) or 0
assert(member, "a line member is missing")
local q = KEYS[3]
local wait = redis.call("PTTL", KEYS[1])
local ahead, waiting = writers_ahead(q, member)
if (waiting > 0 or (wait ~= -2 and ARGV[5] == "1")) and not in_step(q, member, age) then
  return {0, wait, -1, node_now()}
end
if wait ~= -2 or ahead > 0 then
  if ARGV[5] == "1" then enqueue(q, member, tonumber(ARGV[4])) end
  if wait == -2 then
    local now = readers_now(KEYS[2])
    rw_wake(q, now and readers_live(KEYS[2], now) > 0)
  end
  return {0, wait, ahead}
end
line_leave(q, member)
readers_add(KEYS[2], ARGV[1], tonumber(ARGV[2]))
if waiting > 0 then rw_wake(q, true) end
return {1}`,
  vote: (reply) => (isRefusal(reply) ? fairRefusal(reply) : grantOrRefuse(reply)),
});

/**
 * A writer's acquire. KEYS[1] the writer key, KEYS[2] the reader set, KEYS[3] the line, optionally
 * KEYS[4] the fence counter; ARGV as {@link RW_READ_ACQUIRE} (the member ends in `w`). Grants where no writer key
 * is set, no reader is live in the set **and** no live waiter (reader or writer) is ahead in the line: sets the
 * writer key (`PX ttl`), leaves the line, and with a counter advances it as the fenced acquire does. Otherwise
 * refuses `{0, pttl, ahead}`: the longest time the writer key or a reader has left (-2 when only the line stood
 * in the way: the first in line is then woken), the waiters ahead; a ticket out of step as the reader's.
 * @example
 * ```ts
 * import { scriptSha } from "edge-redlock/scripts";
 *
 * const sha = await scriptSha(RW_WRITE_ACQUIRE.lua);
 * const ticket = "00017324064000009f86d081884c7d65"; // a waiter's: 16 digits of epoch ms, 16 random hex digits
 * const keys = ["edge-redlock:rw:writer:doc", "edge-redlock:rw:readers:doc", "edge-redlock:rw:queue:doc"];
 * await redis.evalsha(sha, keys, [value, "10000", `${ticket}w`, "300", "1"]); // [0, 8200, 0]: readers hold it
 * ```
 */
export const RW_WRITE_ACQUIRE: Script = /* @__PURE__ */ defineScript({
  name: "rw-write-acquire",
  lua: () => `${KEY_LOCKING}${GREATER}${LINE}${READERS}${RW_LINE}local member, age = ARGV[3], tonumber(ARGV[6]) or 0
assert(member, "a line member is missing")
local q = KEYS[3]
local wait = redis.call("PTTL", KEYS[1])
local held = wait ~= -2
local now = readers_now(KEYS[2])
if now then
  local count, longest = readers_live(KEYS[2], now)
  if count > 0 then
    if not held then wait = longest elseif wait ~= -1 and longest > wait then wait = longest end
    held = true
  end
end
local ahead, waiting = waiters_ahead(q, member)
if (waiting > 0 or (held and ARGV[5] == "1")) and not in_step(q, member, age) then
  return {0, wait, -1, node_now()}
end
if held or ahead > 0 then
  if ARGV[5] == "1" then enqueue(q, member, tonumber(ARGV[4])) end
  if not held then rw_wake(q, false) end
  return {0, wait, ahead}
end
line_leave(q, member)
redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
if waiting > 0 then wake(q, 0, ARGV[2]) end
if KEYS[4] then
  local t = redis.call("TIME")
  local clock = t[1] .. string.format("%06d", tonumber(t[2]))
  redis.call("INCR", KEYS[4])
  local f = redis.call("GET", KEYS[4])
  if greater(clock, f) then
    redis.call("SET", KEYS[4], clock)
    f = clock
  end
  return {1, f}
end
return {1}`,
  vote: (reply) => (isRefusal(reply) ? fairRefusal(reply) : grantOrRefuse(reply)),
});

/**
 * {@link RW_WRITE_ACQUIRE} with the fence counter in KEYS: only a grant that carries the counter counts.
 * @example
 * ```ts
 * FENCED_RW_WRITE_ACQUIRE.vote([1, "1732406400000001"]); // { outcome: "granted", fence: "1732406400000001" }
 * ```
 */
export const FENCED_RW_WRITE_ACQUIRE: Script = /* @__PURE__ */ defineScript({
  name: "rw-write-acquire",
  lua: () => RW_WRITE_ACQUIRE.lua,
  vote: (reply) => (isRefusal(reply) ? fairRefusal(reply) : grantWithFence(reply)),
});

/**
 * A reader's extension. KEYS[1] the reader set; ARGV[1] value, ARGV[2] ttl ms. Where the value is a live reader,
 * moves its expiry to `max(its expiry, now + ttl)` (and the set's life with it) and grants; otherwise refuses
 * `{0, -2}`. It never shortens a reader and never adds one: a late extension, or one that lands after the
 * release, can neither cut a reported validity short nor bring a released reader back (docs/SAFETY.md).
 * @example
 * ```ts
 * import { scriptSha } from "edge-redlock/scripts";
 *
 * const sha = await scriptSha(RW_READ_EXTEND.lua);
 * await redis.evalsha(sha, ["edge-redlock:rw:readers:doc"], [value, "10000"]); // [1]
 * ```
 */
export const RW_READ_EXTEND: Script = /* @__PURE__ */ defineScript({
  name: "rw-read-extend",
  lua: () => `${KEY_LOCKING}${READERS}local now = readers_now(KEYS[1])
if not now or ARGV[1] == CLOCK then return {0, -2} end
local expiry = tonumber(redis.call("ZSCORE", KEYS[1], ARGV[1]) or "-1")
if expiry <= now then return {0, -2} end
local later = now + tonumber(ARGV[2])
if later > expiry then
  readers_keep(KEYS[1], now, later)
  redis.call("ZADD", KEYS[1], later, ARGV[1])
end
return {1}`,
  vote: grantOrRefuse,
});

/**
 * A reader's release. KEYS[1] the reader set, optionally KEYS[2] the line and KEYS[3] the writer key; ARGV[1] value,
 * ARGV[2] the line member, optionally ARGV[3] how long its entry lives (ms). Takes the value out of the reader set
 * (the set too, once no reader is left) and the member out of the line, or with ARGV[3] puts it back in the line
 * with that deadline (the undoing of a waiting reader's failed attempt, as `REQUEUE` is a mutex's); with the writer
 * key given, the last reader out wakes the line when no writer holds. Answers 1 when a live reader was taken out,
 * else 0. A waiter that stops waiting sends it with a value that is never a lock value.
 * @example
 * ```ts
 * import { scriptSha } from "edge-redlock/scripts";
 *
 * const sha = await scriptSha(RW_READ_RELEASE.lua);
 * const ticket = "00017324064000009f86d081884c7d65"; // a waiter's: 16 digits of epoch ms, 16 random hex digits
 * const member = `${ticket}r`; // its place in the line, as a reader
 * await redis.evalsha(sha, ["edge-redlock:rw:readers:doc", "edge-redlock:rw:queue:doc"], [value, member]); // 1
 * ```
 */
export const RW_READ_RELEASE: Script = /* @__PURE__ */ defineScript({
  name: "rw-read-release",
  lua: () => `${KEY_LOCKING}${LINE}${READERS}${RW_LINE}local released = 0
local now = readers_now(KEYS[1])
if now and ARGV[1] ~= CLOCK then
  local expiry = redis.call("ZSCORE", KEYS[1], ARGV[1])
  if expiry then
    redis.call("ZREM", KEYS[1], ARGV[1])
    if tonumber(expiry) > now then released = 1 end
    if redis.call("ZCARD", KEYS[1]) <= 1 then redis.call("DEL", KEYS[1]) end
  end
end
if KEYS[2] then
  if ARGV[3] then enqueue(KEYS[2], ARGV[2], tonumber(ARGV[3])) else line_leave(KEYS[2], ARGV[2]) end
  if KEYS[3] and redis.call("EXISTS", KEYS[3]) == 0 then
    now = readers_now(KEYS[1])
    if not now or readers_live(KEYS[1], now) == 0 then rw_wake(KEYS[2], false) end
  end
end
return released`,
  vote(reply): Vote {
    if (reply !== 0 && reply !== 1) return unexpected(reply);
    return reply === 1 ? { outcome: "granted" } : { outcome: "denied" };
  },
});

/**
 * Read-only (`no-writes`): KEYS[1] the writer key, KEYS[2] the reader set. Answers `{writer, pttl, readers}`:
 * the writer's value and PTTL (0 and -2 when none), and each live reader's value and time left, flattened.
 * Never a vote: what a read-write lock's inspect reads.
 * @example
 * ```ts
 * import { scriptSha } from "edge-redlock/scripts";
 *
 * const sha = await scriptSha(RW_INSPECT.lua);
 * const keys = ["edge-redlock:rw:writer:doc", "edge-redlock:rw:readers:doc"];
 * await redis.evalsha(sha, keys, []); // [0, -2, ["9f86d0…", 8200, "3a1c…", 4100]]
 * ```
 */
export const RW_INSPECT: Script = /* @__PURE__ */ defineScript({
  name: "rw-inspect",
  lua: () => `#!lua flags=no-writes,allow-key-locking
local out = {0, -2, {}}
local writer = redis.call("GET", KEYS[1])
if writer then
  out[1] = writer
  out[2] = redis.call("PTTL", KEYS[1])
end
local left = redis.call("PTTL", KEYS[2])
local epoch = left > 0 and redis.call("ZSCORE", KEYS[2], "${READERS_CLOCK_MEMBER}")
if epoch then
  local now = tonumber(epoch) - left
  local all = redis.call("ZRANGEBYSCORE", KEYS[2], "(" .. now, "+inf", "WITHSCORES")
  for j = 1, #all, 2 do
    if all[j] ~= "${READERS_CLOCK_MEMBER}" then
      out[3][#out[3] + 1] = all[j]
      out[3][#out[3] + 1] = tonumber(all[j + 1]) - now
    end
  end
end
return out`,
  vote(reply) {
    return Array.isArray(reply) ? { outcome: "granted" } : unexpected(reply);
  },
});

/**
 * Whether a reply of {@link RW_INSPECT} has its shape: `[writer | 0, pttl, [value, ms, …]]`.
 * @example
 * ```ts
 * isRwReading([0, -2, []]); // true
 * ```
 */
export function isRwReading(reply: unknown): reply is [string | 0, number, (string | number)[]] {
  if (!Array.isArray(reply) || reply.length !== 3) return false;
  const [writer, pttl, readers] = reply;
  if (writer !== 0 && typeof writer !== "string") return false;
  if (!isInteger(pttl) || pttl < -2 || !Array.isArray(readers) || readers.length % 2 !== 0) return false;
  return readers.every((entry, i) => (i % 2 === 0 ? typeof entry === "string" : isInteger(entry) && entry > 0));
}
