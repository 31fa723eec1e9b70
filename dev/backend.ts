// What a bridge runs commands on: a redis-server (dev/redis-backend.ts) or in-process memory nodes
// (dev/memory-backend.ts). The bridge speaks the Upstash protocol in front of either.

/**
 * A Redis error reply (what ioredis throws as `ReplyError`): the bridge answers it as the command's error.
 * Any other error means the backend could not be reached (HTTP 503).
 */
export class ReplyError extends Error {
  override name = "ReplyError";
}

/** The subscription behind one SSE stream (see {@link Backend.subscribe}). */
export interface Subscription {
  /** Ends it (idempotent): from then on PUBLISH no longer counts it as a receiver. */
  close(): void;
}

/** Where a subscription's messages go. */
export interface SubscriptionHandlers {
  /** One message published on `channel` (the payload's bytes as published). */
  message(channel: string, message: Buffer): void;
  /** The backend lost the subscription (its connection closed, the node restarted); never after `close()`. */
  lost(): void;
}

/**
 * The commands a bridge sends on. Replies take the shape of ioredis' buffer API with `stringNumbers`:
 * bulk and status strings as `Buffer`s, integers as decimal strings, nil as null, arrays as arrays.
 */
export interface Backend {
  /** Resolves once commands can run (`timeoutMs` at most). */
  ready(timeoutMs?: number): Promise<void>;
  /** Runs one command (its name in any case). */
  call(command: string[]): Promise<unknown>;
  /** Runs the commands in one MULTI/EXEC: per command its error or reply; null when it was discarded. */
  transaction(commands: string[][]): Promise<[Error | null, unknown][] | null>;
  /**
   * Whether the bridge must rewrite scripts that carry Upstash's key-locking flag (plain Redis rejects the
   * flag; the bridge runs them with a guard that enforces Upstash's rules, see dev/script-flags.ts).
   */
  readonly rewritesFlaggedScripts: boolean;
  /**
   * Subscribes to `channels` for one SSE stream, on a subscription of its own (a connection of its own on
   * redis-server), so PUBLISH counts each stream as one receiver, as each of Upstash's SSE streams is. Resolves
   * once every channel is subscribed: a PUBLISH after that reaches `handlers.message`.
   */
  subscribe(channels: string[], handlers: SubscriptionHandlers): Promise<Subscription>;
  /** Told when the node-wide `rejectKeyLocking` fault changes (a backend that reads the flag itself). */
  rejectKeyLocking?(reject: boolean): void;
  /** Closes connections; the backend is not used again. */
  close(): void;
}
