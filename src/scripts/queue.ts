// The line's Lua, shared by the fair scripts: one sorted set per resource of waiters scored by their own
// deadlines on the node's clock (TIME), tickets checked against that clock, and the wakeup that says who is first.

/** How far a new ticket's time may be from the node's clock (ms): a wrong clock buys at most this much priority. */
export const CLOCK_STEP_MS = 1_000;

/** How long a line key outlives the last deadline of its waiters (ms). */
export const LINE_LINGER_MS = 5_000;

/**
 * The key's expiry moves in steps of this many ms: it is {@link LINE_LINGER_MS} past the last deadline rounded up to
 * a step, so most entries that join or leave send no PEXPIREAT.
 */
export const LINE_KEEP_STEP_MS = 1_000;

/**
 * A waiter refused by the line alone repeats no wakeup when it asks again itself at most this many ms after the
 * claimers' entries end (it asks its own claim window after its refusal): see `wake` in {@link LINE}.
 */
export const QUIET_SLACK_MS = 20;

/** The Pub/Sub channel prefix of wakeups: the channel is this plus 20 hex digits of SHA-1 of the line's key. */
export const WAKE_PREFIX = "edge-redlock:wake:";

/** At most this many tickets in one wakeup. */
const SHOWN = 8;

/**
 * Lua: the node's time and the line's functions. Each line is read once per script (`ZRANGE … WITHSCORES`) and
 * kept in step with what the script writes, so a script pays one call per line read, and the node's clock (`TIME`)
 * only when it must tell live entries from those past their deadline.
 * - `node_now()`: the node's time in ms, read at most once per script.
 * - `claim_window(ticket)`: the ticket's claim window in ms (the 5 digits after its 32), nil where it has none.
 * - `line_sorted(q)`: the live waiters of line `q`, smallest ticket first (those past their deadline are dropped).
 * - `waiters_ahead(q, ticket)`: how many live waiters are ahead of `ticket`, and how many wait. When `ticket` is the
 *   smallest in line, none is ahead whatever the clock says: the entries are not told apart (the count may include
 *   some past their deadline, and `ticket` counts as in line even past its own), and no TIME is read.
 * - `in_step(q, ticket, age)`: whether `ticket` may be ordered here: it is in line already, or its time plus
 *   its age (ms since the waiter took it) is within {@link CLOCK_STEP_MS} of the node's time.
 * - `enqueue(q, ticket, life)`: joins or refreshes with a deadline `life` ms from now; `line_leave(q, ticket)` takes
 *   it out. The key expires {@link LINE_LINGER_MS} after the last deadline of its waiters rounded up to
 *   {@link LINE_KEEP_STEP_MS} (`line_keep`): only a change that moves that time sends a PEXPIREAT.
 * - `wake(q, claimers, hold, quiet)`: when someone waits (with `claimers` 0, entries past their deadline are not told
 *   apart), publishes `"<claimers> <ticket> …"` on the line's channel: the
 *   first `claimers` (0: the resource is held; nil: free, the head or its run of readers) must claim within their
 *   window (the 5 digits after the ticket's 32), so their deadlines shrink to it; the one listed after them learns it
 *   is next. A grant that holds the resource for `hold` ms at most (its ttl) adds `+<hold>`: until then only a
 *   release, which publishes, can free it. `quiet` is the claim window of a waiter refused by the line alone, which
 *   asks again that long after its refusal: where every claimer's entry already ends within the claimer's own
 *   window (a wakeup shrank it, or it ends there anyway) and at most {@link QUIET_SLACK_MS} before the refused
 *   waiter asks again, the wakeup would only repeat what the claimers were told, and is not published; the refused
 *   waiter's next ask finds a claimer that died gone, and publishes for the one after it.
 *   The PUBLISH is a `pcall`: a database that refuses it from a script loses the wakeup (waiters fall back to the
 *   times the nodes gave them), never the script's own writes or reply.
 */
