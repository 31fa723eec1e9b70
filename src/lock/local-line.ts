// Waiters of one Redlock on the same lock take turns to wait on the nodes: the first waits in the nodes' line, the
// others wait here, in call order, and join the nodes' line when the one before them is served. Their place there is
// their ticket's, taken when they were called, so nobody is passed; what they save is the requests, streams and
// wakeups of waiting side by side with the one that will be served first anyway.
import { followSignals, type Clock } from "../support/clock.ts";

/**
 * How long a waiter waits here at most for the one before it to be served (ms); then it joins the nodes' line
 * anyway. A turn is passed by the acquisition before it, and on Workers that one may be cancelled with its request:
 * a turn never depends on it for longer than this.
 */
export const LOCAL_TURN_MS = 1_000;

/**
 * Whether this runtime lets one request wait on another's promise: not Cloudflare Workers, where a request whose only
 * pending work is another request's promise is failed as one that will never complete. There each acquisition waits
 * on the nodes itself.
 * @example
 * ```ts
 * const turns = turnsAllowed() ? new LocalLine() : undefined;
 * ```
 */
export function turnsAllowed(): boolean {
  return !(typeof navigator === "object" && navigator?.userAgent === "Cloudflare-Workers");
}

/** At most this many locks keep their holder (see {@link LocalLine.hold}); those past their validity go first. */
const HOLDERS_KEPT = 1_024;

/** The reason a waiter ends its own timer with once its turn came; it never reaches the caller. */
const TURN = new DOMException("the waiter's turn came", "AbortError");

interface Turns {
  /** The acquisition waiting on the nodes now (the one that passes the turn). */
  current: object;
  /** The ones waiting here, in call order. */
  queue: { token: object; go: () => void }[];
}

/**
 * The turns of one Redlock's waiters, per lock (its line keys). A turn is held from the call until the acquisition
 * is served or fails; the next one is then let go at once.
 * @example
 * ```ts
 * import { systemClock } from "../support/clock.ts";
 *
 * const turns = new LocalLine();
 * const leave = await turns.enter("edge-redlock:line:orders", systemClock, 5_000);
 * try {
 *   // wait on the nodes' line
 * } finally {
 *   leave();
 * }
 * ```
 */
export class LocalLine {
  readonly #locks = new Map<string, Turns>();
  /** Per lock, how to wake this Redlock's acquisitions waiting on the nodes for it. */
  readonly #bells = new Map<string, Set<{ ticket: () => string; bell: () => void }>>();

  /** Per lock, the latest lock of this Redlock on it (a mutex has one holder at most). */
  readonly #holders = new Map<string, { readonly validityMs: number }>();

