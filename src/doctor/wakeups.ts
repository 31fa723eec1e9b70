// The doctor's wakeup check: does the node accept a Pub/Sub subscription and deliver a message that a script
// publishes, as the line's scripts do?
import type { NodeConfig } from "../node/node.ts";
import { sseSubscribe } from "../node/subscribe.ts";
import { KEY_LOCKING } from "../scripts/script.ts";
import { clip, errorText, redact } from "../support/redact.ts";
import type { Call } from "./rest.ts";

/** Publishes ARGV[2] on the channel ARGV[1] from inside a script, as the line's scripts publish their wakeups. */
export const PUBLISH_FROM_SCRIPT = 'return redis.call("PUBLISH", ARGV[1], ARGV[2])';

/** The same with Upstash's key-locking flag, as the line's scripts run where the node accepts the flag. */
const PUBLISH_FROM_FLAGGED_SCRIPT = KEY_LOCKING + PUBLISH_FROM_SCRIPT;

/**
 * Subscribes to `channel` on `node`, publishes `payload` there from inside a script (the way the line's scripts
 * publish: a wakeup names who is first, which only the script can tell, so it cannot be a separate pipeline member;
 * with the key-locking flag when `flagged`, as the library sends its scripts to a node that accepts the flag)
 * with `call`, and says whether it arrived within
 * `timeout` ms: `delivered`, or why not (the subscription was refused, or nothing arrived). Nothing of it outlives
 * the check. Waiters on a node that fails it are served by their fallback: they ask again when the holder's time
 * is up, or every `retryDelay` when no node wakes them.
 */
export async function checkWakeups(
  node: NodeConfig,
  call: Call,
  channel: string,
  how: { timeout: number; flagged: boolean },
): Promise<string> {
  const { timeout, flagged } = how;
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(new DOMException("no answer in time", "TimeoutError")), timeout);
  const payload = `doctor ${channel.slice(-8)}`;
  let arrived!: () => void;
  const delivered = new Promise<void>((resolve) => {
    arrived = resolve;
  });
  try {
    await sseSubscribe(node.url, node.token, channel, (message) => message === payload && arrived(), stop.signal);
  } catch (error) {
    clearTimeout(timer);
    stop.abort();
    const why = stop.signal.aborted
      ? "no confirmation in time"
      : clip(redact(errorText(error), [node.url, node.token]));
    return `the subscription failed (${why})`;
  }
  try {
    const script = flagged ? PUBLISH_FROM_FLAGGED_SCRIPT : PUBLISH_FROM_SCRIPT;
    const published = await call(["eval", script, "0", channel, payload]);
    if (!published.ok) return `PUBLISH from a script failed (${published.error})`;
    const ended = new Promise<void>((resolve) =>
      stop.signal.addEventListener("abort", () => resolve(), { once: true }),
    );
    await Promise.race([delivered, ended]);
    return stop.signal.aborted ? "nothing was delivered" : "delivered";
  } finally {
    clearTimeout(timer);
    stop.abort();
  }
}
