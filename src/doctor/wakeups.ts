// The doctor's wakeup check: does the node accept a Pub/Sub subscription and deliver a message that a script
// publishes, as the line's scripts do?
import type { NodeConfig } from "../node/node.ts";
import { sseSubscribe } from "../node/subscribe.ts";
import { PUBLISH_FROM_FLAGGED_SCRIPT, PUBLISH_FROM_SCRIPT } from "../scripts/publish-probe.ts";
import { clip, errorText, redact } from "../support/redact.ts";
import type { Call } from "./rest.ts";

/** The finding for a node that delivered what a script published. */
export const DELIVERED = "delivered";

/** How a finding starts when the node refused PUBLISH from the script. */
export const PUBLISH_REFUSED = "PUBLISH from a script failed";

/** The finding for a node that delivers only what a script without the key-locking flag publishes. */
export const DELIVERED_WITHOUT_FLAG =
  "delivered without the key-locking flag (the library sends its scripts that publish there without it)";

/**
 * {@link checkWakeup} as the library publishes: from a flagged script when `flagged`, and where the node refuses
 * PUBLISH there, from a script without the flag (the library's own probe finds that out and sends its scripts that
 * publish without the flag): {@link DELIVERED}, {@link DELIVERED_WITHOUT_FLAG}, or why not.
 */
export async function checkWakeups(
  node: NodeConfig,
  call: Call,
  channel: string,
  how: { timeout: number; flagged: boolean },
): Promise<string> {
  const found = await checkWakeup(node, call, channel, how);
  if (!how.flagged || !found.startsWith(PUBLISH_REFUSED)) return found;
  const plain = await checkWakeup(node, call, `${channel}:plain`, { timeout: how.timeout, flagged: false });
  return plain === DELIVERED ? DELIVERED_WITHOUT_FLAG : `${found}; without the flag: ${plain}`;
}

/**
 * Subscribes to `channel` on `node`, publishes `payload` there from inside a script (the way the line's scripts
 * publish: a wakeup names who is first, which only the script can tell, so it cannot be a separate pipeline member;
 * with the key-locking flag when `flagged`, as the library sends its scripts to a node that accepts the flag)
 * with `call`, and says whether it arrived within
 * `timeout` ms: `delivered`, or why not (the subscription was refused, or nothing arrived). Nothing of it outlives
 * the check. Waiters on a node that fails it are served by their fallback: they ask again when the holder's time
 * is up, or every `retryDelay` when no node wakes them.
 */
async function checkWakeup(
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
    if (!published.ok) return `${PUBLISH_REFUSED} (${published.error})`;
    const ended = new Promise<void>((resolve) =>
      stop.signal.addEventListener("abort", () => resolve(), { once: true }),
    );
    await Promise.race([delivered, ended]);
    return stop.signal.aborted ? "nothing was delivered" : DELIVERED;
  } finally {
    clearTimeout(timer);
    stop.abort();
  }
}
