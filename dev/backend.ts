// What a bridge runs commands on: a redis-server (dev/redis-backend.ts) or in-process memory nodes
// (dev/memory-backend.ts). The bridge speaks the Upstash protocol in front of either.

/**
 * A Redis error reply (what ioredis throws as `ReplyError`): the bridge answers it as the command's error.
 * Any other error means the backend could not be reached (HTTP 503).
 */
export class ReplyError extends Error {
  override name = "ReplyError";
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
  /** Told when the node-wide `rejectKeyLocking` fault changes (a backend that reads the flag itself). */
  rejectKeyLocking?(reject: boolean): void;
  /** Closes connections; the backend is not used again. */
  close(): void;
}
