// Aborts that announce themselves to one watcher, so the lock's own requests are followed without an
// event listener each (in Node a signal's first listener allocates its listener map: ~1.4 µs and garbage
// per request, the largest single cost of a batched request before this).

const WATCHER = Symbol("edge-redlock.abortWatcher");

/** Who follows an announcing signal: told once, after the signal aborted. */
export interface AbortWatcher {
  aborted(signal: AbortSignal): void;
}

type Announcing = AbortSignal & { [WATCHER]?: AbortWatcher | null };

declare const ANNOUNCING: unique symbol;

/**
 * An abort controller whose only way to abort is {@link announceAbort}: it has no `abort` method in its type,
 * so a direct `controller.abort()` (which would leave the watcher untold) does not compile.
 */
export type AnnouncingController = { readonly signal: AbortSignal; readonly [ANNOUNCING]: true };

/**
 * A controller whose signal announces its abort to the watcher set with {@link watchAbort}. Abort it with
 * {@link announceAbort}: its type has no `abort`.
 * @example
 * ```ts
 * const request = announcingController();
 * announceAbort(request, new DOMException("round decided", "AbortError"));
 * ```
 */
export function announcingController(): AnnouncingController {
  const controller = new AbortController();
  (controller.signal as Announcing)[WATCHER] = null;
  return controller as unknown as AnnouncingController;
}

/**
 * Aborts `controller` (its signal's listeners run as usual), then tells its signal's watcher, if any.
 */
export function announceAbort(announcing: AnnouncingController, reason: unknown): void {
  const controller = announcing as unknown as AbortController;
  if (controller.signal.aborted) return;
  controller.abort(reason);
  const signal = controller.signal as Announcing;
  const watcher = signal[WATCHER];
  if (watcher) {
    signal[WATCHER] = null;
    watcher.aborted(signal);
  }
}

/**
 * Follows `signal`'s abort without a listener, if it is an announcing signal nobody watches yet: true
 * then, and `watcher.aborted` is called once it aborts (unless {@link unwatchAbort} came first). False
 * for any other signal: the caller listens to its `abort` event instead.
 */
export function watchAbort(signal: AbortSignal, watcher: AbortWatcher): boolean {
  const announcing = signal as Announcing;
  if (announcing[WATCHER] !== null) return false;
  announcing[WATCHER] = watcher;
  return true;
}

/**
 * Stops following `signal` (set with {@link watchAbort}); nothing for another watcher's signal.
 */
export function unwatchAbort(signal: AbortSignal, watcher: AbortWatcher): void {
  const announcing = signal as Announcing;
  if (announcing[WATCHER] === watcher) announcing[WATCHER] = null;
}