export const LINE = `local NOW = false
local function claim_window(ticket)
  return tonumber(string.sub(ticket, 33, 37))
end
local function node_now()
  if not NOW then
    local t = redis.call("TIME")
    NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return NOW
end
local LINES = {}
local function line_expiry(last)
  return math.ceil(last / ${LINE_KEEP_STEP_MS}) * ${LINE_KEEP_STEP_MS} + ${LINE_LINGER_MS}
end
local function line_read(q)
  local l = LINES[q]
  if l then return l end
  l = {score = {}, sorted = {}, by = false, live = true}
  local r = redis.call("ZRANGE", q, 0, -1, "WITHSCORES")
  for j = 1, #r, 2 do
    l.score[r[j]] = tonumber(r[j + 1])
    l.sorted[#l.sorted + 1] = r[j]
  end
  if #r > 0 then
    table.sort(l.sorted)
    l.by = line_expiry(tonumber(r[#r]))
    l.live = false
  end
  LINES[q] = l
  return l
end
local function line_live(q)
  local l = line_read(q)
  if l.live then return l end
  local now, kept = node_now(), {}
  for _, w in ipairs(l.sorted) do
    if l.score[w] > now then kept[#kept + 1] = w else l.score[w] = nil end
  end
  if #kept < #l.sorted then redis.call("ZREMRANGEBYSCORE", q, "-inf", now) end
  if #kept == 0 then l.by = false end
  l.sorted, l.live = kept, true
  return l
end
local function line_keep(q, l)
  local last = false
  for _, d in pairs(l.score) do
    if not last or d > last then last = d end
  end
  local by = last and line_expiry(last)
  if by and by ~= l.by then redis.call("PEXPIREAT", q, by) end
  l.by = by
end
local function line_sorted(q)
  return line_live(q).sorted
end
local function line_drop(l, ticket)
  l.score[ticket] = nil
  for j, w in ipairs(l.sorted) do
    if w == ticket then
      table.remove(l.sorted, j)
      return
    end
  end
end
local function line_leave(q, ticket)
  assert(ticket, "a line member is missing")
  local l = line_read(q)
  if l.score[ticket] then
    redis.call("ZREM", q, ticket)
    line_drop(l, ticket)
    line_keep(q, l)
  end
end
local function waiters_ahead(q, ticket)
  local l = line_read(q)
  if l.sorted[1] ~= ticket then l = line_live(q) end
  local ahead = 0
  for _, w in ipairs(l.sorted) do
    if w < ticket then ahead = ahead + 1 end
  end
  return ahead, #l.sorted
end
local function in_step(q, ticket, age)
  if line_read(q).score[ticket] then return true end
  local t = tonumber(string.sub(ticket, 1, 16))
  return t ~= nil and math.abs(t + age - node_now()) <= ${CLOCK_STEP_MS}
end
local function enqueue(q, ticket, life)
  local l = line_read(q)
  local d = node_now() + life
  redis.call("ZADD", q, d, ticket)
  if not l.score[ticket] then
    l.sorted[#l.sorted + 1] = ticket
    table.sort(l.sorted)
  end
  l.score[ticket] = d
  if d <= NOW then l.live = false end
  line_keep(q, l)
end
local function wake(q, claimers, hold, quiet)
  local l = claimers == 0 and line_read(q) or line_live(q)
  local m = l.sorted
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
  local shown, told = {}, true
  for i = 1, math.min(#m, claimers + 1) do
    shown[i] = m[i]
    if i <= claimers then
      local by = node_now() + (claim_window(m[i]) or 0)
      if l.score[m[i]] > by then
        redis.call("ZADD", q, by, m[i])
        l.score[m[i]] = by
        told = false
      elseif quiet and node_now() + quiet > l.score[m[i]] + ${QUIET_SLACK_MS} then
        told = false
      end
    end
  end
  line_keep(q, l)
  if quiet and claimers > 0 and told then return end
  local channel = "${WAKE_PREFIX}" .. string.sub(redis.sha1hex(q), 1, 20)
  local payload = claimers .. " " .. table.concat(shown, " ")
  if claimers == 0 and hold then payload = payload .. " +" .. hold end
  redis.pcall("PUBLISH", channel, payload)
end
`;
