// An acquisition's place in line: its line keys, its ticket (timed by the nodes' clock), how long its entry lives,
// and how a failed attempt keeps or leaves its place.
import type { Round } from "../quorum/fan-out.ts";
import { RESERVED_PREFIX, type RetryPolicy } from "../options.ts";
import { CLOCK_STEP_MS } from "../scripts/queue.ts";
import type { Script } from "../scripts/script.ts";
import type { NodeVote, Vote } from "../scripts/vote.ts";
import type { Clock, NodeClock } from "../support/clock.ts";
import { waiterTicket } from "../support/random.ts";

/** Prefix of the line keys on the lock nodes (one sorted set per resource). */
export const LINE_PREFIX = `${RESERVED_PREFIX}line:`;

/** Prefix of a semaphore's line key (apart from the resources' lines: a resource may be named `semaphore:…`). */
export const SEMAPHORE_LINE_PREFIX = `${RESERVED_PREFIX}semaphore-line:`;

/** How long a woken first in line has to claim before the next is served (ms). */
export const CLAIM_MS = 200;

/** A waiter with no `maxWait` asks again at least this often, so its entry never lapses (ms). */
export const HEARTBEAT_MS = 10_000;

/** How much longer than the waiter's own deadline its entry lives (ms): covers one round and the clocks' step. */
const ENTRY_MARGIN_MS = 2_000;

/**
 * The line key of a resource on the lock nodes.
 * @example
 * ```ts
 * lineKey("orders:42"); // "edge-redlock:line:orders:42"
 * ```
 */
export function lineKey(resource: string): string {
  return LINE_PREFIX + resource;
}

/**
 * How a waiter's failed attempt puts it back in line where it was granted: its lines, ticket and entry life, and
 * the script that releases and re-queues (keys: the held keys then the lines; args: value, ticket, life). `REQUEUE`
 * unless given: a reader's is `RW_READ_RELEASE` with a life. For an attempt that missed its turn, or whose ticket
 * was out of step with the nodes' clock (`stale`), `leave` releases and takes the ticket out instead (args: value,
 * ticket; `LEAVE` unless given), and `renew` gives the waiter a new ticket. What `Lifecycle.failed` takes.
 */
export interface Requeue {
  queues: readonly string[];
  ticket: string;
  lease: string;
  script?: Script;
  leave?: Script;
  stale?: boolean;
  renew(): void;
}

/** How an acquisition waits in line. */
export interface LineOptions {
  /** Appended to the ticket where waiters of different kinds share a line (a read-write lock's `r` and `w`). */
  kind?: string;
  /** How long it has to claim once first and woken, or once first when the resource is free (ms). */
  claimMs: number;
  /** Its `maxWait`, if any: its entry lives until then (and a margin); without, it asks every {@link HEARTBEAT_MS}. */
  maxWait?: number;
  /** Keeps its place by its own retries only (`fair: false`): its entry lives `claimMs` past each attempt. */
  retriesOnly?: boolean;
  /** The widest claim window its rounds may ask for (ms): two rounds cut at nodeTimeout, and a margin. */
  maxClaimMs?: number;
}

/**
 * Ticket renewals for the nodes' clock per acquisition: one mends a wrong client clock (and the Redlock keeps what it
 * learned for its next acquisitions); more cannot mend nodes that disagree among themselves.
 */
const CLOCK_RENEWALS = 1;

/** How far past its nodeTimeout a round may end (timers, parsing) before its times count as stale (ms). */
const STALE_SLACK_MS = 50;

/**
 * One acquisition's place in line: a ticket fixed at its first attempt and sent unchanged to every node on every
 * attempt, timed by the nodes' clock. Its form: 16 digits of epoch ms, 16 hex digits of randomness, 5 digits of the
 * claim window, then the kind; tickets compare as strings in order of arrival.
 */
