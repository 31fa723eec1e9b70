// Woken waiting: a waiter in line listens on its line's channel on a few nodes and attempts when a wakeup names
// it among those who may claim. A wakeup is only a hint: the waiter never sleeps past the time the nodes gave.
import type { RedlockNode } from "../node/node.ts";
import type { NodeVote } from "../scripts/vote.ts";
import { WAKE_PREFIX } from "../scripts/queue.ts";
import { followSignals, type Clock } from "../support/clock.ts";
import { randomUnit, toHex } from "../support/random.ts";

/**
 * How many nodes the first two in line listen on. Two: one node down or one stream cut still leaves a wakeup to
 * hear, and it costs two subrequests and two of a Worker's six connections that may wait for headers at once.
 */
export const LISTENED_NODES = 2;

/**
 * How many nodes a waiter further back listens on. One: a lost stream costs it only time (its fallback, then a new
 * subscription once it is near the head), and every wakeup of its line reaches it once, not twice.
 */
export const LISTENED_NODES_BEHIND = 1;

/** How many times one acquisition subscribes at most (its first refusal, then after streams were cut). */
const SUBSCRIBE_ROUNDS = 3;

/** Random spread on a sleep a wakeup made longer, so the waiters it reached do not ask in lockstep (ms). */
const EXTEND_JITTER_MS = 5;

/** After the claimers' windows, the next in line waits this much more before it asks (ms). */
const NEXT_MARGIN_MS = 20;

/**
 * The reason the waker's own controllers abort with (a watch or a sleep that is over, a stream it cuts): made once,
 * because an `abort()` without a reason builds a `DOMException` and its stack each time, and a waiter ends a watch on
 * most wakeups it hears. It never reaches the caller: only the acquisition's own signal's reason does.
 */
const OVER = new DOMException("the waiter is done with it", "AbortError");

/** At most this many line keys keep their channel name (see {@link wakeChannel}). */
const CHANNELS_KEPT = 256;
const channels = new Map<string, string>();

/**
 * The channel of a line's wakeups: {@link WAKE_PREFIX} and 20 hex digits of SHA-1 of the line's key, as the scripts
 * derive it (`redis.sha1hex`). Hex only, so it needs no escaping in a URL path and holds no comma.
 * @example
 * ```ts
 * await wakeChannel("edge-redlock:line:orders:42"); // "edge-redlock:wake:5b1f…"
 * ```
 */
export async function wakeChannel(lineKey: string): Promise<string> {
  // A hash per subscription is a trip through the runtime's crypto: the names of recent lines are kept. The names,
  // not promises: on Workers a promise made in one request must not be awaited in another.
  const known = channels.get(lineKey);
  if (known !== undefined) return known;
  const digest = await crypto.subtle.digest("SHA-1", new TextEncoder().encode(lineKey));
  const channel = WAKE_PREFIX + toHex(new Uint8Array(digest)).slice(0, 20);
  if (channels.size >= CHANNELS_KEPT) channels.delete(channels.keys().next().value as string);
  channels.set(lineKey, channel);
  return channel;
}

/**
 * What a wakeup means to the waiter holding `ticket`: `claim` (it is among the first `claimers` and the resource is
 * free for it), `next` after `afterMs` (it follows the claimers: it asks once their windows are over, so a claimer
 * that died is skipped), `behind` after `afterMs` (it is further back: it asks once the claimers' and the next one's
 * windows are over, so two that died in a row do not leave it waiting for the holder's time), or `held` (someone
 * claimed: any watch is over; `holdMs`, when the grant said it, bounds how long the resource stays taken unless a
 * release, which publishes, frees it sooner).
 * @example
 * ```ts
 * readWakeup("1 A00200 B00200", "B00200"); // { next: 220, after: "A00200" }
 * readWakeup("0 B00200 +2000", "B00200"); // { held: true, holdMs: 2000 }
 * ```
 */
export function readWakeup(
  payload: string,
  ticket: string,
):
  | { claim: true }
  | { next: number; after: string }
  | { behind: number; after: string }
  | { held: true; holdMs?: number }
  | undefined {
  const words = payload.split(" ");
  // Only what the scripts write: decimal digits, so "", "0x0" or "-0" are no count of claimers.
  if (!/^\d{1,3}$/.test(words[0])) return undefined;
  const claimers = Number(words[0]);
  if (claimers === 0) {
    const last = words[words.length - 1];
    const hold = words.length > 2 && /^\+\d{1,9}$/.test(last) ? Number(last.slice(1)) : 0;
    return hold > 0 ? { held: true, holdMs: hold } : { held: true };
  }
  const listed = words.slice(1);
  const at = listed.indexOf(ticket);
  if (at >= 0 && at < claimers) return { claim: true };
  const windowOf = (word: string | undefined) => (word === undefined ? 0 : Number(word.slice(32, 37)) || 0);
  let window = 0;
  for (const first of listed.slice(0, claimers)) window = Math.max(window, windowOf(first));
  const after = listed.join(" ");
  if (at === claimers) return { next: window + NEXT_MARGIN_MS, after: listed.slice(0, claimers).join(" ") };
  return { behind: window + windowOf(listed[claimers]) + 2 * NEXT_MARGIN_MS, after };
}

