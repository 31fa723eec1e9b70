// The wait queue's Lua, shared by the fair scripts: a clock from the queue key's own PTTL, and expiry of
// waiters whose lease ran out. No TIME: the queue key's remaining life is the clock.

/**
 * How long a queue key lives before its clock is rebased (ms). A queue's clock is
 * `QUEUE_EPOCH_MS − PTTL(queue)`: it starts at 0 when the key is made and runs with the node's own clock.
 * @example
 * ```ts
 * const now = QUEUE_EPOCH_MS - (await redis.pttl("edge-redlock:queue:orders:42"));
 * ```
 */
export const QUEUE_EPOCH_MS = 3_600_000;

/**
 * Lua: `queue_now(q)` — the queue's clock, or false when the queue does not exist (a key with no expiry
 * under the library's prefix is not ours: it is dropped). Rebases the waiters' deadlines once half the
 * epoch is gone, so a busy queue never expires under its waiters.
 */
export const QUEUE_CLOCK = `local EPOCH = ${QUEUE_EPOCH_MS}
local function queue_now(q)
  local left = redis.call("PTTL", q)
  if left == -2 then return false end
  if left == -1 then redis.call("DEL", q) return false end
  local now = EPOCH - left
  if now > EPOCH / 2 then
    local all = redis.call("ZRANGE", q, 0, -1, "WITHSCORES")
    for j = 1, #all, 2 do redis.call("ZADD", q, tonumber(all[j + 1]) - now, all[j]) end
    redis.call("PEXPIRE", q, EPOCH)
    now = 0
  end
  return now
end
local function waiters_ahead(q, ticket)
  local now = queue_now(q)
  if not now then return 0 end
  redis.call("ZREMRANGEBYSCORE", q, "-inf", now)
  local ahead = 0
  for _, waiter in ipairs(redis.call("ZRANGE", q, 0, -1)) do
    if waiter < ticket then ahead = ahead + 1 end
  end
  return ahead
end
local function enqueue(q, ticket, lease)
  local now = queue_now(q)
  if not now then
    now = 0
    redis.call("ZADD", q, lease, ticket)
    redis.call("PEXPIRE", q, EPOCH)
  else
    redis.call("ZADD", q, now + lease, ticket)
  end
end
`;
