// The retry loop of an acquisition: attempt, and after each failure wait retryDelay ± retryJitter.
import { LockAcquisitionError, type AttemptTally } from "../errors.ts";
import type { RetryPolicy } from "../options.ts";
import type { AcquireHooks } from "../events/acquire.ts";
import type { Clock } from "../support/clock.ts";
import { randomUnit } from "../support/random.ts";

/**
 * What an attempt came to: held (with the cleanup of any earlier try of the same attempt), or failed with
 * its tally and the cleanup of what it may have set.
 */
export type Attempt<T> = { held: T; cleanup?: Promise<void> } | { failed: AttemptTally; cleanup: Promise<void> };

/**
 * Runs `attempt` until it holds; after each failure waits `retryDelay ± retryJitter` (random), until
 * the retries, `maxWait` or the signal run out. Every attempt's cleanup has run before this settles.
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
  what: "lock" | "permit" = "lock",
  hooks?: Pick<AcquireHooks, "retry">,
): Promise<T> {
  const { signal, maxWait } = policy;
  const began = clock.now();
  const tallies: AttemptTally[] = [];
  const cleanups: Promise<void>[] = [];
  try {
    for (let n = 1; ; n++) {
      signal?.throwIfAborted();
      const outcome = await attempt(n);
      if (outcome.cleanup) cleanups.push(outcome.cleanup);
      if ("held" in outcome) return outcome.held;
      tallies.push(outcome.failed);
      signal?.throwIfAborted();
      if (policy.retryCount !== -1 && n > policy.retryCount) break;
      const delay = Math.max(0, policy.retryDelay + (2 * randomUnit() - 1) * policy.retryJitter);
      if (maxWait !== undefined && clock.now() + delay - began > maxWait) break;
      hooks?.retry(outcome.failed, delay);
      await clock.sleep(delay, signal);
    }
  } finally {
    await Promise.all(cleanups);
  }
  throw new LockAcquisitionError(resources, tallies, what);
}