/**
 * Which of the nodes that answered (`eligible`) a waiter listens on, `count` of them: with two, the one that answered
 * first (`fastest`: the answer order; it is likely the first to publish a release too) and a random other; with one, a
 * random one. Random, so the line's streams spread over the nodes and nodes that lose wakeups (a cut stream, a
 * buffering proxy, a refused PUBLISH) silence only the waiters that picked them.
 * @example
 * ```ts
 * listenedNodes([0, 1, 2, 3, 4], [3, 0, 4], 2); // [3, and one of 0, 1, 2, 4]
 * ```
 */
export function listenedNodes(eligible: readonly number[], fastest: readonly number[], count: number): number[] {
  const rest = [...eligible];
  const chosen: number[] = [];
  const first = count > 1 ? fastest.find((node) => rest.includes(node)) : undefined;
  if (first !== undefined) {
    chosen.push(first);
    rest.splice(rest.indexOf(first), 1);
  }
  while (chosen.length < count && rest.length > 0)
    chosen.push(rest.splice(Math.floor(randomUnit() * rest.length), 1)[0]);
  return chosen;
}

/** What a {@link Waker} needs of its acquisition. */
export interface WakerOptions {
  nodes: readonly RedlockNode[];
  clock: Clock;
  /** The first line's key: its channel is listened on. */
  lineKey: string;
  /** The waiter's current ticket (it changes when the ticket is renewed). */
  ticket(): string;
  /** A subscription that has not confirmed within this many ms is cut. */
  confirmWithin: number;
  /** The acquisition's signal. */
  signal?: AbortSignal;
  /**
   * Whether a lock of the same Redlock holds the resource now: its release wakes the waiter directly, so a first
   * confirmation need not ask in case a release came before it.
   */
  heldHere?: () => boolean;
}

/**
 * The subscriptions of one waiting acquisition and the wakeups they bring. Each acquisition opens its own streams
 * (on Workers no stream can serve two requests) and closes them when it ends.
 */
export class Waker {
  readonly #options: WakerOptions;
  readonly #stop = new AbortController();
  #alive = 0;
  #opening = 0;
  #rounds = 0;
  /** A wakeup that named this waiter came while it was not sleeping: the next sleep ends at once. */
  #pending = false;
  #wake: (() => void) | undefined;
  /** While sleeping: moves the sleep's end to `holdMs` from now, within the sleep's limit. */
  #extend: ((holdMs: number) => void) | undefined;
  #watch: AbortController | undefined;
  /** Whose claim windows the watch waits out. */
  #watchAfter = "";
  /** Its place in line at its last refusal (0: first), as a quorum of the refusals said; undefined: in no line. */
  #position: number | undefined;
  #confirmedOnce = false;