export class Line {
  readonly queues: string[];
  #claimMs: number;
  readonly #clock: Clock;
  readonly #nodeClock: NodeClock;
  readonly #options: LineOptions;
  readonly #began: number;
  #ticket = "";
  #takenAt = 0;
  /** The claim window widened since the ticket was taken: the next renewal keeps the ticket's place. */
  #widened = false;
  /** Whether this acquisition learned the nodes' time from fewer than a quorum of them (allowed once). */
  #learnedFromFew = false;
  /** How many times this acquisition renewed its ticket for the nodes' clock (at most {@link CLOCK_RENEWALS}). */
  #clockRenewals = 0;

  constructor(clock: Clock, nodeClock: NodeClock, queues: readonly string[], options: LineOptions) {
    this.#clock = clock;
    this.#nodeClock = nodeClock;
    this.#options = options;
    this.#claimMs = Math.min(99_999, Math.max(0, Math.ceil(options.claimMs)));
    this.queues = [...queues];
    this.#began = clock.now();
    this.renew();
  }

  /** How long it has to claim once first and the resource is free (ms): part of its ticket. */
  get claimMs(): number {
    return this.#claimMs;
  }

  /** The ticket every attempt sends, until {@link Line.renew}. */
  get ticket(): string {
    return this.#ticket;
  }

