// Fair waiting: acquire that grants only to the first live waiter, and leaving the queue.
import { GREATER } from "./decimal.ts";
import { LONGEST_PTTL, TAKE } from "./mutex-lua.ts";
import { fairRefusal, grantOrRefuse, grantWithFence, isInteger, unexpected } from "./replies.ts";
import { LINE } from "./queue.ts";
import { KEY_LOCKING, defineScript, type Script } from "./script.ts";
import type { Vote } from "./vote.ts";

/**
 * KEYS[1..n] resources, KEYS[n+1..2n] their lines, then optionally their n fence counters; ARGV[1] value,
 * ARGV[2] ttl ms, ARGV[3] n, ARGV[4] the waiter's ticket, ARGV[5] how long its entry lives (ms), ARGV[6] "1" to
 * join the lines when refused ("0": one try, never joins), ARGV[7] the ticket's age (ms since the waiter took it).
 * Grants exactly where {@link ACQUIRE} would (every resource absent) **and** no live waiter of any of the lines has
 * a smaller ticket; the grant leaves the lines and tells those still waiting who is first. Otherwise refuses with the
 * longest PTTL (-2 when only the line stood in the way: then the first in line is woken to claim, unless a wakeup
 * told it so already and the refused waiter, which joins, asks again at most `QUIET_SLACK_MS` after the first's
 * window ends) and the most waiters ahead in any line, and (ARGV[6]) joins or refreshes the lines. A ticket whose
 * time is out of step with the node's clock is neither ordered nor queued where anyone waits or it would have to
 * join: `{0, pttl, -1, now}` gives the node's time, so the waiter takes a ticket in step. The line only takes grants
 * away.
 * @example
 * ```ts
 * import { scriptSha } from "edge-redlock/scripts";
 *
 * const sha = await scriptSha(FAIR_ACQUIRE.lua);
 * const ticket = "00017324064000009f86d081884c7d65"; // a waiter's: 16 digits of epoch ms, 16 random hex digits
 * const keys = ["orders:42", "edge-redlock:line:orders:42"];
 * const reply = await redis.evalsha(sha, keys, [value, "10000", "1", ticket, "3000", "1", "0"]); // [0, 4200, 2]
 * ```
 */
export const FAIR_ACQUIRE: Script = /* @__PURE__ */ defineScript({
  name: "fair-acquire",
  lua: () => `${KEY_LOCKING}${GREATER}${LONGEST_PTTL}${TAKE}${LINE}local n = tonumber(ARGV[3])
local ticket, age = ARGV[4], tonumber(ARGV[7]) or 0
assert(ticket, "a line member is missing")
local ahead, waiting = 0, false
for i = 1, n do
  local a, count = waiters_ahead(KEYS[n + i], ticket)
  if a > ahead then ahead = a end
  if count > 0 then waiting = true end
end
local function all_in_step()
  for i = 1, n do
    if not in_step(KEYS[n + i], ticket, age) then return false end
  end
  return true
end
local step = not waiting or all_in_step()
if step and ahead == 0 and n == 1 and not KEYS[3] and redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  line_leave(KEYS[2], ticket)
  if waiting then wake(KEYS[2], 0, ARGV[2]) end
  return {1}
end
local held, wait = longest_pttl(n)
if not held then wait = -2 end
if step and held and ARGV[6] == "1" and not waiting then step = all_in_step() end
if not step then return {0, wait, -1, node_now()} end
if held or ahead > 0 then
  if ARGV[6] == "1" then
    for i = 1, n do enqueue(KEYS[n + i], ticket, tonumber(ARGV[5])) end
  end
  if not held then
    local quiet = ARGV[6] == "1" and claim_window(ticket) or nil
    for i = 1, n do wake(KEYS[n + i], nil, nil, quiet) end
  end
  return {0, wait, ahead}
end
for i = 1, n do line_leave(KEYS[n + i], ticket) end
local fence = take(n, 2 * n)
if waiting then
  for i = 1, n do wake(KEYS[n + i], 0, ARGV[2]) end
end
if fence then return {1, fence} end
return {1}`,
  vote: (reply) => (isRefusal(reply) ? fairRefusal(reply) : grantOrRefuse(reply)),
});

