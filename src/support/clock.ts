// Time as the lock sees it; replaceable so the simulator can run on a virtual clock.
import { announceAbort, announcingController, type AnnouncingController } from "./abort.ts";

/**
 * The time source of a {@link Redlock}. The default uses `performance.now()` (monotonic),
 * `Date.now()`, `setTimeout` and `AbortSignal.timeout`. Tests pass a virtual clock.
 * @example
 * ```ts
 * import { Redlock } from "edge-redlock";
 *
 * const redlock = new Redlock(nodes, { clock: systemClock });
 * ```
 */
export interface Clock {
  /** Monotonic milliseconds, for elapsed time and validity. */
  now(): number;
  /** Epoch milliseconds, for `expiresAt`. */
  epoch(): number;
  /** Waits `ms`; rejects with `signal.reason` when `signal` aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** A signal that aborts with a `TimeoutError` after `ms`, unless `clear` is called first. */
  timeout(ms: number): Deadline;
}

/** A per-request timeout that can be cleared once the request settled. */
export interface Deadline {
  /** Aborts with a `TimeoutError` when the time is up. */
  signal: AbortSignal;
  /** Stops the timer (call it once the request settled). */
  clear(): void;
}

const monotonic: () => number =
  typeof performance === "object" && typeof performance.now === "function" ? () => performance.now() : () => Date.now();

/**
 * The real clock. On Cloudflare Workers both `performance.now()` and `Date.now()` stand still
 * during CPU work and advance on I/O, so the network time of a round is still measured.
 * @example
 * ```ts
 * const start = systemClock.now();
 * ```
 */
export const systemClock: Clock = {
  now: monotonic,
  epoch: () => Date.now(),
  sleep(ms, signal) {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  },
  // Not AbortSignal.timeout: its timer cannot be cleared, so every finished request would still fire
  // (and allocate) a TimeoutError later. Clearing the timer keeps a round's cost to its requests.
  timeout: sharedTimeout,
};

/** The deadlines of one timer: made in one run of synchronous code, with the same length. */
interface TimerGroup {
  readonly ms: number;
  /** Per deadline, its controller until it is cleared or aborted. */
  readonly members: (AnnouncingController | undefined)[];
  live: number;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/** The group that deadlines made now join; closed at the next microtask. */
let openGroup: TimerGroup | undefined;
const closeGroup = () => {
  openGroup = undefined;
};

function fireGroup(group: TimerGroup): void {
  group.timer = undefined;
  const reason = new DOMException("node request timed out", "TimeoutError");
  for (let i = 0; i < group.members.length; i++) {
    const controller = group.members[i];
    if (controller) announceAbort(controller, reason);
  }
  group.members.length = 0;
}

/**
 * A clearable timeout, as {@link Clock.timeout} describes it, where the deadlines made in one run of
 * synchronous code (before the next microtask) with the same `ms` share one timer: the five requests
 * of a round, or the rounds of twenty locks taken with `Promise.all`, cost one `setTimeout`, not one
 * each. Each deadline keeps its own signal and its own `clear`: a cleared one is never aborted, and the
 * timer is stopped once every deadline of the group is cleared. The group starts its timer when its
 * first deadline is made, so a later one of the same run fires at most the microseconds of that run
 * early, never late. A group never takes deadlines from a later turn (the next microtask closes it), so
 * on a Worker a timer never aborts another request's signals. The signals announce their abort
 * (support/abort.ts), so the batcher follows them without a listener each.
 */
function sharedTimeout(ms: number): Deadline {
  let group = openGroup;
  if (group === undefined || group.ms !== ms || group.timer === undefined) {
    group = { ms, members: [], live: 0, timer: undefined };
    const made = group;
    group.timer = setTimeout(() => fireGroup(made), ms);
    if (openGroup === undefined) queueMicrotask(closeGroup);
    openGroup = group;
  }
  const owner = group;
  const index = owner.members.length;
  const controller = announcingController();
  owner.members.push(controller);
  owner.live++;
  return {
    signal: controller.signal,
    clear: () => {
      if (owner.members[index] !== controller) return;
      owner.members[index] = undefined;
      if (--owner.live === 0 && owner.timer !== undefined) {
        clearTimeout(owner.timer);
        owner.timer = undefined;
      }
    },
  };
}

/**
 * Aborts when any of the given signals aborts, with that signal's reason.
 * Uses `AbortSignal.any` where the runtime has it; elsewhere its listeners on the given signals go once it aborts,
 * so abort one of them (a signal of its own) when done with it, or use {@link followSignals}.
 */
export function anySignal(signals: (AbortSignal | undefined)[]): AbortSignal {
  return followSignals(signals).signal;
}

/**
 * {@link anySignal}, with `dispose()` to stop following without aborting anything: where the runtime has no
 * `AbortSignal.any`, it takes the combination's listeners off the given signals, so a caller's long-lived signal
 * does not gather one per use (with `AbortSignal.any` there is nothing to take off, and the signal keeps following).
 */
export function followSignals(signals: (AbortSignal | undefined)[]): { signal: AbortSignal; dispose(): void } {
  const present = signals.filter((s): s is AbortSignal => s !== undefined);
  if (present.length === 1) return { signal: present[0], dispose: () => {} };
  if (typeof AbortSignal.any === "function") return { signal: AbortSignal.any(present), dispose: () => {} };
  const controller = new AbortController();
  const listeners: [AbortSignal, () => void][] = [];
  // Once it aborts, the others forget it: a long-lived signal (a caller's) does not gather one listener per use.
  const forget = () => {
    for (const [signal, listener] of listeners) signal.removeEventListener("abort", listener);
    listeners.length = 0;
  };
  for (const signal of present) {
    if (signal.aborted) {
      controller.abort(signal.reason);
      break;
    }
    const listener = () => {
      controller.abort(signal.reason);
      forget();
    };
    listeners.push([signal, listener]);
    signal.addEventListener("abort", listener, { once: true });
  }
  if (controller.signal.aborted) forget();
  return { signal: controller.signal, dispose: forget };
}

/**
 * The nodes' clock as one Redlock has learned it: its own epoch plus the offset the nodes reported when they refused
 * a ticket out of step. Shared by the acquisitions of one Redlock, so only the first one pays for a wrong clock.
 * @example
 * ```ts
 * const nodeClock = new NodeClock(systemClock);
 * nodeClock.learn([Date.now() + 3_600_000]); // this host is an hour behind
 * ```
 */
export class NodeClock {
  readonly #clock: Clock;
  #offset = 0;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Epoch ms as the nodes count them. */
  epoch(): number {
    return this.#clock.epoch() + this.#offset;
  }

  /** The nodes' times, as they answered just now: the offset becomes their median's distance from this clock. */
  learn(nodeTimes: readonly number[]): void {
    if (nodeTimes.length === 0) return;
    const sorted = [...nodeTimes].sort((a, b) => a - b);
    this.#offset = sorted[Math.floor((sorted.length - 1) / 2)] - this.#clock.epoch();
  }
}
