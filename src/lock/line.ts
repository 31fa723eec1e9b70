// A fair acquisition's place in line: its queue keys, its ticket, and how a failed attempt keeps or leaves it.
import type { Round } from "../quorum/fan-out.ts";
import { fairWait, type LinePace } from "./wait.ts";
import { RESERVED_PREFIX, WAITER_LEASE_MS } from "../options.ts";
import type { Script } from "../scripts/script.ts";
import type { Clock } from "../support/clock.ts";
import { randomUnit, waiterTicket } from "../support/random.ts";

/** Prefix of the wait-queue keys on the lock nodes (one sorted set per resource). */
export const QUEUE_PREFIX = `${RESERVED_PREFIX}queue:`;

/** Prefix of a semaphore's wait-queue key (apart from the resources' queues: a resource may be named `semaphore:…`). */
export const SEMAPHORE_QUEUE_PREFIX = `${RESERVED_PREFIX}semaphore-queue:`;

/**
 * The wait-queue key of a resource (or of a semaphore) on the lock nodes.
 * @example
 * ```ts
 * queueKey("orders:42"); // "edge-redlock:queue:orders:42"
 * ```
 */
export function queueKey(resource: string): string {
  return QUEUE_PREFIX + resource;
}

/**
 * The longest time between two runs of a waiter's attempts on one node: well inside its lease, so its entry
 * never lapses. A node sees the next attempt about (the round's duration + the wait) after this one.
 */
const WAIT_CAP_MS = (WAITER_LEASE_MS * 2) / 3;

/**
 * How a fair waiter's failed attempt puts it back in line where it was granted: its queues, ticket and lease, and the
 * script that releases and re-queues (keys: the held keys then the queues; args: value, ticket, lease). `REQUEUE`
 * unless given: a reader's is `RW_READ_RELEASE` with a lease. For an attempt that missed its turn, `leave` releases
 * and takes the ticket out instead (args: value, ticket; `LEAVE` unless given, a reader's is `RW_READ_RELEASE`), and
 * `renew` gives the waiter a new ticket. What `Lifecycle.failed` takes; made by {@link Line.requeue}.
 */
export interface Requeue {
  queues: readonly string[];
  ticket: string;
  lease: string;
  script?: Script;
  leave?: Script;
  renew(): void;
}

/**
 * One acquisition's place in line: a ticket fixed at its first attempt and sent unchanged to every node on
 * every attempt, and the pace of the line it has seen so far.
 * @example
 * ```ts
 * const line = new Line(clock, [queueKey("k")]);
 * const args = [value, String(ttl), "1", ...line.args(true)];
 * ```
 */
export class Line {
  readonly queues: string[];
  readonly #clock: Clock;
  readonly #kind: string;
  #ticket: string;
  readonly #pace: LinePace = {};
  /** The longest round this waiter has seen (ms): its lease must outlast the time between two of its runs on a node. */
  #slowest = 0;

  /**
   * A place in `queues`, its ticket taken now. `kind` is appended to the ticket where waiters of different kinds
   * share a queue (a read-write lock's `r` and `w`): tickets are fixed-width, so it never changes the order.
   */
  constructor(clock: Clock, queues: readonly string[], kind = "") {
    this.#clock = clock;
    this.#kind = kind;
    this.#ticket = waiterTicket(clock.epoch()) + kind;
    this.queues = [...queues];
  }

  /** The ticket every attempt sends, until {@link Line.renew}. */
  get ticket(): string {
    return this.#ticket;
  }

  /**
   * A new ticket, taken now: the place at the back of the line of a waiter that missed its turn (an attempt whose grant
   * round won a quorum yet failed, whose undo took the old ticket out). Kept, such a waiter would be served first
   * again on its next attempt, and one whose rounds always end too late would hold everyone back until it gave up.
   */
  renew(): void {
    this.#ticket = waiterTicket(this.#clock.epoch()) + this.#kind;
  }

  /**
   * The fair scripts' ARGV after value, ttl and n/slot: ticket, lease, and whether to join the line. The lease is
   * {@link WAITER_LEASE_MS}, or twice the slowest round seen when that is longer: a node sees the next attempt about
   * a round after this one once a round takes longer than the wait cap, and over links slower than the lease a
   * fixed lease lapsed between every two runs, so anyone could overtake the waiter there, every time.
   */
  args(enqueue: boolean): string[] {
    const lease = Math.max(WAITER_LEASE_MS, Math.ceil(2 * this.#slowest));
    return [this.ticket, String(lease), enqueue ? "1" : "0"];
  }

  /**
   * What the undoing of a failed attempt needs to put this waiter back in line where the attempt was granted (the
   * grant took its ticket out there): its queues, its ticket, its lease; or, when it missed its turn, to renew the
   * ticket (see `Lifecycle.failed`).
   */
  requeue(): Requeue {
    const [ticket, lease] = this.args(true);
    return { queues: this.queues, ticket, lease, renew: () => this.renew() };
  }

  /** The wait before the next attempt after a refused round that started at `start` (see {@link fairWait}). */
  wait(round: Round, start: number): number {
    const now = this.#clock.now();
    const roundMs = now - start;
    this.#slowest = Math.max(this.#slowest, roundMs);
    return fairWait(round.votes, round.granted, {
      now,
      roundMs,
      // The round's own time counts against the cap: with slow nodes (a 130 ms round trip) a wait of the
      // whole cap let the entry lapse between two runs on a node, and the waiter lost its place there.
      cap: Math.max(0, WAIT_CAP_MS - roundMs),
      pace: this.#pace,
      random: randomUnit,
    });
  }
}
