// The retry loop of an acquisition: attempt, and after each failure wait — as the nodes said (fair), or
// retryDelay ± retryJitter (random) — until held or out of retries, maxWait or signal.
import { LockAcquisitionError, type AttemptTally } from "../errors.ts";
import type { AcquireHooks } from "../events/acquire.ts";
import type { RetryPolicy } from "../options.ts";
import type { Clock } from "../support/clock.ts";
import { randomUnit } from "../support/random.ts";
import { queuePosition } from "./waits.ts";

/**
 * What an attempt came to: held (with the cleanup of any earlier try of the same attempt), or failed with
 * its tally and the cleanup of what it may have set. A failed attempt may say how long to wait before the
 * next one (`waitMs`, informed by the nodes) and whether its cleanup must be over first (`settleFirst`: a
 * split vote's partial grants are released before the retry, so the next round finds the key free).
 */
export type Attempt<T> =
  | { held: T; cleanup?: Promise<void> }
  | { failed: AttemptTally; cleanup: Promise<void>; waitMs?: number; settleFirst?: boolean };

/** What the loop is about, and who hears of it. */
export interface RetryingOptions {
  /** A lock, or a semaphore's permit (the error's message says which). Default `lock`. */
  what?: "lock" | "permit";
  /** Told of each wait before it starts (events). */
  hooks?: Pick<AcquireHooks, "retry">;
  /** Started, not waited for, when the loop ends without a hold: a waiter takes itself out of line. */
  leave?: () => Promise<void>;
}

/**
 * Runs `attempt` until it holds; after each failure waits `waitMs` when the attempt gave one, else
 * `retryDelay ± retryJitter` (random), until the retries, `maxWait` or the signal run out. With informed
 * waits the retries also buy a time budget of `retryCount × retryDelay` (a waiter asks more often than
 * that). Every attempt's cleanup has run before this settles; then `leave` starts.
 * @throws {LockAcquisitionError} with every attempt's tally when none held.
 * @example
 * ```ts
 * const lock = await retrying(clock, ["k"], policy, (n) => tryOnce(n));
 * ```
 */
export async function retrying<T>(
  clock: Clock,
  resources: readonly string[],
  policy: RetryPolicy,
  attempt: (n: number) => Promise<Attempt<T>>,
  how: RetryingOptions = {},
): Promise<T> {
  const { signal, maxWait } = policy;
  const began = clock.now();
  const budget = policy.retryCount * policy.retryDelay;
  const tallies: AttemptTally[] = [];
  const cleanups: Promise<void>[] = [];
  let held = false;
  try {
    for (let n = 1; ; n++) {
      signal?.throwIfAborted();
      const outcome = await attempt(n);
      if (outcome.cleanup) cleanups.push(outcome.cleanup);
      if ("held" in outcome) {
        held = true;
        return outcome.held;
      }
      tallies.push(outcome.failed);
      signal?.throwIfAborted();
      const delay = outcome.waitMs ?? Math.max(0, policy.retryDelay + (2 * randomUnit() - 1) * policy.retryJitter);
      if (policy.retryCount !== -1) {
        // Informed waits are short and many: the retries then also buy time (retryCount × retryDelay).
        const timeLeft = outcome.waitMs !== undefined && clock.now() - began + delay <= budget;
        if (n > policy.retryCount && !timeLeft) break;
      }
      // A holder's PTTL says when it must be gone, not when it goes (it may release at once, or keep
      // extending): only the time the caller gave decides when waiting ends.
      if (maxWait !== undefined && clock.now() - began + delay > maxWait) break;
      if (how.hooks) {
        const ahead = queuePosition(outcome.failed.votes);
        how.hooks.retry(outcome.failed, delay, ahead === undefined ? undefined : ahead + 1);
      }
      if (outcome.settleFirst) await outcome.cleanup;
      await clock.sleep(delay, signal);
    }
  } finally {
    await Promise.all(cleanups);
    // Best effort, not waited for (each request is bounded by nodeTimeout): a lapsed lease covers the rest.
    if (!held && how.leave) void how.leave();
  }
  throw new LockAcquisitionError(resources, tallies, how.what ?? "lock");
}
