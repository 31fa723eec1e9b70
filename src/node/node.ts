// The contract between the lock and one Redis database: what a node is, and what configures one.
import type { Script } from "../scripts/script.ts";
import type { Subscription } from "./subscribe.ts";

/**
 * One independent Redis database as the lock sees it. Implement this to plug in another transport.
 * `run` sends one script and resolves with the raw reply; it must stop when `signal` aborts.
 * @example
 * ```ts
 * const node: RedlockNode = {
 *   label: "eu-1",
 *   async run(script, keys, args, signal) {
 *     const command = ["EVAL", script.lua, keys.length, ...keys, ...args];
 *     const headers = { Authorization: `Bearer ${token}` };
 *     const response = await fetch(url, { method: "POST", headers, body: JSON.stringify(command), signal });
 *     return ((await response.json()) as { result: unknown }).result;
 *   },
 * };
 * ```
 */
export interface RedlockNode {
  /** A name for logs and tallies; never a secret. */
  readonly label: string;
  /**
   * Sends `script` with `keys` and `args`; resolves with the raw reply, rejects when `signal` aborts or the
   * request fails.
   */
  run(script: Script, keys: string[], args: string[], signal: AbortSignal): Promise<unknown>;
  /**
   * Optional: subscribes to the Pub/Sub `channel`, calling `onMessage` with each message's payload; resolves once
   * the node confirmed, rejects when it did not. Aborting `signal` ends the subscription (and cuts one that has not
   * confirmed yet). With it, a waiter in line is woken when the lock frees; without it, the waiter asks again when
   * the holder's time is up.
   */
  subscribe?(channel: string, onMessage: (payload: string) => void, signal: AbortSignal): Promise<Subscription>;
  /**
   * Optional: the most HTTP requests running `script` once may take (default 1): an acquisition's `maxRequests`
   * counts with it. For a transport that may send more than one request per script (the Upstash node sends one: an
   * EVAL the first time, EVALSHA after).
   */
  requestsFor?(script: Script): number;
}

/**
 * Where an Upstash database lives: its REST URL and token (the console's
 * `UPSTASH_REDIS_REST_URL` / `UPSTASH_REDIS_REST_TOKEN`).
 * @example
 * ```ts
 * const node: NodeConfig = { url: "https://eu1-sharp-cat-12345.upstash.io", token: env.TOKEN_1 };
 * ```
 */
export interface NodeConfig {
  /** The database's REST URL (https://…); no credentials, query or fragment. */
  url: string;
  /** The database's REST token: a secret, never logged. */
  token: string;
  /**
   * A name for messages and tallies (default `node <n>`, 1-based; `Redlock.fromEnv` names each by its
   * variable, `UPSTASH_REDIS_REST_URL_<n>`); the host is added to it. Never a secret.
   */
  label?: string;
}

/**
 * The two methods the lock needs from an `@upstash/redis` `Redis` instance (or any client like it).
 * @example
 * ```ts
 * import { Redis } from "@upstash/redis";
 *
 * const client: ScriptClient = new Redis({ url, token, retry: { retries: 0 }, enableAutoPipelining: false });
 * ```
 */
export interface ScriptClient {
  /** EVAL: runs `script` (Lua source). */
  eval(script: string, keys: string[], args: string[]): Promise<unknown>;
  /** EVALSHA: runs the script whose SHA-1 is `sha`; fails with NOSCRIPT when the node does not know it. */
  evalsha(sha: string, keys: string[], args: string[]): Promise<unknown>;
  /**
   * Optional: `@upstash/redis`'s `subscribe`. With it, waiters in line on this node are woken when the lock frees;
   * its stream's end cannot be seen, so such a subscription is trusted until the acquisition ends.
   */
  subscribe?(channels: string[]): PubSubSubscriber;
}

/**
 * What the library uses of the subscriber `@upstash/redis`'s `subscribe` returns.
 * @example
 * ```ts
 * const subscriber: PubSubSubscriber = redis.subscribe(["edge-redlock:wake:3f2a"]);
 * ```
 */
export interface PubSubSubscriber {
  /** Listens to an event of the subscriber: `subscribe` (confirmed), `message`, `error`. */
  // biome-ignore lint/suspicious/noExplicitAny: the client's listener types differ per event
  on(type: string, listener: (data: any) => void): void;
  /** Ends the subscriptions (and aborts their streams). */
  unsubscribe(channels?: string[]): Promise<void>;
}
