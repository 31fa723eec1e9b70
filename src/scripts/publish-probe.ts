// Whether a database lets a script PUBLISH: the line's scripts wake their waiters that way.
import { KEY_LOCKING } from "./script.ts";

/**
 * Publishes ARGV[2] on the channel ARGV[1] from inside a script, as the line's scripts publish their wakeups, and
 * answers the number of receivers (or the database's refusal, as an error reply).
 * @example
 * ```ts
 * await redis.eval(PUBLISH_FROM_SCRIPT, [], [PROBE_CHANNEL, "probe"]); // 0: nobody listens there
 * ```
 */
export const PUBLISH_FROM_SCRIPT = 'return redis.pcall("PUBLISH", ARGV[1], ARGV[2])';

/**
 * The same with Upstash's key-locking flag, as the line's scripts run where the node accepts the flag.
 * @example
 * ```ts
 * await redis.eval(PUBLISH_FROM_FLAGGED_SCRIPT, [], [PROBE_CHANNEL, "probe"]); // 0, or an error reply
 * ```
 */
export const PUBLISH_FROM_FLAGGED_SCRIPT = KEY_LOCKING + PUBLISH_FROM_SCRIPT;

/** The channel the library's own probe publishes on: nobody subscribes to it. */
export const PROBE_CHANNEL = "edge-redlock:probe";

const publishing = new Map<string, boolean>();

/**
 * Whether a script's Lua publishes (the fair scripts wake their waiters): computed once per source.
 * @example
 * ```ts
 * publishesFromScript('redis.pcall("PUBLISH", channel, payload)'); // true
 * publishesFromScript('return redis.call("GET", KEYS[1])'); // false
 * ```
 */
export function publishesFromScript(lua: string): boolean {
  let found = publishing.get(lua);
  if (found === undefined) {
    found = lua.includes('"PUBLISH"');
    publishing.set(lua, found);
  }
  return found;
}
