// The events of one acquisition: each retry as it happens, and the outcome.
import { InvalidArgumentError, LockAcquisitionError, failureReason, type AttemptTally } from "../errors.ts";
import type { Clock } from "../support/clock.ts";
import type { Emit } from "./emit.ts";
import { nodeTally } from "./tally.ts";
import type { LockKind } from "./types.ts";

/** What the retry loop and the attempts tell the reporter while an acquisition runs. */
export interface AcquireHooks {
  /** The round that won (called by the attempt that holds). */
  won(round: Pick<AttemptTally, "granted" | "denied" | "errors" | "votes">): void;
  /** An attempt failed; the next one starts after `waitMs` (`position`: the waiter's place, when known). */
  retry(failed: AttemptTally, waitMs: number, position?: number): void;
}

/**
 * Runs `acquire` and reports it to `emit`: a `retry` event per wait, then one `acquire` event, held or
 * failed. Without `emit`, runs it as it is: no hooks, nothing measured.
 * @example
 * ```ts
 * return reportAcquire(emit, "lock", keys, clock, (hooks) => retrying(clock, keys, policy, attempt, "lock", hooks));
 * ```
 */
export async function reportAcquire<T extends { readonly attempts: number; readonly validityMs: number }>(
  emit: Emit | undefined,
  kind: LockKind,
  resources: readonly string[],
  clock: Clock,
  acquire: (hooks: AcquireHooks | undefined) => Promise<T>,
): Promise<T> {
  if (!emit) return acquire(undefined);
  const began = clock.now();
  let won: Parameters<AcquireHooks["won"]>[0] | undefined;
  let retries = 0;
  const hooks: AcquireHooks = {
    won: (round) => {
      won = round;
    },
    retry: (failed, waitMs, position) => {
      retries++;
      const reason = failureReason(failed);
      const where = position === undefined ? {} : { position };
      emit({
        type: "retry",
        kind,
        resources,
        attempt: failed.attempt,
        waitMs,
        reason,
        ...where,
        tally: nodeTally(failed),
      });
    },
  };
  try {
    const held = await acquire(hooks);
    const tally = nodeTally(won ?? { granted: 0, denied: 0, errors: 0, votes: [] });
    const elapsedMs = clock.now() - began;
    emit({
      type: "acquire",
      outcome: "held",
      kind,
      resources,
      attempts: held.attempts,
      elapsedMs,
      validityMs: held.validityMs,
      tally,
    });
    return held;
  } catch (error) {
    const elapsedMs = clock.now() - began;
    if (error instanceof LockAcquisitionError) {
      const tally = nodeTally(error.attempts[error.attempts.length - 1]);
      const attempts = error.attempts.length;
      emit({ type: "acquire", outcome: "failed", kind, resources, attempts, elapsedMs, reason: error.reason, tally });
    } else if (!(error instanceof InvalidArgumentError)) {
      // The caller's signal (or a routine of the caller's) ended it: no tally to speak of.
      const tally = nodeTally({ granted: 0, denied: 0, errors: 0, votes: [] });
      emit({
        type: "acquire",
        outcome: "failed",
        kind,
        resources,
        attempts: retries + 1,
        elapsedMs,
        reason: "aborted",
        tally,
      });
    }
    throw error;
  }
}
