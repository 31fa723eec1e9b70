// `serverTiming`: how long the middleware waited for its lock, as the browser's devtools show it.
import type { Context } from "hono";
import { LockAcquisitionError } from "../errors.ts";
import type { Clock } from "../support/clock.ts";

/**
 * Runs `acquire`; when `enabled`, adds `Server-Timing: lock;dur=<ms>;desc="<n> attempt(s)"` to the
 * response, whether the lock was taken or refused.
 */
export async function timedAcquire<L extends { readonly attempts: number }>(
  c: Context,
  enabled: boolean | undefined,
  clock: Clock,
  acquire: () => Promise<L>,
): Promise<L> {
  if (!enabled) return acquire();
  const began = clock.now();
  const mark = (attempts: number) => {
    const duration = (clock.now() - began).toFixed(1);
    c.header("Server-Timing", `lock;dur=${duration};desc="${attempts} attempt${attempts === 1 ? "" : "s"}"`, {
      append: true,
    });
  };
  try {
    const held = await acquire();
    mark(held.attempts);
    return held;
  } catch (error) {
    if (error instanceof LockAcquisitionError) mark(error.attempts.length);
    throw error;
  }
}
