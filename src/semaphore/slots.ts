// Which slot a semaphore tries next, from what the nodes said was free.
import type { Round } from "../quorum/fan-out.ts";
import { randomUnit } from "../support/random.ts";

/**
 * The slot to try next: one free on the most nodes as their refusals reported (a random one among the
 * best), preferring slots not tried yet; `onQuorum` when an untried slot is free on a quorum (try it now).
 */
export function freeSlot(
  round: Round,
  limit: number,
  quorum: number,
  tried: Set<number>,
): { slot: number; onQuorum: boolean } {
  const free = new Array<number>(limit).fill(0);
  for (const vote of round.votes) {
    if (vote.outcome !== "denied") continue;
    for (const slot of vote.free ?? []) if (slot < limit) free[slot]++;
  }
  const pick = (slots: number[]) => {
    const best = Math.max(...slots.map((slot) => free[slot]));
    const candidates = slots.filter((slot) => free[slot] === best);
    return { slot: candidates[Math.floor(randomUnit() * candidates.length)], count: best };
  };
  const untried = free.flatMap((_, slot) => (tried.has(slot) ? [] : [slot]));
  const fresh = untried.length > 0 ? pick(untried) : undefined;
  if (fresh && fresh.count >= quorum) return { slot: fresh.slot, onQuorum: true };
  return { slot: pick(free.map((_, slot) => slot)).slot, onQuorum: false };
}
