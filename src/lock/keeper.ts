// Keeps a lock alive while work runs: extends before validity runs out, aborts loudly when it cannot.
import { LockExtensionError, MaxHoldError } from "../errors.ts";
import { anySignal, followSignals, type Clock } from "../support/clock.ts";
import type { LostEvent } from "../events/types.ts";
import { type Lock, lockState } from "./lock.ts";

/** How a lock is kept. */
export interface KeepOptions {
  /** The clock the lock's Redlock uses (`redlock.options.clock`). */
  clock: Clock;
  /** The ttl each extension asks for. */
  ttl: number;
  /** Extend when this many ms of validity are left. */
  threshold: number;
  /** Abort with {@link MaxHoldError} this many ms after keeping started. */
  maxHold?: number;
  /** Extend at most this many times (a request budget); then the lock is kept until its validity ends. */
  maxExtensions?: number;
}

/** A running keeper: its signal aborts when the lock is lost or held too long; `stop` ends it. */
export interface Keeper {
  /** Aborts with a {@link LockExtensionError} (lock lost) or a {@link MaxHoldError}. */
  readonly signal: AbortSignal;
  /** Extensions that succeeded so far. */
  readonly extensions: number;
  /** Stops extending and watching; resolves when no extension is in flight. */
  stop(): Promise<void>;
}

/**
 * Extends `lock` each time its validity falls to `threshold`, and watches its expiry as a safety net:
 * if validity reaches 0 without a successful extension, or an extension fails, the signal aborts.
 * Never rejects and never leaves an unhandled rejection behind.
 * @example
 * ```ts
 * declare function work(signal: AbortSignal): Promise<void>; // your own work
 * const keeper = keepLock(lock, { clock: redlock.options.clock, ttl: 10_000, threshold: 5_000 });
 * try { await work(keeper.signal); } finally { await keeper.stop(); await lock.release(); }
 * ```
 */
export function keepLock(lock: Lock, options: KeepOptions): Keeper {
  const { clock, ttl, threshold, maxHold, maxExtensions = Infinity } = options;
  const lost = new AbortController();
  const stopped = new AbortController();
  const started = clock.now();
  let extensions = 0;
  const end = (reason: Error, why: LostEvent["reason"]) => {
    if (lost.signal.aborted) return;
    lost.abort(reason);
    if (stopped.signal.aborted) return; // kept no longer: the lock was not lost while kept
    const { owner, kind } = lockState(lock);
    owner.emit?.({ type: "lost", kind, resources: lock.resources, reason: why });
  };
  const quiet = anySignal([lost.signal, stopped.signal]);

  const extending = (async () => {
    while (!quiet.aborted && extensions < maxExtensions) {
      const untilExtend = lock.validityMs - threshold;
      const untilMaxHold = maxHold === undefined ? Infinity : started + maxHold - clock.now();
      if (untilMaxHold <= 0) return end(new MaxHoldError(maxHold as number), "max-hold");
      if (!(await pause(clock, Math.max(0, Math.min(untilExtend, untilMaxHold)), quiet))) return;
      if (untilMaxHold <= untilExtend) continue; // woke for maxHold: the check above ends it
      try {
        await lock.extend(ttl);
        extensions++;
      } catch (error) {
        return end(error instanceof Error ? error : new LockExtensionError(lock.resources), "extension-failed");
      }
    }
  })();

  const watching = (async () => {
    while (!quiet.aborted) {
      if (lock.validityMs <= 0) return end(new LockExtensionError(lock.resources), "expired");
      if (!(await pause(clock, lock.validityMs, quiet))) return;
    }
  })();

  return {
    signal: lost.signal,
    get extensions() {
      return extensions;
    },
    async stop() {
      stopped.abort();
      await Promise.all([extending, watching]);
    },
  };
}

/**
 * Runs `routine` while keeping `lock` (see {@link keepLock}), then stops the keeper and releases the
 * lock — also when the routine throws. Returns once a quorum answered the release. What `using()` of a
 * lock and of a semaphore do after acquiring.
 */
export async function holdWhile<L extends Lock, T>(
  lock: L,
  routine: (signal: AbortSignal, lock: L) => Promise<T> | T,
  how: KeepOptions & { signal?: AbortSignal },
): Promise<T> {
  const keeper = keepLock(lock, how);
  const followed = followSignals([keeper.signal, how.signal]);
  try {
    return await routine(followed.signal, lock);
  } finally {
    // Not aborted: work the routine returned (a response body still being read) may still use its signal. Where the
    // runtime has no AbortSignal.any, this takes the combination's listener off the caller's signal, which may
    // outlive many routines.
    followed.dispose();
    await keeper.stop();
    await lock.release();
  }
}

/** Sleeps; false when `signal` aborted first. */
function pause(clock: Clock, ms: number, signal: AbortSignal): Promise<boolean> {
  return clock.sleep(ms, signal).then(
    () => !signal.aborted,
    () => false,
  );
}