  /**
   * A new ticket, taken now on the nodes' clock: the place at the back of the line of a waiter that missed its turn
   * (kept, it would be served first again and again), or the place in step with the nodes of one whose ticket was not.
   */
  renew(): void {
    this.#ticket =
      waiterTicket(this.#nodeClock.epoch()) + String(this.claimMs).padStart(5, "0") + (this.#options.kind ?? "");
    this.#takenAt = this.#clock.now();
  }

  /**
   * Whether a round of `roundMs` is too slow for its claim window (a woken first in line must claim within about two
   * rounds of the wakeup): then the window widens to fit, with a quarter more, and {@link Line.requeue}'s renewal
   * keeps the ticket's time and randomness, so the waiter keeps its place under a member with the wider window.
   */
  widen(roundMs: number): boolean {
    if (this.#options.retriesOnly) return false;
    // A round's requests are cut at nodeTimeout: a slower one means this client stalled (a frozen event loop), and a
    // window sized by a stall would let a waiter that then dies hold the line up that long.
    const max = this.#options.maxClaimMs ?? 99_999;
    const needed = Math.min(Math.ceil(2 * roundMs + 20), max);
    if (needed <= this.#claimMs) return false;
    // Each widening is a renewal (its old ticket leaves every node, then an attempt): the quarter more keeps the next
    // round, a little slower than this one, from asking for another.
    this.#claimMs = Math.min(99_999, max, Math.ceil(1.25 * needed));
    this.#widened = true;
    return true;
  }

  /** How long its entry should live from now (ms). */
  life(): number {
    const { maxWait, retriesOnly } = this.#options;
    if (retriesOnly) return this.claimMs + ENTRY_MARGIN_MS;
    if (maxWait === undefined) return HEARTBEAT_MS + ENTRY_MARGIN_MS;
    return Math.max(0, maxWait - (this.#clock.now() - this.#began)) + ENTRY_MARGIN_MS;
  }

  /** The fair scripts' ARGV after value, ttl and n/slot: ticket, entry life, whether to join the line, ticket age. */
  args(join: boolean): string[] {
    const age = Math.max(0, Math.round(this.#clock.now() - this.#takenAt));
    return [this.#ticket, String(Math.ceil(this.life())), join ? "1" : "0", String(age)];
  }

  /**
   * Whether `round`'s nodes refused its ticket as out of step with their clock; their time is then learned, so the
   * next ticket is in step (see {@link Requeue.stale}). It takes a quorum of such refusals, or, once per
   * acquisition, fewer that alone kept the grants from a quorum: nodes with an empty line grant any ticket, so a
   * client far off while another re-acquires at once may never meet a quorum of refusals. A minority of nodes with
   * clocks of their own then costs an honest waiter one renewal, not its place. A round decided before every node
   * answered (a failed node and two such refusals decide it) may hold the rest in its late answers: they are waited
   * for (each within its nodeTimeout). Times that reached a client stalled past `nodeTimeout` since `start` (a
   * frozen event loop, a machine too busy to read its replies) may be stale by the stall: they are learned, but the
   * renewal does not count, so the next round that did not stall can correct them.
   */
  async learn(
    round: Round,
    quorum: number,
    { start, nodeTimeout }: { start: number; nodeTimeout: number },
  ): Promise<boolean> {
    const timeOf = (vote: Vote | NodeVote) =>
      vote.outcome === "denied" && vote.nodeTime !== undefined ? [vote.nodeTime] : [];
    const staleBy = () => this.#clock.now() - start > nodeTimeout + STALE_SLACK_MS;
    let votes: (Vote | NodeVote)[] = round.votes;
    if (votes.every((v) => timeOf(v).length === 0)) return false;
    if (this.#clockRenewals >= CLOCK_RENEWALS && !staleBy()) return false;
    if (votes.some((v) => v.outcome === "unanswered"))
      votes = await Promise.all(round.votes.map((v) => (v.outcome === "unanswered" ? round.settled[v.node] : v)));
    const stale = staleBy();
    if (!stale && this.#clockRenewals >= CLOCK_RENEWALS) return false;
    const times = votes.flatMap(timeOf);
    if (times.length < quorum) {
      const granted = votes.filter((v) => v.outcome === "granted").length;
      if (this.#learnedFromFew || granted + times.length < quorum) return false;
      if (!stale) this.#learnedFromFew = true;
    }
    this.#nodeClock.learn(times);
    // A new ticket helps only if it moves. Nodes whose clocks disagree among themselves by more than the step leave
    // any time out of step on some of them, and the median of the refusing ones may swing between two times: the
    // renewals are capped, and the waiter then waits as it is (out of those nodes' lines, not out of the lock).
    const ticketNow = Number(this.#ticket.slice(0, 16)) + (this.#clock.now() - this.#takenAt);
    if (Math.abs(this.#nodeClock.epoch() - ticketNow) <= CLOCK_STEP_MS / 2) return false;
    if (!stale) this.#clockRenewals++;
    return true;
  }

  /** What the undoing of a failed attempt needs to keep or leave this waiter's place (see `Lifecycle.failed`). */
  requeue(stale = false): Requeue {
    return {
      queues: this.queues,
      ticket: this.#ticket,
      lease: String(Math.ceil(this.life())),
      stale,
      renew: () => {
        if (!this.#widened) return this.renew();
        // Same time and randomness (the same place in line), the wider window.
        this.#ticket = this.#ticket.slice(0, 32) + String(this.#claimMs).padStart(5, "0") + (this.#options.kind ?? "");
        this.#widened = false;
      },
    };
  }
}

/**
 * How an acquisition with `policy` waits in line: woken, with {@link CLAIM_MS} to claim; or with `fair: false`,
 * keeping its place by its retries, so its claim window spans one wait and one round. A fair waiter whose nodes
 * cannot subscribe (`woken: false`) asks every `retryDelay ± retryJitter` like a retrier, and takes the same window:
 * with the shorter one it would miss its turn whenever a release came early in its wait.
 */
export function lineOptions(
  policy: RetryPolicy,
  nodeTimeout: number,
  { kind, slowRoundMs = 0, woken = true }: { kind?: string; slowRoundMs?: number; woken?: boolean } = {},
): LineOptions {
  const { maxWait } = policy;
  const retryWindow = policy.retryDelay + policy.retryJitter + nodeTimeout;
  if (policy.fair || !policy.joins) {
    const maxClaimMs = 2 * nodeTimeout + 20;
    // Two slow rounds and 20 ms, and a quarter more, as a widening gives (see Line.widen).
    const fits = Math.ceil(1.25 * (2 * slowRoundMs + 20));
    const claimMs = woken ? Math.max(CLAIM_MS, Math.min(fits, maxClaimMs)) : retryWindow;
    return { kind, claimMs, maxWait, maxClaimMs: Math.max(claimMs, maxClaimMs) };
  }
  return { kind, claimMs: retryWindow, maxWait, retriesOnly: true };
}
