// The reader set's Lua, shared by the read-write scripts: a sorted set of readers scored by each one's expiry on
// the set's own clock, which is the set key's PTTL (no TIME, as for the wait queues).

/**
 * The member of a reader set that keeps its clock: its score E is such that the set's clock is
 * `E − PTTL(set)`. Lock values are hex, so no reader is ever called this.
 * @example
 * ```ts
 * const epoch = Number(await redis.zscore("edge-redlock:rw:readers:doc", READERS_CLOCK_MEMBER));
 * const now = epoch - (await redis.pttl("edge-redlock:rw:readers:doc"));
 * ```
 */
export const READERS_CLOCK_MEMBER = "~clock";

/**
 * Lua for one reader set:
 * - `readers_now(r)`: the set's clock, or false when there is no set (a set without an expiry or without its
 *   clock member is not ours: it is dropped);
 * - `readers_live(r, now)`: drops the readers whose expiry passed (the set too, once empty) and answers how
 *   many are left and the longest time one of them has left (ms);
 * - `readers_keep(r, now, later)`: makes the set key live at least until `later` on its clock, moving the clock
 *   member by as much as the PTTL, so the clock runs on unchanged and the key never expires under a reader;
 * - `readers_add(r, value, ttl)`: adds a reader until `now + ttl`, making the set if needed.
 */
export const READERS = `local CLOCK = "${READERS_CLOCK_MEMBER}"
local function readers_now(r)
  local left = redis.call("PTTL", r)
  if left == -2 then return false end
  local epoch = redis.call("ZSCORE", r, CLOCK)
  if left == -1 or not epoch then
    redis.call("DEL", r)
    return false
  end
  return tonumber(epoch) - left
end
local function readers_live(r, now)
  redis.call("ZREMRANGEBYSCORE", r, "-inf", now)
  local count, longest = 0, 0
  local all = redis.call("ZRANGE", r, 0, -1, "WITHSCORES")
  for j = 1, #all, 2 do
    if all[j] ~= CLOCK then
      count = count + 1
      local left = tonumber(all[j + 1]) - now
      if left > longest then longest = left end
    end
  end
  if count == 0 then redis.call("DEL", r) end
  return count, longest
end
local function readers_keep(r, now, later)
  if tonumber(redis.call("ZSCORE", r, CLOCK)) < later then
    redis.call("PEXPIRE", r, later - now)
    redis.call("ZADD", r, later, CLOCK)
  end
end
local function readers_add(r, value, ttl)
  local now = readers_now(r)
  if not now then
    now = 0
    redis.call("ZADD", r, ttl, CLOCK)
    redis.call("PEXPIRE", r, ttl)
  end
  readers_keep(r, now, now + ttl)
  redis.call("ZADD", r, now + ttl, value)
end
`;
