// Degradation said out loud: a node that fails while the lock still works is reported, once per node per minute.
import { clip, failureText, redact } from "../support/redact.ts";
import type { RedlockNode } from "./node.ts";

/** How often one node's failures are reported (ms). */
export const WARN_INTERVAL_MS = 60_000;

/**
 * `node`, reporting its failures with `console.warn` (at most once per {@link WARN_INTERVAL_MS}): the
 * label and the cause, with the lock values, `secrets` and anything that looks like a credential taken
 * out. A request the round stopped waiting for (its signal aborted without a timeout) is no failure.
 */
export function warnOnFailure(node: RedlockNode, secrets: readonly string[]): RedlockNode {
  let last = Number.NEGATIVE_INFINITY;
  const report = (error: unknown, args: string[], signal: AbortSignal) => {
    const timedOut = signal.aborted && (signal.reason as { name?: string } | undefined)?.name === "TimeoutError";
    if (signal.aborted && !timedOut) return;
    const now = Date.now();
    if (now - last < WARN_INTERVAL_MS) return;
    last = now;
    const cause = timedOut ? "timeout" : clip(redact(failureText(error), [...args, ...secrets]));
    console.warn(
      `edge-redlock: ${node.label} failed (${cause}); locks still work while a quorum answers, with less ` +
        "room for further failures. Reported once a minute per node; turn off with { warnings: false }.",
    );
  };
  const { subscribe, requestsFor } = node;
  return {
    label: node.label,
    run: (script, keys, args, signal) =>
      node.run(script, keys, args, signal).catch((error: unknown) => {
        report(error, args, signal);
        throw error;
      }),
    ...(subscribe ? { subscribe: subscribe.bind(node) } : {}),
    ...(requestsFor ? { requestsFor: requestsFor.bind(node) } : {}),
  };
}
