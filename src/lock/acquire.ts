// One acquisition, for every kind of lock: the seeds' steps in order, the fair line, the undo and the events.
// Each kind (mutex, fenced mutex, semaphore permit, reader, writer) says only what differs: its script, keys and
// arguments, what a grant builds, and how a failed try is undone.
import {
  InvalidArgumentError,
  LockAcquisitionError,
  failureReason,
  nameNodes,
  type AttemptTally,
  type RequestBudget,
} from "../errors.ts";
import { acquireReport } from "../events/acquire.ts";
import type { LockKind } from "../events/types.ts";
import { writeBackFence } from "../fencing/write-back.ts";
import type { RetryPolicy } from "../options.ts";
import type { Round } from "../quorum/fan-out.ts";
import type { Grant, Rounds } from "../quorum/rounds.ts";
import type { Script } from "../scripts/script.ts";
import type { Lifecycle } from "./lifecycle.ts";
import type { Line } from "./line.ts";
import { lockState, type Lock, type LockState } from "./lock.ts";
import { queuePosition, randomWait } from "./wait.ts";

/** One try of an attempt: the acquire request, and what a grant of it holds on a node. */
export interface Try {
  script: Script;
  keys: string[];
  /** The script's ARGV for the try's fresh value; the line's arguments are appended after them. */
  args(value: string): string[];
  /** The keys a grant holds on a node: what a failed try releases there. */
  holds: string[];
  /** The release a failed try is undone with (keys: `holds`; args: value). The mutex's RELEASE unless given. */
  release?: Script;
  /** A waiter's undo where its place in line must be kept, or left (a reader's: its release with a lease). */
  requeue?: { script?: Script; leave?: Script };
}

/** The state a won grant hands to {@link LockStrategy.build}: its validity, its replies still out, its line. */
export type HeldState = Omit<LockState, "value" | "released" | "keys">;

/**
 * What a kind of lock gives the acquisition: the strategy {@link acquire} runs.
 * @example
 * ```ts
 * const mutex: LockStrategy<Lock> = {
 *   kind: "lock", resources: keys, ttl, line, leaveKeys: keys,
 *   next: () => ({ script: ACQUIRE, keys, args: (value) => [value, String(ttl), "1"], holds: keys }),
 *   build: (grant, attempts, state) => new Lock(keys, grant.value, attempts, undefined, state),
 * };
 * ```
 */
export interface LockStrategy<T extends Lock> {
  kind: LockKind;
  /** What errors and events name. */
  resources: readonly string[];
  ttl: number;
  /** Its place in line (fair), or none (random retry). */
  line?: Line;
  /** The keys a waiter that gives up leaves the line with (LEAVE's KEYS before the queues). */
  leaveKeys: readonly string[];
  /** A fenced kind: the keys the write-back round checks, and their fence counters. */
  fenced?: { keys: readonly string[]; fenceKeys: readonly string[] };
  /** The next try; `first` on each attempt's first (a semaphore starts its set of tried slots again). */
  next(first: boolean): Try;
  /** After a refused try: whether the same attempt tries again at once (a semaphore's other slot). */
  again?(round: Round): boolean;
  /** What a won grant builds. */
  build(grant: Grant, attempts: number, state: HeldState, fence?: string): T;
}

/** What the kinds share: the rounds over the nodes and the lifecycle of what they hold. */
export interface Machinery {
  rounds: Rounds;
  lifecycle: Lifecycle;
}

/** A failed attempt: its tally, the undo of what it may have set, and how long the line says to wait. */
interface Failed {
  failed: AttemptTally;
  cleanup: Promise<void>;
  waitMs?: number;
  /** A split vote's partial grants are undone before the retry, so the next round finds the key free. */
  settleFirst?: boolean;
}

/**
 * Acquires what `strategy` describes: each attempt draws a fresh value, sends the script to every node at once
 * (decided as soon as a quorum granted or no longer can), and holds iff a quorum granted with validity left. A
 * failed attempt is undone on every node it may have reached, then retried after the wait the line gives (or
 * `retryDelay ± retryJitter`), until held or out of retries, `maxWait` or the signal. Events go to the
 * Redlock's `onEvent`.
 * @throws {LockAcquisitionError} with every attempt's tally when none held.
 * @example
 * ```ts
 * const lock = await acquire(machinery, mutex, checkRetryPolicy(options, redlock.options), "lock");
 * ```
 */
