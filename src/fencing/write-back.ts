// The fencing write-back round: raise the counters to the token on a quorum that still holds the lock.
import type { Round } from "../quorum/fan-out.ts";
import type { Grant, Rounds } from "../quorum/rounds.ts";
import { FENCE } from "../scripts/fencing.ts";
import { maxFence } from "./tokens.ts";

/**
 * After a fenced grant that holds: the token is the largest counter the granting nodes answered, and a second
 * round raises every counter to it where the caller still holds `keys` (docs/SAFETY.md, "Fencing tokens across
 * a quorum"). The lock is held only if this round holds too, validity still measured from the grant's start.
 */
export async function writeBackFence(
  rounds: Rounds,
  grant: Grant,
  keys: readonly string[],
  fenceKeys: readonly string[],
  signal: AbortSignal | undefined,
): Promise<{ round: Round; fence: string }> {
  // Every grant of a fenced acquire carries a counter (a bare grant is an error vote).
  const fence = maxFence(grant.round.votes.flatMap((v) => (v.outcome === "granted" && v.fence ? [v.fence] : [])));
  const round = await rounds.round(FENCE, [...keys, ...fenceKeys], [grant.value, fence], {
    signal,
    decide: "outcome",
    cancelStragglers: true,
  });
  return { round, fence };
}
