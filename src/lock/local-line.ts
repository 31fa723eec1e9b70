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

/** How to wake one acquisition of this Redlock, and its ticket (the smallest is woken first). */
interface Bell {
  ticket: () => string;
  bell: () => void;
}

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
  /** Per line (one resource's), how to wake this Redlock's acquisitions waiting on the nodes for it. */
  readonly #bells = new Map<string, Set<Bell>>();

  /** Per line, the latest lock of this Redlock on its resource (a resource has one holder at most). */
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

  /** Notes that `held`, a lock of this Redlock, holds each of `lines` (see {@link LocalLine.heldHere}). */
  hold(lines: readonly string[], held: { readonly validityMs: number }): void {
    if (this.#holders.size + lines.length > HOLDERS_KEPT) {
      for (const [line, holder] of this.#holders) if (holder.validityMs <= 0) this.#holders.delete(line);
      while (this.#holders.size > 0 && this.#holders.size + lines.length > HOLDERS_KEPT)
        this.#holders.delete(this.#holders.keys().next().value as string);
    }
    for (const line of lines) this.#holders.set(line, held);
  }

  /** Whether locks of this Redlock hold every one of `lines` now, within their validity and not released. */
  heldHere(lines: readonly string[]): boolean {
    return lines.every((line) => {
      const holder = this.#holders.get(line);
      return holder !== undefined && holder.validityMs > 0;
    });
  }

  /**
   * A lock of this Redlock on `lines` was just released: per line, wakes the one of this Redlock's acquisitions
   * waiting on the nodes for it with the smallest ticket (the first of them in line). One, not all: a release frees
   * the resource for one waiter, and every waiter asking at each release would cost a round each, per release. In the
   * same runtime, so it does not depend on a subscription being open yet; like a wakeup, only a hint.
   */
  ring(lines: readonly string[]): void {
    const woken = new Set<() => void>();
    for (const line of lines) {
      this.#holders.delete(line);
      let first: Bell | undefined;
      for (const entry of this.#bells.get(line) ?? []) if (!first || entry.ticket() < first.ticket()) first = entry;
      if (first) woken.add(first.bell);
    }
    for (const bell of woken) bell();
  }

  /**
   * Has `bell` called when {@link LocalLine.ring} rings one of `lines` and `ticket` is the smallest there, until the
   * function it returns is called.
   */
  listen(lines: readonly string[], ticket: () => string, bell: () => void): () => void {
    const entry: Bell = { ticket, bell };
    for (const line of lines) {
      const bells = this.#bells.get(line) ?? new Set<Bell>();
      this.#bells.set(line, bells);
      bells.add(entry);
    }
    return () => {
      for (const line of lines) {
        const bells = this.#bells.get(line);
        bells?.delete(entry);
        if (bells?.size === 0) this.#bells.delete(line);
      }
    };
  }

  /**
   * Resolves when it is this caller's turn for `lock`: at once when nobody of this Redlock waits for it, else when
   * the one before is served or failed, or after {@link LOCAL_TURN_MS} (`limitMs` if shorter). Rejects with the
   * signal's reason when `signal` aborts first. The function it resolves with ends the turn (call it once).
   */
  async enter(lock: string, clock: Clock, limitMs: number, signal?: AbortSignal): Promise<() => void> {
    signal?.throwIfAborted();
    const taken = this.take(lock);
    if (taken) return taken;
    const token = {};
    const leave = () => this.#leave(lock, token);
    // Resolved by the acquisition before, which may run in another request: a promise, not a timer of ours.
    let go!: () => void;
    const given = new Promise<void>((resolve) => (go = resolve));
    const entry = { token, go };
    this.#locks.get(lock)?.queue.push(entry);
    const own = new AbortController();
    const both = followSignals([signal, own.signal]);
    try {
      await Promise.race([given, clock.sleep(Math.min(LOCAL_TURN_MS, Math.max(0, limitMs)), both.signal)]);
    } catch {
      // Only the caller's abort ends the sleep early (its own signal aborts below, once it is over).
    } finally {
      own.abort(TURN);
      both.dispose();
    }
    this.#drop(lock, entry);
    // Aborted, perhaps in the same task as the turn came: a turn it was given goes on to the next one.
    if (signal?.aborted) {
      leave();
      throw signal.reason;
    }
    // Given, or taken when the time was up: the one before, when it ends, then passes nothing.
    const now = this.#locks.get(lock);
    if (now === undefined) this.#locks.set(lock, { current: token, queue: [] });
    else now.current = token;
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
