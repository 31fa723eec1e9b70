// The events of one acquisition: each retry as it happens, and the outcome.
import { InvalidArgumentError, LockAcquisitionError, failureReason, type AttemptTally } from "../errors.ts";
import type { Clock } from "../support/clock.ts";
import type { Emit } from "./emit.ts";
import { nodeTally } from "./tally.ts";
import type { LockKind } from "./types.ts";

type WonRound = Pick<AttemptTally, "granted" | "denied" | "errors" | "votes">;

const NO_TALLY: WonRound = { granted: 0, denied: 0, errors: 0, votes: [] };

/**
 * What one acquisition tells `onEvent`: a `retry` event per wait, then one `acquire` event, held or failed.
 * Made by {@link acquireReport}.
 */
export class AcquireReport {
  readonly #emit: Emit;
  readonly #kind: LockKind;
  readonly #resources: readonly string[];
  readonly #clock: Clock;
  readonly #began: number;
  #won: WonRound | undefined;
  #retries = 0;

  constructor(emit: Emit, kind: LockKind, resources: readonly string[], clock: Clock) {
    this.#emit = emit;
    this.#kind = kind;
    this.#resources = resources;
    this.#clock = clock;
    this.#began = clock.now();
  }

  /** The round that won. */
  won(round: WonRound): void {
    this.#won = round;
  }

  /** An attempt failed; the next one starts after `waitMs` (`position`: the waiter's place, when known). */
  retry(failed: AttemptTally, waitMs: number, position?: number): void {
    this.#retries++;
    const where = position === undefined ? {} : { position };
    this.#emit({
      type: "retry",
      kind: this.#kind,
      resources: this.#resources,
      attempt: failed.attempt,
      waitMs,
      reason: failureReason(failed),
      ...where,
      tally: nodeTally(failed),
    });
  }

  /** The acquisition holds `lock`. */
  held(lock: { readonly attempts: number; readonly validityMs: number }): void {
    this.#emit({
      type: "acquire",
      outcome: "held",
      kind: this.#kind,
      resources: this.#resources,
      attempts: lock.attempts,
      elapsedMs: this.#clock.now() - this.#began,
      validityMs: lock.validityMs,
      tally: nodeTally(this.#won ?? NO_TALLY),
    });
  }

  /** The acquisition ended with `error`: every attempt refused, or the caller's signal. */
  failed(error: unknown): void {
    const elapsedMs = this.#clock.now() - this.#began;
    const base = { type: "acquire", outcome: "failed", kind: this.#kind, resources: this.#resources } as const;
    if (error instanceof LockAcquisitionError) {
      const tally = nodeTally(error.attempts[error.attempts.length - 1]);
      this.#emit({ ...base, attempts: error.attempts.length, elapsedMs, reason: error.reason, tally });
    } else if (!(error instanceof InvalidArgumentError)) {
      // The caller's signal (or a routine of the caller's) ended it: no tally to speak of.
      this.#emit({ ...base, attempts: this.#retries + 1, elapsedMs, reason: "aborted", tally: nodeTally(NO_TALLY) });
    }
  }
}

/**
 * The report of one acquisition to `emit`, or undefined without one (then nothing is measured).
 */
export function acquireReport(
  emit: Emit | undefined,
  kind: LockKind,
  resources: readonly string[],
  clock: Clock,
): AcquireReport | undefined {
  return emit ? new AcquireReport(emit, kind, resources, clock) : undefined;
}