  /** First in line: a subscription that confirms may have missed the wakeup it waits for. */
  get #head(): boolean {
    return this.#position === 0;
  }

  /**
   * In line behind the first two: a grant's `+<ttl>` may make its sleep longer. Not the first (a late copy of an
   * older grant's wakeup must not cost it its turn), not the next (it is the one that skips a claimer that died,
   * whose claim may have landed on one node only), not a waiter out of line (a ticket out of step is named by no
   * wakeup).
   */
  get #behind(): boolean {
    return this.#position !== undefined && this.#position >= 2;
  }

  constructor(options: WakerOptions) {
    this.#options = options;
  }

  /** Whether a subscription is live (confirmed, not ended): then the waiter may sleep until the nodes' time. */
  get alive(): boolean {
    return this.#alive > 0;
  }

  /**
   * Notes the waiter's place in line (`position`, 0: first) at its latest refusal, and subscribes on up to
   * {@link LISTENED_NODES} nodes that answered `votes` (and can subscribe; see {@link listenedNodes}, with `answered`
   * the order their answers came in), or {@link LISTENED_NODES_BEHIND} for a waiter at place 2 or further back, unless
   * a subscription is live or being opened. `afford()` is asked before each (a subscription is one request of the
   * budget).
   */
  listen(
    votes: readonly NodeVote[],
    afford: () => boolean,
    at: { position: number | undefined; answered?: readonly number[] },
  ): void {
    this.#position = at.position;
    if (this.#alive > 0 || this.#opening > 0 || this.#rounds >= SUBSCRIBE_ROUNDS || this.#stop.signal.aborted) return;
    const { nodes } = this.#options;
    const eligible = votes.filter(
      (v) => (v.outcome === "denied" || v.outcome === "granted") && nodes[v.node].subscribe !== undefined,
    );
    const chosen = listenedNodes(
      eligible.map((v) => v.node),
      at.answered ?? [],
      this.#behind ? LISTENED_NODES_BEHIND : LISTENED_NODES,
    );
    if (chosen.length === 0) return;
    this.#rounds++;
    for (const node of chosen) {
      if (!afford()) return;
      this.#opening++;
      void this.#subscribe(nodes[node]);
    }
  }

  async #subscribe(node: RedlockNode): Promise<void> {
    const { clock, confirmWithin, lineKey } = this.#options;
    const cut = new AbortController();
    const stop = () => cut.abort(this.#stop.signal.reason);
    this.#stop.signal.addEventListener("abort", stop, { once: true });
    const deadline = clock.timeout(confirmWithin);
    const late = () => cut.abort(deadline.signal.reason);
    deadline.signal.addEventListener("abort", late, { once: true });
    let confirmed = false;
    try {
      const channel = await wakeChannel(lineKey);
      const subscription = await (node.subscribe as NonNullable<RedlockNode["subscribe"]>)(
        channel,
        (payload) => this.#hear(payload),
        cut.signal,
      );
      deadline.signal.removeEventListener("abort", late);
      deadline.clear();
      confirmed = true;
      this.#opening--;
      this.#alive++;
      // A release between the refusal and the first confirmation was heard by nobody: the first in line asks once,
      // unless the holder is a lock of the same Redlock, whose release wakes it directly.
      if (this.#head && !this.#confirmedOnce && !this.#options.heldHere?.()) this.#ring();
      this.#confirmedOnce = true;
      await subscription.closed;
    } catch {
      // A node that cannot subscribe leaves the waiter to its other streams and its fallback.
    } finally {
      deadline.signal.removeEventListener("abort", late);
      deadline.clear();
      this.#stop.signal.removeEventListener("abort", stop);
      cut.abort(OVER);
      if (confirmed) {
        this.#alive--;
        // The last stream is gone: ask now, and from now on as often as the waiter asks without one.
        if (this.#alive === 0 && !this.#stop.signal.aborted) this.#ring();
      } else this.#opening--;
    }
  }

  #hear(payload: string): void {
    const meaning = readWakeup(payload, this.#options.ticket());
    if (!meaning) return;
    if ("claim" in meaning) {
      this.#clearWatch();
      this.#ring();
    } else if ("held" in meaning) {
      this.#clearWatch();
      // Someone just took the resource for up to holdMs: a waiter that would ask sooner (after the head's claim
      // window, when only the line stood in its way) asks then at the latest, or when a release wakes it.
      if (meaning.holdMs !== undefined && this.#behind) this.#extend?.(meaning.holdMs);
    } else this.#watchFor("next" in meaning ? meaning.next : meaning.behind, meaning.after);
  }

  /** Asks once `ms` have passed, unless someone claims first; the same claimers again do not move the watch. */
  #watchFor(ms: number, after: string): void {
    if (this.#watch && this.#watchAfter === after) return;
    this.#clearWatch();
    const watch = new AbortController();
    this.#watch = watch;
    this.#watchAfter = after;
    this.#options.clock.sleep(ms, watch.signal).then(
      () => this.#ring(),
      () => undefined,
    );
  }

  /** Asks now: the end of the current sleep, or, when not sleeping, of the next one (a hint, as a wakeup is). */
  nudge(): void {
    this.#ring();
  }

  #ring(): void {
    const wake = this.#wake;
    if (wake) wake();
    else this.#pending = true;
  }

  #clearWatch(): void {
    this.#watch?.abort(OVER);
    this.#watch = undefined;
  }

  /**
   * Waits `ms`, or less: until a wakeup names this waiter (or came since the last sleep), or its last stream ends.
   * A wakeup that says the resource was just taken for a while may make it longer, up to `limit` ms in all. Rejects
   * with the signal's reason when it aborts.
   */
  async sleep(ms: number, limit = ms): Promise<void> {
    const { clock, signal } = this.#options;
    if (this.#pending) {
      this.#pending = false;
      return;
    }
    const start = clock.now();
    let end = start + ms;
    const early = new AbortController();
    this.#wake = () => early.abort(OVER);
    this.#extend = (holdMs) => {
      end = Math.max(end, Math.min(start + limit, clock.now() + holdMs + EXTEND_JITTER_MS * randomUnit()));
    };
    const both = followSignals([signal, early.signal]);
    try {
      await clock.sleep(ms, both.signal);
      // The timer is not moved when the end moves: once it fires, the rest is slept.
      while (!early.signal.aborted && clock.now() < end - 1) await clock.sleep(end - clock.now(), both.signal);
    } catch {
      // Its own reason, not `both`'s: a wakeup in the same task may have aborted `both` first, with the waker's.
      if (signal?.aborted) throw signal.reason;
    } finally {
      this.#wake = undefined;
      this.#extend = undefined;
      // Where it is not AbortSignal.any, this takes `both`'s listener off the acquisition's signal.
      both.dispose();
    }
  }

  /** Ends every subscription and watch. */
  close(): void {
    this.#clearWatch();
    this.#wake = undefined;
    this.#stop.abort(OVER);
  }
}
