// A round's votes as an event's tally: counts, and the kind of each error (never its text).
import type { AttemptTally } from "../errors.ts";
import type { NodeErrorKind, NodeTally } from "./types.ts";

/**
 * The counts of a tally, with its errors by kind.
 */
export function nodeTally(tally: Pick<AttemptTally, "granted" | "denied" | "errors" | "votes">): NodeTally {
  const errorKinds: NodeTally["errorKinds"] = {};
  for (const vote of tally.votes) {
    if (vote.outcome !== "error") continue;
    const kind = errorKind(vote.cause);
    errorKinds[kind] = (errorKinds[kind] ?? 0) + 1;
  }
  return { granted: tally.granted, denied: tally.denied, errors: tally.errors, errorKinds };
}

/** The kind of a failure cause as node/outcome.ts words it (`timeout`, `network: …`, `unexpected reply …`, …). */
function errorKind(cause: string): NodeErrorKind {
  if (cause === "timeout" || cause === "aborted") return cause;
  if (cause.startsWith("network")) return "network";
  if (/^(unexpected|unparsable)\b.*\breply|^reply without result/.test(cause)) return "reply";
  return "refused";
}