/**
 * {@link FAIR_ACQUIRE} with fence counters in KEYS: only a grant that carries a counter counts.
 * @example
 * ```ts
 * FENCED_FAIR_ACQUIRE.vote([1, "1732406400000001"]); // { outcome: "granted", fence: "1732406400000001" }
 * ```
 */
export const FENCED_FAIR_ACQUIRE: Script = /* @__PURE__ */ defineScript({
  name: "fair-acquire",
  lua: () => FAIR_ACQUIRE.lua,
  vote: (reply) => (isRefusal(reply) ? fairRefusal(reply) : grantWithFence(reply)),
});

/**
 * KEYS[1..n] resources, KEYS[n+1..2n] their lines; ARGV[1] value, ARGV[2] ticket, ARGV[3] how long its entry lives
 * (ms). Deletes each resource that still holds the value (as {@link RELEASE}) and puts the ticket back in every
 * line with that deadline (a resource it freed wakes the first in line); answers how many resources it deleted.
 * The undoing of a fair
 * attempt that failed while its waiter keeps waiting: where the attempt was granted, the grant took the ticket
 * out of the queue, and without it the next contender was served there first, over and over, for a waiter that
 * needs that node (one that reaches only a bare quorum of nodes was kept out for seconds).
 * @example
 * ```ts
 * import { scriptSha } from "edge-redlock/scripts";
 *
 * const sha = await scriptSha(REQUEUE.lua);
 * const ticket = "00017324064000009f86d081884c7d65"; // a waiter's: 16 digits of epoch ms, 16 random hex digits
 * await redis.evalsha(sha, ["orders:42", "edge-redlock:line:orders:42"], [value, ticket, "300"]); // 1
 * ```
 */
export const REQUEUE: Script = /* @__PURE__ */ defineScript({
  name: "requeue",
  lua: () => `${KEY_LOCKING}${LINE}${releaseEach("enqueue(KEYS[n + i], ARGV[2], tonumber(ARGV[3]))")}`,
  vote: (reply) => LEAVE.vote(reply),
});

/**
 * Lua over KEYS = resources then their lines: deletes each resource that holds ARGV[1], runs `lineStep` on its
 * line (`KEYS[n + i]`), wakes the line where the resource is free, and answers how many it deleted.
 */
function releaseEach(lineStep: string): string {
  return `local n = #KEYS / 2
local released = 0
for i = 1, n do
  local holder = redis.call("GET", KEYS[i])
  if holder == ARGV[1] then
    redis.call("DEL", KEYS[i])
    released = released + 1
  end
  ${lineStep}
  if holder == false or holder == ARGV[1] then wake(KEYS[n + i], nil) end
end
return released`;
}

function isRefusal(reply: unknown): boolean {
  return Array.isArray(reply) && reply[0] === 0;
}

/**
 * KEYS[1..n] resources, KEYS[n+1..2n] their lines; ARGV[1] value, ARGV[2] ticket.
 * Deletes each resource that still holds the value (as {@link RELEASE}) and takes the ticket out of every
 * line (a free resource wakes the first in line); answers how many resources it deleted. A waiter that stops
 * waiting, and a fair lock's release.
 * @example
 * ```ts
 * import { scriptSha } from "edge-redlock/scripts";
 *
 * const sha = await scriptSha(LEAVE.lua);
 * const ticket = "00017324064000009f86d081884c7d65"; // a waiter's: 16 digits of epoch ms, 16 random hex digits
 * await redis.evalsha(sha, ["orders:42", "edge-redlock:line:orders:42"], [value, ticket]); // 1
 * ```
 */
export const LEAVE: Script = /* @__PURE__ */ defineScript({
  name: "leave",
  lua: () => `${KEY_LOCKING}${LINE}${releaseEach(`line_leave(KEYS[n + i], ARGV[2])`)}`,
  vote(reply): Vote {
    if (!isInteger(reply) || reply < 0) return unexpected(reply);
    return reply > 0 ? { outcome: "granted" } : { outcome: "denied" };
  },
});
