// The read-write lock: per resource a writer key, a reader set and a wait queue shared by readers and writers.
import { GREATER } from "./decimal.ts";
import { READERS, READERS_CLOCK_MEMBER } from "./readers.ts";
import { fairRefusal, grantOrRefuse, grantWithFence, isInteger, unexpected } from "./replies.ts";
import { QUEUE_CLOCK } from "./queue.ts";
import { KEY_LOCKING, defineScript, type Script } from "./script.ts";
import type { Vote } from "./vote.ts";

/** Lua: `writers_ahead(q, member)`: live waiters of queue q ahead of `member` that wait to write (ending in "w"). */
const WRITERS_AHEAD = `local function writers_ahead(q, member)
  local now = queue_now(q)
  if not now then return 0 end
  redis.call("ZREMRANGEBYSCORE", q, "-inf", now)
  local ahead = 0
  for _, waiter in ipairs(redis.call("ZRANGE", q, 0, -1)) do
    if waiter < member and string.sub(waiter, -1) == "w" then ahead = ahead + 1 end
  end
  return ahead
end
`;

const isRefusal = (reply: unknown) => Array.isArray(reply) && reply[0] === 0;

/**
 * A reader's acquire. KEYS[1] the writer key, KEYS[2] the reader set, KEYS[3] the wait queue; ARGV[1] value,
 * ARGV[2] ttl ms, ARGV[3] the waiter's queue member (its ticket and `r`), ARGV[4] its lease ms, ARGV[5] "1" to
 * join the queue when refused. Grants where no writer key is set **and** no live writer waits ahead in the queue
 * (readers ahead do not stop a reader): adds the value to the reader set until ttl from now, and leaves the
 * queue. Otherwise refuses `{0, pttl, ahead}` (the writer key's PTTL, -2 when only the queue stood in the way;
 * the writers ahead) and, when asked to, joins the queue.
 * @example
 * ```ts
 * const keys = ["edge-redlock:rw:writer:doc", "edge-redlock:rw:readers:doc", "edge-redlock:rw:queue:doc"];
 * await redis.evalsha(sha, keys, [value, "10000", `${ticket}r`, "300", "1"]); // [1]
 * ```
 */
export const RW_READ_ACQUIRE: Script = /* @__PURE__ */ defineScript({
  name: "rw-read-acquire",
  lua: () => `${KEY_LOCKING}${QUEUE_CLOCK}${READERS}${WRITERS_AHEAD}local member = ARGV[3]
local wait = redis.call("PTTL", KEYS[1])
local ahead = writers_ahead(KEYS[3], member)
if wait ~= -2 or ahead > 0 then
  if ARGV[5] == "1" then enqueue(KEYS[3], member, tonumber(ARGV[4])) end
  return {0, wait, ahead}
end
redis.call("ZREM", KEYS[3], member)
readers_add(KEYS[2], ARGV[1], tonumber(ARGV[2]))
return {1}`,
  vote: (reply) => (isRefusal(reply) ? fairRefusal(reply) : grantOrRefuse(reply)),
});

/**
 * A writer's acquire. KEYS[1] the writer key, KEYS[2] the reader set, KEYS[3] the wait queue, optionally
 * KEYS[4] the fence counter; ARGV as {@link RW_READ_ACQUIRE} (the member ends in `w`). Grants where no writer key
 * is set, no reader is live in the set **and** no live waiter (reader or writer) is ahead in the queue: sets the
 * writer key (`PX ttl`), leaves the queue, and with a counter advances it as the fenced acquire does. Otherwise
 * refuses `{0, pttl, ahead}`: the longest time the writer key or a reader has left (-2 when only the queue stood
 * in the way), the waiters ahead.
 * @example
 * ```ts
 * await redis.evalsha(sha, keys, [value, "10000", `${ticket}w`, "300", "1"]); // [0, 8200, 0]: readers hold it
 * ```
 */
export const RW_WRITE_ACQUIRE: Script = /* @__PURE__ */ defineScript({
  name: "rw-write-acquire",
  lua: () => `${KEY_LOCKING}${GREATER}${QUEUE_CLOCK}${READERS}local member = ARGV[3]
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
local ahead = waiters_ahead(KEYS[3], member)
if held or ahead > 0 then
  if ARGV[5] == "1" then enqueue(KEYS[3], member, tonumber(ARGV[4])) end
  return {0, wait, ahead}
end
redis.call("ZREM", KEYS[3], member)
redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
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
 * A reader's release. KEYS[1] the reader set, optionally KEYS[2] the wait queue; ARGV[1] value, ARGV[2] the queue
 * member, optionally ARGV[3] a lease ms. Takes the value out of the reader set (the set too, once no reader is left)
 * and the member out of the queue, or with a lease puts it back in the queue with a deadline of the lease from now
 * (the undoing of a waiting reader's failed attempt, as `REQUEUE` is a mutex's); answers 1 when a live reader
 * was taken out, else 0. A waiter that stops waiting sends it with a value that is never a lock value.
 * @example
 * ```ts
 * await redis.evalsha(sha, ["edge-redlock:rw:readers:doc", "edge-redlock:rw:queue:doc"], [value, member]); // 1
 * ```
 */
export const RW_READ_RELEASE: Script = /* @__PURE__ */ defineScript({
  name: "rw-read-release",
  lua: () => `${KEY_LOCKING}${QUEUE_CLOCK}${READERS}local released = 0
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
  if ARGV[3] then enqueue(KEYS[2], ARGV[2], tonumber(ARGV[3])) else redis.call("ZREM", KEYS[2], ARGV[2]) end
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
