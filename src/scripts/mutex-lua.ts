// The Lua the mutex's acquires share (the plain one and the fair one): who holds the keys, and taking them.

/**
 * Lua: `longest_pttl(n)` — whether any of KEYS[1..n] is held, and the longest PTTL among them (-1: one of
 * them never expires).
 */
export const LONGEST_PTTL = `local function longest_pttl(n)
  local held, wait = false, 0
  for i = 1, n do
    local pttl = redis.call("PTTL", KEYS[i])
    if pttl ~= -2 then
      held = true
      if pttl == -1 or wait == -1 then wait = -1 elseif pttl > wait then wait = pttl end
    end
  end
  return held, wait
end
`;

/**
 * Lua: `take(n, fences)` — sets KEYS[1..n] to ARGV[1] with PX ARGV[2]; where KEYS[fences + i] is given, that
 * resource's fence counter advances to max(counter + 1, the node's clock in µs). Returns the largest counter
 * as an exact decimal string, or false without counters. Needs `greater` (decimal.ts).
 */
export const TAKE = `local function take(n, fences)
  local fence, now = false, false
  for i = 1, n do
    redis.call("SET", KEYS[i], ARGV[1], "PX", ARGV[2])
    local counter = KEYS[fences + i]
    if counter then
      if not now then
        local t = redis.call("TIME")
        now = t[1] .. string.format("%06d", tonumber(t[2]))
      end
      redis.call("INCR", counter)
      local f = redis.call("GET", counter)
      if greater(now, f) then
        redis.call("SET", counter, now)
        f = now
      end
      if not fence or greater(f, fence) then fence = f end
    end
  end
  return fence
end
`;