export async function acquire<T extends Lock>(
  machinery: Machinery,
  strategy: LockStrategy<T>,
  policy: RetryPolicy,
  what: "lock" | "permit",
): Promise<T> {
  const { rounds, lifecycle } = machinery;
  const { clock } = rounds;
  const { signal, maxWait } = policy;
  const report = acquireReport(lifecycle.emit, strategy.kind, strategy.resources, clock);
  // A waiter: a fair acquisition that may retry (a single try respects the line, but never joins it).
  const waiter = policy.fair ? strategy.line : undefined;
  const spend = new Spend(rounds.nodes.length, strategy, policy, waiter !== undefined);
  const began = clock.now();
  const tallies: AttemptTally[] = [];
  const cleanups: Promise<void>[] = [];
  let failures = 0;
  let held: T | undefined;
  let budget: RequestBudget | undefined;
  try {
    try {
      for (let n = 1; ; n++) {
        signal?.throwIfAborted();
        const outcome = await attempt(machinery, strategy, policy, n, report, spend);
        cleanups.push(outcome.cleanup);
        if ("held" in outcome) {
          held = outcome.held;
          break;
        }
        tallies.push(outcome.failed);
        signal?.throwIfAborted();
        // Nodes that fail are not asked again at once, whatever the line says: an outage must not become a flood.
        failures = failureReason(outcome.failed) === "unreachable" ? failures + 1 : 0;
        const delay = failures > 0 ? backoff(policy, failures, outcome.waitMs) : (outcome.waitMs ?? randomWait(policy));
        // The signal, then the request budget, then maxWait decide; retryCount only when no maxWait is given.
        budget = spend.exhausted();
        if (budget) break;
        if (maxWait !== undefined) {
          // A holder's PTTL says when it must be gone, not when it goes: only the caller's time decides the end.
          if (clock.now() - began + delay > maxWait) break;
        } else if (policy.retryCount !== -1 && n > policy.retryCount) {
          // Informed waits are short and many: the retries then also buy time (retryCount × retryDelay).
          const timeLeft =
            outcome.waitMs !== undefined && clock.now() - began + delay <= policy.retryCount * policy.retryDelay;
          if (!timeLeft) break;
        }
        if (report) {
          const ahead = queuePosition(outcome.failed.votes);
          report.retry(outcome.failed, delay, ahead === undefined ? undefined : ahead + 1);
        }
        if (outcome.settleFirst) await outcome.cleanup;
        await clock.sleep(delay, signal);
      }
    } finally {
      await Promise.all(cleanups);
      // Best effort, not waited for (each request is bounded by nodeTimeout): an entry it misses expires.
      if (!held && waiter) void lifecycle.leave(strategy.leaveKeys, waiter.queues, waiter.ticket);
    }
    if (held) {
      lockState(held).requests = spend.sent;
      report?.held(held);
      return held;
    }
    const error = new LockAcquisitionError(strategy.resources, tallies, what, budget);
    // A lock's refusal names the nodes by their labels; a permit's message stays as it is.
    if (what === "permit") throw error;
    const labels = rounds.nodes.map((node) => node.label);
    throw nameNodes(error, labels, clock.now() - began);
  } catch (error) {
    report?.failed(error);
    throw error;
  }
}

/** How far the wait after failing nodes grows: up to this many times `retryDelay`. */
const BACKOFF_MAX_FACTOR = 8;

/**
 * The wait after the `failures`-th attempt in a row that nodes failed (errors, timeouts: no quorum possible):
 * `retryDelay ± retryJitter`, doubled with each further failure up to {@link BACKOFF_MAX_FACTOR} times, and never
 * shorter than what the line said.
 */
function backoff(policy: RetryPolicy, failures: number, informed: number | undefined): number {
  const factor = Math.min(BACKOFF_MAX_FACTOR, 2 ** (failures - 1));
  return Math.max(informed ?? 0, factor * randomWait(policy));
}

/**
 * The requests one acquisition has sent, against its `maxRequests`. A try is counted at its most before it is
 * sent (its round, a fencing write-back, the undoing of every node that did not refuse), and leaving the line is
 * kept in reserve, so the cap is never passed halfway.
 */
class Spend {
  sent = 0;
  readonly #nodes: number;
  readonly #max: number | undefined;
  /** The most one try may send: its round, a write-back, its undo. */
  readonly #try: number;
  readonly #reserve: number;

