// Calling the user's event handler so that it can never break the lock.
import type { EventHandler, LockEvent } from "./types.ts";

/** Calls the handler with an event; absent when there is no handler, so nothing is built for nobody. */
export type Emit = (event: LockEvent) => void;

/**
 * A safe caller of `handler`, or undefined without one. A handler that throws is reported once through
 * `console.error` (with the event's type, never its content) and keeps being called.
 */
export function eventEmitter(handler: EventHandler | undefined): Emit | undefined {
  if (handler === undefined) return undefined;
  let reported = false;
  return (event) => {
    try {
      handler(event);
    } catch (error) {
      if (reported) return;
      reported = true;
      const name = String((error as { name?: unknown } | null)?.name ?? "error");
      console.error(`edge-redlock: the onEvent handler threw on a "${event.type}" event (${name}); reported once`);
    }
  };
}
