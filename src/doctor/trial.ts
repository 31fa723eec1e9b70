// The doctor's last check: a lock taken and released the way the library does it.
import { LockAcquisitionError } from "../errors.ts";
import type { NodeConfig } from "../node/node.ts";
import { Redlock } from "../redlock.ts";
import { systemClock } from "../support/clock.ts";

/** How the trial lock went. */
export interface Trial {
  acquired: boolean;
  ms: number;
  message: string;
}

/**
 * Takes and releases one lock the way the library does, on every configured node.
 * @example
 * ```ts
 * const settings = { ttl: 10_000, nodeTimeout: 500, driftFactor: 0.01 };
 * const trial = await trialLock(nodes, "edge-redlock-doctor:1a2b:lock", settings);
 * ```
 */
export async function trialLock(
  nodes: readonly NodeConfig[],
  key: string,
  o: { ttl: number; nodeTimeout: number; driftFactor: number; signal?: AbortSignal },
): Promise<Trial> {
  let redlock: Redlock;
  try {
    redlock = new Redlock(nodes, {
      retryCount: 0,
      nodeTimeout: o.nodeTimeout,
      driftFactor: o.driftFactor,
      // The report names each failed node itself, with what to change; a console warning would repeat it.
      warnings: false,
    });
  } catch (error) {
    return { acquired: false, ms: 0, message: `not tried: ${(error as Error).message}` };
  }
  const started = systemClock.now();
  try {
    const lock = await redlock.acquire([key], Math.max(o.ttl, o.nodeTimeout + 1), { signal: o.signal });
    const ms = systemClock.now() - started;
    const granted = lock.attempts === 1 ? "" : ` after ${lock.attempts} attempts`;
    await (await lock.release()).pending;
    // release() resolves once a quorum answered: after its pending work, count what is really left.
    const seen = (await redlock.inspect([key])).nodes.filter((n) => n.error === undefined);
    const left = seen.filter((n) => n.held).length;
    const gone =
      left === 0
        ? `released on every node that answers (${seen.length} of ${nodes.length})`
        : `released, but still set on ${left} of ${nodes.length} nodes (it expires with its ttl)`;
    return {
      acquired: true,
      ms,
      message: `a trial lock was acquired in ${ms >= 100 ? Math.round(ms) : ms.toFixed(1)} ms${granted} and ${gone}`,
    };
  } catch (error) {
    if (error instanceof LockAcquisitionError) {
      const t = error.attempts[error.attempts.length - 1];
      return {
        acquired: false,
        ms: systemClock.now() - started,
        message: `a trial lock failed (${error.reason}: ${t.granted} granted, ${t.denied} denied, ${t.errors} errors)`,
      };
    }
    throw error;
  }
}