  constructor(nodes: number, strategy: LockStrategy<Lock>, policy: RetryPolicy, waits: boolean) {
    this.#nodes = nodes;
    this.#max = policy.maxRequests;
    this.#try = nodes * (strategy.fenced ? 3 : 2);
    this.#reserve = waits ? nodes : 0;
    if (this.#max !== undefined && this.#max < this.#try + this.#reserve)
      throw new InvalidArgumentError(
        "options.maxRequests",
        `must allow one attempt: at least ${this.#try + this.#reserve} with ${nodes} nodes` +
          `${strategy.fenced ? ", fencing" : ""}${waits ? " and waiting in line" : ""}`,
      );
  }

  /** Whether another try fits. */
  affords(): boolean {
    return this.#max === undefined || this.sent + this.#try + this.#reserve <= this.#max;
  }

  /** When the next try does not fit: what the error says. */
  exhausted(): RequestBudget | undefined {
    if (this.affords() || this.#max === undefined) return undefined;
    return { maxRequests: this.#max, sent: this.sent, next: this.#try + this.#reserve };
  }

  /** A try's round went out, with or without its write-back; `undo`: the nodes its undoing may ask. */
  spent(round: number, writeBack: boolean, undo: number): void {
    this.sent += round + (writeBack ? this.#nodes : 0) + undo;
  }
}

/**
 * One attempt: its tries (one, or a semaphore's several slots) until one holds or none is left to try. A failed
 * try is undone where it may have landed; a waiter's last one keeps its place in line there (see
 * `Lifecycle.failed`).
 */
async function attempt<T extends Lock>(
  { rounds, lifecycle }: Machinery,
  strategy: LockStrategy<T>,
  policy: RetryPolicy,
  n: number,
  report: ReturnType<typeof acquireReport>,
  spend: Spend,
): Promise<{ held: T; cleanup: Promise<void> } | Failed> {
  const { ttl, line, fenced } = strategy;
  const waiter = policy.fair ? line : undefined;
  const cleanups: Promise<void>[] = [];
  for (let first = true; ; first = false) {
    const current = strategy.next(first);
    const lineArgs = line?.args(policy.fair) ?? [];
    // Steps 1–4: a fresh value, t1, the script to every node at once, decided early.
    const grant = await rounds.grant(
      current.script,
      current.keys,
      (value) => [...current.args(value), ...lineArgs],
      policy.signal,
    );
    let round = grant.round;
    let fence: string | undefined;
    const writeBack = fenced !== undefined && rounds.holds(round, ttl, grant.start);
    if (writeBack)
      ({ round, fence } = await writeBackFence(rounds, grant, fenced.keys, fenced.fenceKeys, policy.signal));
    // Step 5: held iff a quorum granted and validity = ttl − elapsed − drift is left.
    if (rounds.holds(round, ttl, grant.start)) {
      spend.spent(grant.round.votes.length, writeBack, 0);
      report?.won(round);
      // A single try never joined the line: its release needs no LEAVE.
      const queue = waiter ? { keys: waiter.queues, ticket: waiter.ticket } : undefined;
      const held = strategy.build(grant, n, { ...lifecycle.held(grant, ttl, strategy.kind), queue }, fence);
      // The earlier tries of this attempt are released too.
      return { held, cleanup: Promise.all(cleanups).then(() => undefined) };
    }
    // Its undo asks every node that did not refuse; a waiter's missed turn (a quorum granted, yet it failed) all.
    const nodes = grant.round.votes.length;
    const missedTurn = waiter !== undefined && grant.round.granted >= rounds.quorum;
    spend.spent(nodes, writeBack, missedTurn ? nodes : grant.round.votes.filter((v) => v.outcome !== "denied").length);
    const last = !(strategy.again?.(grant.round) ?? false) || policy.signal?.aborted === true || !spend.affords();
    // Only the last try keeps the waiter's place: an earlier one's late requeue would put it back in line beside
    // the grant of the next try.
    const requeue = last && waiter ? { ...waiter.requeue(), ...current.requeue } : undefined;
    const failure = lifecycle.failed(n, round, grant, ttl, current.holds, { release: current.release, requeue });
    cleanups.push(failure.cleanup);
    if (!last) continue;
    const cleanup = Promise.all(cleanups).then(() => undefined);
    if (!waiter) return { failed: failure.failed, cleanup };
    return {
      failed: failure.failed,
      cleanup,
      waitMs: waiter.wait(grant.round, grant.start),
      settleFirst: grant.round.granted > 0,
    };
  }
}
