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
import { LEAVE, REQUEUE } from "../scripts/fair-mutex.ts";
import { FENCE } from "../scripts/fencing.ts";
import { RELEASE } from "../scripts/lock.ts";
import type { Script } from "../scripts/script.ts";
import type { RedlockNode } from "../node/node.ts";
import type { Lifecycle } from "./lifecycle.ts";
import { HEARTBEAT_MS, type Line } from "./line.ts";
import { LOCAL_TURN_MS, type LocalLine } from "./local-line.ts";
import { lockState, type Lock, type LockState } from "./lock.ts";
import { fallbackWait, queuePosition, randomWait, waitsPast } from "./wait.ts";
import { Waker } from "./waker.ts";
import { randomUnit } from "../support/random.ts";

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
  /** A waiter's undo where its place in line must be kept, or left (a reader's: its release with a life). */
  requeue?: { script?: Script; leave?: Script; queues?: readonly string[] };
}

/** The state a won grant hands to {@link LockStrategy.build}: its validity, its replies still out, its line. */
export type HeldState = Omit<LockState, "value" | "released" | "keys">;

/**
 * What a kind of lock gives the acquisition: the strategy {@link acquire} runs.
 */
export interface LockStrategy<T extends Lock> {
  kind: LockKind;
  /** What errors and events name. */
  resources: readonly string[];
  ttl: number;
  /** Its place in line (fair), or none (random retry). */
  line?: Line;
  /** The keys a waiter that gives up leaves the line with (LEAVE's KEYS before the lines). */
  leaveKeys: readonly string[];
  /** How a waiter that gives up leaves: `LEAVE` with `leaveKeys` and the lines unless given (keys, then args). */
  leave?: { script: Script; keys: readonly string[] };
  /** A fenced kind: the keys the write-back round checks, and their fence counters. */
  fenced?: { keys: readonly string[]; fenceKeys: readonly string[] };
  /** The next try; `first` on each attempt's first (a semaphore starts its set of tried slots again). */
  next(first: boolean): Try;
  /** After a refused try: whether the same attempt tries again at once (a semaphore's other slot). */
  again?(round: Round): boolean;
  /** What a won grant builds. */
  build(grant: Grant, attempts: number, state: HeldState, fence?: string): T;
}

/**
 * What the kinds share: the rounds over the nodes, the lifecycle of what they hold, and the turns its lock waiters
 * take to wait on the nodes (see {@link LocalLine}).
 */
export interface Machinery {
  rounds: Rounds;
  lifecycle: Lifecycle;
  turns?: LocalLine;
}

/** A failed attempt: its tally, the undo of what it may have set, and how long the line says to wait. */
interface Failed {
  failed: AttemptTally;
  cleanup: Promise<void>;
  /** The grant round's grants and duration, and whether its ticket was out of step: what the next wait reads. */
  granted: number;
  roundMs: number;
  stale?: boolean;
  waitMs?: number;
  /** A split vote's partial grants are undone before the retry, so the next round finds the key free. */
  settleFirst?: boolean;
  /** The nodes that answered the grant round, the fastest first. */
  answered?: readonly number[];
}

