// The line's Lua, shared by the fair scripts: one sorted set per resource of waiters scored by their own
// deadlines on the node's clock (TIME), tickets checked against that clock, and the wakeup that says who is first.

/** How far a new ticket's time may be from the node's clock (ms): a wrong clock buys at most this much priority. */
export const CLOCK_STEP_MS = 1_000;

/** How long a line key outlives the last deadline of its waiters (ms). */
export const LINE_LINGER_MS = 5_000;

/** The Pub/Sub channel prefix of wakeups: the channel is this plus 20 hex digits of SHA-1 of the line's key. */
export const WAKE_PREFIX = "edge-redlock:wake:";

/** At most this many tickets in one wakeup. */
const SHOWN = 8;

/**
 * Lua: the node's time (`NOW`, ms) and the line's functions.
 * - `line_sorted(q)`: the live waiters of line `q`, smallest ticket first (expired ones are dropped).
 * - `waiters_ahead(q, ticket)`: how many live waiters are ahead of `ticket`, and how many wait.
 * - `in_step(q, ticket, age)`: whether `ticket` may be ordered here: it is in line already, or its time plus
 *   its age (ms since the waiter took it) is within {@link CLOCK_STEP_MS} of `NOW`.
 * - `enqueue(q, ticket, life)`: joins or refreshes with a deadline `life` ms from now; `line_leave(q, ticket)` takes
 *   it out. Whatever adds, removes, drops or shrinks an entry keeps the key {@link LINE_LINGER_MS} past its last
 *   deadline (`line_keep`).
 * - `wake(q, claimers, hold)`: when someone waits, publishes `"<claimers> <ticket> …"` on the line's channel: the
 *   first `claimers` (0: the resource is held; nil: free, the head or its run of readers) must claim within their
 *   window (the 5 digits after the ticket's 32), so their deadlines shrink to it; the one listed after them learns it
 *   is next. A grant that holds the resource for `hold` ms at most (its ttl) adds `+<hold>`: until then only a
 *   release, which publishes, can free it.
 */
export const LINE = `local NOW = (function()
  local t = redis.call("TIME")
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end)()
local function line_keep(q)
  local last = redis.call("ZRANGE", q, -1, -1, "WITHSCORES")
  if #last == 2 then redis.call("PEXPIRE", q, math.max(1, tonumber(last[2]) - NOW + ${LINE_LINGER_MS})) end
end
local function line_sorted(q)
  if redis.call("ZREMRANGEBYSCORE", q, "-inf", NOW) > 0 then line_keep(q) end
  local m = redis.call("ZRANGE", q, 0, -1)
  table.sort(m)
  return m
end
local function line_leave(q, ticket)
  if redis.call("ZREM", q, ticket) > 0 then line_keep(q) end
end
local function waiters_ahead(q, ticket)
  local m = line_sorted(q)
  local ahead = 0
  for _, w in ipairs(m) do
    if w < ticket then ahead = ahead + 1 end
  end
  return ahead, #m
end
local function in_step(q, ticket, age)
  if redis.call("ZSCORE", q, ticket) then return true end
  local t = tonumber(string.sub(ticket, 1, 16))
  return t ~= nil and math.abs(t + age - NOW) <= ${CLOCK_STEP_MS}
end
local function enqueue(q, ticket, life)
  redis.call("ZADD", q, NOW + life, ticket)
  line_keep(q)
end
local function wake(q, claimers, hold)
  local m = line_sorted(q)
  if #m == 0 then return end
  if claimers == nil then
    claimers = 0
    for _, w in ipairs(m) do
      if string.sub(w, -1) == "r" then claimers = claimers + 1 else break end
    end
    if claimers == 0 then claimers = 1 end
  end
  if claimers > ${SHOWN - 1} then claimers = ${SHOWN - 1} end
  if claimers > #m then claimers = #m end
  local shown = {}
  for i = 1, math.min(#m, claimers + 1) do
    shown[i] = m[i]
    if i <= claimers then
      local by = NOW + (tonumber(string.sub(m[i], 33, 37)) or 0)
      if tonumber(redis.call("ZSCORE", q, m[i])) > by then redis.call("ZADD", q, by, m[i]) end
    end
  end
  if claimers > 0 then line_keep(q) end
  local channel = "${WAKE_PREFIX}" .. string.sub(redis.sha1hex(q), 1, 20)
  local payload = claimers .. " " .. table.concat(shown, " ")
  if claimers == 0 and hold then payload = payload .. " +" .. hold end
  redis.call("PUBLISH", channel, payload)
end
`;
