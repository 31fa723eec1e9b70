// Inspection: read who holds some keys, writing nothing.
import { unexpected } from "./replies.ts";
import type { Script } from "./script.ts";

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