/**
 * Acquires what `strategy` describes: each attempt draws a fresh value, sends the script to every node at once
 * (decided as soon as a quorum granted or no longer can), and holds iff a quorum granted with validity left. A
 * failed attempt is undone on every node it may have reached, then retried after the wait the line gives (or
 * `retryDelay ± retryJitter`), until held or out of retries, `maxWait` or the signal. Events go to the
 * Redlock's `onEvent`.
 * @throws {LockAcquisitionError} with every attempt's tally when none held.
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
  // A waiter: an acquisition that may retry joins the line (a single try respects it, but never joins it). A fair
  // one sleeps until woken or the nodes' time is up; one with `fair: false` keeps its place by its own retries.
  const waiter = policy.joins ? strategy.line : undefined;
  const spend = new Spend(rounds.nodes, strategy, policy, waiter !== undefined);
  // Built at the first refusal: an acquisition that holds at once opens nothing and allocates nothing for it.
  let waker: Waker | undefined;
  const began = clock.now();
  const tallies: AttemptTally[] = [];
  const cleanups: Promise<void>[] = [];
  let failures = 0;
  let held: T | undefined;
  let budget: RequestBudget | undefined;
  // A lock's waiters of this Redlock wait on the nodes one at a time (see LocalLine): the others wait here.
  const turns = waiter && policy.fair && strategy.kind === "lock" ? machinery.turns : undefined;
  let endTurn: (() => void) | undefined;
  let stopListening: (() => void) | undefined;
  // Joined only where there are turns: no string built for an acquisition that never takes one.
  const lineName = turns ? (waiter as Line).queues.join("\n") : "";
  let asked = false;
  try {
    try {
      if (turns)
        endTurn = turns.take(lineName) ?? (await turns.enter(lineName, clock, maxWait ?? LOCAL_TURN_MS, signal));
      for (let n = 1; ; n++) {
        signal?.throwIfAborted();
        asked = true;
        const outcome = await attempt(machinery, strategy, policy, n, report, spend);
        cleanups.push(outcome.cleanup);
        if ("held" in outcome) {
          held = outcome.held;
          turns?.hold((waiter as Line).queues, held);
          break;
        }
        tallies.push(outcome.failed);
        signal?.throwIfAborted();
        // Nodes that fail are not asked again at once, whatever the line says: an outage must not become a flood.
        failures = failureReason(outcome.failed) === "unreachable" ? failures + 1 : 0;
        if (waiter && policy.fair && !waker) {
          waker = new Waker({
            nodes: rounds.nodes,
            clock,
            lineKey: waiter.queues[0],
            ticket: () => waiter.ticket,
            confirmWithin: rounds.options.nodeTimeout,
            signal,
            heldHere: turns ? () => turns.heldHere(waiter.queues) : undefined,
          });
          // A release by this Redlock wakes its first waiter at once, whether its streams are open yet or not.
          const nudged = waker;
          stopListening = turns?.listen(
            waiter.queues,
            () => waiter.ticket,
            () => nudged.nudge(),
          );
        }
        const position = queuePosition(outcome.failed.votes);
        if (waker && failures === 0)
          waker.listen(outcome.failed.votes, () => spend.extra(1), { position, answered: outcome.answered });
        const elapsed = clock.now() - began;
        let informed = waker ? informedWait(outcome, waker, policy, waiter as Line) : outcome.waitMs;
        // A woken waiter's fallback is only its latest time to ask: with maxWait, it asks once more at the end;
        // without, its retries buy it retryCount × retryDelay of waiting, as they would between random retries.
        const until = maxWait ?? (policy.retryCount === -1 ? undefined : policy.retryCount * policy.retryDelay);
        if (waker && informed !== undefined && until !== undefined)
          informed = Math.min(informed, Math.max(0, until - elapsed));
        let delay = failures > 0 ? backoff(policy, failures, informed) : (informed ?? randomWait(policy));
        // A back-off that would pass maxWait ends there instead: the acquisition asks once more then, and does not
        // give up while time is left (the nodes may be back).
        if (failures > 0 && maxWait !== undefined) delay = Math.min(delay, Math.max(0, maxWait - elapsed));
        // The signal, then the request budget, then maxWait decide; retryCount only when no maxWait is given.
        budget = spend.exhausted();
        if (budget) break;
        if (maxWait !== undefined) {
          // A holder's PTTL says when it must be gone, not when it goes: only the caller's time decides the end.
          if (waitsPast(maxWait, elapsed, delay)) break;
        } else if (policy.retryCount !== -1) {
          // Informed waits are short and many: the retries then also buy time (retryCount × retryDelay). A woken
          // waiter's last wait ends when that time is up; it asks once then (at least one retry), and no more.
          const bought = policy.retryCount * policy.retryDelay;
          if (waker && failures === 0 && n >= 2 && elapsed >= bought) break;
          if (n > policy.retryCount && !(outcome.waitMs !== undefined && elapsed + delay <= bought)) break;
        }
        if (report) report.retry(outcome.failed, delay, position === undefined ? undefined : position + 1);
        if (outcome.settleFirst) await outcome.cleanup;
        await (waker && failures === 0
          ? waker.sleep(delay, longestSleep(until, maxWait, elapsed))
          : clock.sleep(delay, signal));
      }
    } finally {
      // Served or given up: the next waiter of this Redlock may wait on the nodes now.
      endTurn?.();
      stopListening?.();
      waker?.close();
      await Promise.all(cleanups);
      // Best effort, not waited for (each request is bounded by nodeTimeout): an entry it misses expires. An
      // acquisition that never asked has no entry to leave.
      if (!held && waiter && asked) {
        const keys = strategy.leave?.keys ?? [...strategy.leaveKeys, ...waiter.queues];
        void lifecycle.leave(keys, waiter.ticket, strategy.leave?.script);
      }
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

/**
 * How long a woken waiter sleeps at most before it asks again on its own: the time the nodes gave (see
 * {@link fallbackWait}), within its entry's heartbeat (no `maxWait`), and no longer than `retryDelay ± retryJitter`
 * while no subscription is alive (or the nodes cannot subscribe). A stale ticket is retried at once.
 */
