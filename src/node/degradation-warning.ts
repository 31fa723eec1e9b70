// Degradation said out loud: a node that fails is reported (while the lock still works, and after), once per node
// per minute.
import { clip, failureText, redact } from "../support/redact.ts";
import type { RedlockNode } from "./node.ts";

/** How often one node's failures are reported (ms). */
export const WARN_INTERVAL_MS = 60_000;

/**
 * `node`, reporting its failures with `console.warn` (at most once per {@link WARN_INTERVAL_MS}): the
 * label, the cause, and what to change where the cause says (a refused token, a refused connection), with
 * the lock values, `secrets` and anything that looks like a credential taken out. A request the round
 * stopped waiting for (its signal aborted without a timeout) is no failure.
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
    console.warn(degradationWarning(node.label, cause));
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

/**
 * The warning for one failed node: what failed, what to change when the cause names it, and how to turn
 * the warning off.
 * @param label the node's label: `UPSTASH_REDIS_REST_URL_2 (host)` from the environment, `node 2 (host)` else
 * @param cause the failure's text, secrets already taken out
 * @example
 * ```ts
 * degradationWarning("UPSTASH_REDIS_REST_URL_2 (eu2.upstash.io)", "WRONGPASS invalid or missing auth token");
 * ```
 */
export function degradationWarning(label: string, cause: string): string {
  const advice = adviceFor(label, cause);
  return (
    `edge-redlock: ${label} failed (${cause})${advice ? `: ${advice}` : ""}. Locks still work while a quorum ` +
    "answers, with less room for further failures. Reported once a minute per node; the Redlock option " +
    "warnings: false turns it off."
  );
}

/** What to change for a cause that names it; undefined for the others (a timeout, a server error). */
function adviceFor(label: string, cause: string): string | undefined {
  const name = /^(\S+)/.exec(label)?.[1] ?? label;
  const envUrl = /^UPSTASH_REDIS_REST_URL(_\d+)?$/.exec(name);
  const numbered = /^node (\d+)/.exec(label);
  if (/WRONGPASS|invalid or missing auth token|unauthori[sz]ed|HTTP 401|HTTP 403/i.test(cause)) {
    const token = envUrl
      ? `UPSTASH_REDIS_REST_TOKEN${envUrl[1] ?? ""}`
      : numbered
        ? `nodes[${Number(numbered[1]) - 1}].token`
        : "its token";
    return `the token was refused: set ${token} to the token of that database (the REST token, not the read-only one)`;
  }
  if (/ECONNREFUSED|Connection refused|connection lost/i.test(cause)) {
    const url = envUrl ? name : numbered ? `nodes[${Number(numbered[1]) - 1}].url` : "its url";
    return (
      `nothing answers at ${url}: check the URL, and that the server is running ` +
      "(local nodes: npx edge-redlock dev)"
    );
  }
  return undefined;
}