  /**
   * Turns the current one's turn over without waiting when nobody of this Redlock waits for `lock`: the function that
   * ends the turn, or undefined (then {@link LocalLine.enter} waits for it).
   */
  take(lock: string): (() => void) | undefined {
    if (this.#locks.has(lock)) return undefined;
    const token = {};
    this.#locks.set(lock, { current: token, queue: [] });
    return () => this.#leave(lock, token);
  }

  /** Notes that `held`, a lock of this Redlock, holds `lock` (see {@link LocalLine.heldHere}). */
  hold(lock: string, held: { readonly validityMs: number }): void {
    if (this.#holders.size >= HOLDERS_KEPT) {
      for (const [name, holder] of this.#holders) if (holder.validityMs <= 0) this.#holders.delete(name);
      if (this.#holders.size >= HOLDERS_KEPT) this.#holders.delete(this.#holders.keys().next().value as string);
    }
    this.#holders.set(lock, held);
  }

  /** Whether a lock of this Redlock holds `lock` now, within its validity and not released. */
  heldHere(lock: string): boolean {
    const holder = this.#holders.get(lock);
    return holder !== undefined && holder.validityMs > 0;
  }

  /**
   * Wakes the one of this Redlock's acquisitions waiting on the nodes for `lock` with the smallest ticket (the first
   * of them in line): a lock of this Redlock on it was just released. One, not all: a release frees the resource for
   * one waiter, and every waiter asking at each release would cost a round each, per release. In the same process,
   * so it does not depend on a subscription being open yet; like a wakeup, only a hint.
   */
  ring(lock: string): void {
    this.#holders.delete(lock);
    const bells = this.#bells.get(lock);
    if (bells === undefined) return;
    let first: { ticket: () => string; bell: () => void } | undefined;
    for (const entry of bells) if (first === undefined || entry.ticket() < first.ticket()) first = entry;
    first?.bell();
  }

  /** Has `bell` called when {@link LocalLine.ring} rings `lock` and `ticket` is the smallest, until stopped. */
  listen(lock: string, ticket: () => string, bell: () => void): () => void {
    const bells = this.#bells.get(lock) ?? new Set<{ ticket: () => string; bell: () => void }>();
    this.#bells.set(lock, bells);
    const entry = { ticket, bell };
    bells.add(entry);
    return () => {
      bells.delete(entry);
      if (bells.size === 0 && this.#bells.get(lock) === bells) this.#bells.delete(lock);
    };
  }

  /**
   * Resolves when it is this caller's turn for `lock`: at once when nobody of this Redlock waits for it, else when
   * the one before is served or failed, or after {@link LOCAL_TURN_MS} (`limitMs` if shorter). Rejects with the
   * signal's reason when `signal` aborts first. The function it resolves with ends the turn (call it once).
   */
  async enter(lock: string, clock: Clock, limitMs: number, signal?: AbortSignal): Promise<() => void> {
    signal?.throwIfAborted();
    const token = {};
    const leave = () => this.#leave(lock, token);
    const turns = this.#locks.get(lock);
    if (turns === undefined) {
      this.#locks.set(lock, { current: token, queue: [] });
      return leave;
    }
    // Resolved by the acquisition before, which may run in another request: a promise, not a timer of ours.
    let go!: () => void;
    const given = new Promise<void>((resolve) => (go = resolve));
    const entry = { token, go };
    turns.queue.push(entry);
    const own = new AbortController();
    const both = followSignals([signal, own.signal]);
    try {
      await Promise.race([given, clock.sleep(Math.min(LOCAL_TURN_MS, Math.max(0, limitMs)), both.signal)]);
    } catch (error) {
      if (signal?.aborted) {
        this.#drop(lock, entry);
        // The turn may have come in the same task: it goes on to the next one.
        leave();
        throw signal.reason;
      }
      throw error;
    } finally {
      own.abort(TURN);
      both.dispose();
    }
    // Given, or taken when the time was up: the one before, when it ends, then passes nothing.
    this.#drop(lock, entry);
    const now = this.#locks.get(lock);
    if (now === undefined) this.#locks.set(lock, { current: token, queue: [] });
    else now.current = token;
    // The turn and the caller's abort came in the same task: the turn goes on to the next one.
    if (signal?.aborted) {
      leave();
      throw signal.reason;
    }
    return leave;
  }

  /** How many locks have waiters of this Redlock (for tests: none is kept once its waiters are gone). */
  get size(): number {
    return this.#locks.size + this.#bells.size + this.#holders.size;
  }

  #drop(lock: string, entry: { token: object }): void {
    const turns = this.#locks.get(lock);
    if (turns === undefined) return;
    const at = turns.queue.indexOf(entry as Turns["queue"][number]);
    if (at >= 0) turns.queue.splice(at, 1);
  }

  #leave(lock: string, token: object): void {
    const turns = this.#locks.get(lock);
    if (turns === undefined || turns.current !== token) return;
    const next = turns.queue.shift();
    if (next === undefined) {
      this.#locks.delete(lock);
      return;
    }
    turns.current = next.token;
    next.go();
  }
}