function informedWait(failed: Failed, waker: Waker, policy: RetryPolicy, line: Line): number {
  if (failed.stale) return 0;
  const cap = !waker.alive
    ? randomWait(policy)
    : policy.maxWait === undefined
      ? HEARTBEAT_MS
      : Number.POSITIVE_INFINITY;
  return fallbackWait(failed.failed.votes, failed.granted, {
    roundMs: failed.roundMs,
    claimMs: line.claimMs,
    cap,
    random: randomUnit,
  });
}

/**
 * The longest a woken waiter may sleep from now, however long a wakeup says the resource stays taken: until `until`
 * (its `maxWait`, then it asks once more; without one, what its retries buy), and never past its entry's heartbeat
 * without `maxWait`.
 */
function longestSleep(until: number | undefined, maxWait: number | undefined, elapsed: number): number {
  if (until === undefined) return HEARTBEAT_MS;
  return Math.max(0, maxWait !== undefined ? until - elapsed : Math.min(HEARTBEAT_MS, until - elapsed));
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

/** What a try costs when nothing is counted. */
const UNCOUNTED = { round: 0, fence: 0, undo: () => 0 };

/**
 * The requests one acquisition has sent, against its `maxRequests`. A try is counted at its most before it is
 * sent (its round, a fencing write-back, the undoing of every node that did not refuse; each request to a node as
 * that node says it may cost: two for a script it has not run yet), and leaving the line stays in reserve, so the
 * cap is never passed halfway.
 */
class Spend {
  sent = 0;
  readonly #nodes: readonly RedlockNode[];
  readonly #max: number | undefined;
  readonly #fenced: boolean;
  readonly #waits: boolean;
  /** The script of the latest try, and the undo scripts it may use. */
  #grant: Script | undefined;
  #undo: Script[] = [RELEASE, REQUEUE, LEAVE];
  readonly #leave: Script;

  constructor(nodes: readonly RedlockNode[], strategy: LockStrategy<Lock>, policy: RetryPolicy, waits: boolean) {
    this.#nodes = nodes;
    this.#max = policy.maxRequests;
    this.#fenced = strategy.fenced !== undefined;
    this.#waits = waits;
    this.#leave = strategy.leave?.script ?? LEAVE;
    const least = nodes.length * (this.#fenced ? 3 : 2) + (waits ? nodes.length : 0);
    if (this.#max !== undefined && this.#max < least)
      throw new InvalidArgumentError(
        "options.maxRequests",
        `must allow one attempt: at least ${least} with ${nodes.length} nodes` +
          `${this.#fenced ? ", fencing" : ""}${waits ? " and waiting in line" : ""}`,
      );
  }

  /** What running `script` once on every node may cost. */
  #cost(script: Script | undefined, on: readonly RedlockNode[] = this.#nodes): number {
    let n = 0;
    for (const node of on) n += script && node.requestsFor ? node.requestsFor(script) : 1;
    return n;
  }

  /** The most the next try may send, and what stays in reserve. */
  #next(): number {
    const undo = Math.max(...this.#undo.map((script) => this.#cost(script)));
    const fence = this.#fenced ? this.#cost(FENCE) : 0;
    return this.#cost(this.#grant) + fence + undo + (this.#waits ? this.#cost(this.#leave) : 0);
  }

  /** Whether another try fits. */
  affords(): boolean {
    return this.#max === undefined || this.sent + this.#next() <= this.#max;
  }

  /** When the next try does not fit: what the error says. */
  exhausted(): RequestBudget | undefined {
    if (this.#max === undefined || this.affords()) return undefined;
    return { maxRequests: this.#max, sent: this.sent, next: this.#next() };
  }

  /** Whether `count` more requests (subscriptions) fit beside the next try; counted when they do. */
  extra(count: number): boolean {
    if (this.#max !== undefined && this.sent + count + this.#next() > this.#max) return false;
    this.sent += count;
    return true;
  }

  /** What the next try will cost, taken before it is sent (a script run once costs less the next time). */
  before(attempt: Try): { round: number; fence: number; undo: (nodes: readonly number[]) => number } {
    // Without a cap nothing is counted: no work on the hot path.
    if (this.#max === undefined) return UNCOUNTED;
    this.#grant = attempt.script;
    this.#undo = [attempt.release ?? RELEASE, attempt.requeue?.script ?? REQUEUE, attempt.requeue?.leave ?? LEAVE];
    const round = this.#cost(attempt.script);
    const fence = this.#fenced ? this.#cost(FENCE) : 0;
    const undoScripts = this.#undo;
    return {
      round,
      fence,
      undo: (nodes) =>
        Math.max(
          ...undoScripts.map((script) =>
            this.#cost(
              script,
              nodes.map((i) => this.#nodes[i]),
            ),
          ),
        ),
    };
  }

  /** A try went out: its round, its write-back if any, and its undo. */
  spent(count: number): void {
    this.sent += count;
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
  const waiter = policy.joins ? line : undefined;
  const cleanups: Promise<void>[] = [];
  for (let first = true; ; first = false) {
    const current = strategy.next(first);
    const costs = spend.before(current);
    const lineArgs = line?.args(policy.joins) ?? [];
    // Steps 1–4: a fresh value, t1, the script to every node at once, decided early.
    const grant = await rounds.grant(
      current.script,
      current.keys,
      (value) => [...current.args(value), ...lineArgs],
      policy.signal,
    );
    // The grant round alone (a fenced grant's write-back is a round of its own).
    const roundMs = rounds.clock.now() - grant.start;
    let round = grant.round;
    let fence: string | undefined;
    const writeBack = fenced !== undefined && rounds.holds(round, ttl, grant.start);
    if (writeBack)
      ({ round, fence } = await writeBackFence(rounds, grant, fenced.keys, fenced.fenceKeys, policy.signal));
    // Step 5: held iff a quorum granted and validity = ttl − elapsed − drift is left.
    const won = rounds.holds(round, ttl, grant.start);
    // The slowest recent round sizes the next line's claim window (see lineOptions). A granted one counts too, so a
    // client far from its nodes joins its next line with a window that fits, but not one slower than nodeTimeout:
    // that was the client stalling, and a client that never waits would keep its wide window.
    if (!won || roundMs < rounds.options.nodeTimeout) rounds.slowRoundMs = Math.max(roundMs, 0.9 * rounds.slowRoundMs);
    if (won) {
      spend.spent(costs.round + (writeBack ? costs.fence : 0));
      report?.won(round);
      // Its release leaves the line and wakes it (a single try never joined it: taking its ticket out is a no-op).
      const queue = line ? { keys: line.queues, ticket: line.ticket } : undefined;
      const held = strategy.build(grant, n, { ...lifecycle.held(grant, ttl, strategy.kind), queue }, fence);
      // The earlier tries of this attempt are released too.
      return { held, cleanup: Promise.all(cleanups).then(() => undefined) };
    }
    // A ticket a quorum found out of step with its clock: the nodes' time is learned, the ticket renewed. A waiter
    // whose rounds are too slow for its claim window takes a wider one in the same place.
    const outOfStep =
      line !== undefined &&
      (await line.learn(grant.round, rounds.quorum, { start: grant.start, nodeTimeout: rounds.options.nodeTimeout }));
    if (outOfStep && !waiter) line?.renew();
    const stale = outOfStep || (waiter !== undefined && grant.round.granted === 0 && waiter.widen(roundMs));
    // Its undo asks every node that did not refuse; a waiter's missed turn or stale ticket asks all.
    const leaves = waiter !== undefined && (stale || grant.round.granted >= rounds.quorum);
    const undone = grant.round.votes.flatMap((v) => (leaves || v.outcome !== "denied" ? [v.node] : []));
    spend.spent(costs.round + (writeBack ? costs.fence : 0) + costs.undo(undone));
    const last =
      !(strategy.again?.(grant.round) ?? false) || stale || policy.signal?.aborted === true || !spend.affords();
    // Only the last try keeps the waiter's place: an earlier one's late requeue would put it back in line beside
    // the grant of the next try.
    const requeue = last && waiter ? { ...waiter.requeue(stale), ...current.requeue } : undefined;
    const failure = lifecycle.failed(n, round, grant, ttl, current.holds, { release: current.release, requeue });
    cleanups.push(failure.cleanup);
    if (!last) continue;
    const cleanup = Promise.all(cleanups).then(() => undefined);
    const { granted } = grant.round;
    const waitMs = outOfStep ? 0 : undefined;
    return {
      failed: failure.failed,
      cleanup,
      granted,
      roundMs,
      stale,
      waitMs,
      settleFirst: waiter !== undefined && granted > 0,
      answered: grant.round.order,
    };
  }
}
