// A semaphore's inspection: how many permits a quorum holds, read without taking anything.
import { quorumLasts, readAll } from "../lock/lock-inspection.ts";
import type { Rounds } from "../quorum/rounds.ts";

/**
 * What a semaphore's inspect reports.
 * @example
 * ```ts
 * const { held, limit, soonestExpiresInMs } = await semaphore.inspect();
 * ```
 */
export interface SemaphoreInspection {
  /** The semaphore's key. */
  key: string;
  /** How many permits it has. */
  limit: number;
  /** How many nodes make a quorum. */
  quorum: number;
  /** Permits held by a quorum now (never more than `limit`). */
  held: number;
  /** ms until the soonest of those permits is no longer held by a quorum; undefined when none is held. */
  soonestExpiresInMs: number | undefined;
  /** Per node: how many slots it holds, or why it gave no usable answer. */
  nodes: { node: number; label: string; held?: number; error?: string }[];
}

/**
 * How many permits of a semaphore a quorum holds, from its slot keys (see {@link SemaphoreInspection}).
 */
export async function inspectSlots(rounds: Rounds, key: string, slots: string[]): Promise<SemaphoreInspection> {
  const readings = await readAll(rounds, slots);
  let held = 0;
  let soonest = Infinity;
  for (let slot = 0; slot < slots.length; slot++) {
    const byHolder = new Map<string, number[]>();
    for (const reading of readings) {
      const entry = "slots" in reading ? reading.slots[slot] : null;
      if (entry) byHolder.set(entry.holder, [...(byHolder.get(entry.holder) ?? []), entry.pttl]);
    }
    for (const pttls of byHolder.values()) {
      if (pttls.length < rounds.quorum) continue;
      held++;
      soonest = Math.min(soonest, quorumLasts(pttls, rounds.quorum));
    }
  }
  return {
    key,
    limit: slots.length,
    quorum: rounds.quorum,
    held,
    soonestExpiresInMs: held > 0 && Number.isFinite(soonest) ? soonest : undefined,
    nodes: readings.map((reading, node) => ({
      node,
      label: rounds.nodes[node].label,
      ...("error" in reading ? { error: reading.error } : { held: reading.slots.filter((s) => s !== null).length }),
    })),
  };
}
