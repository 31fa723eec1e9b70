// The bridge's backend on a real redis-server, through ioredis.
import { Redis } from "ioredis";
import type { Backend, Subscription, SubscriptionHandlers } from "./backend.ts";

/**
 * One redis-server: a shared connection for single commands and pipelines (their members go one by
 * one, so other clients' commands can land between them), connections of their own for MULTI/EXEC, and
 * one connection per subscription stream (so PUBLISH, from a client or from inside a script, counts and
 * reaches each stream as redis-server counts its subscribed connections).
 * @example
 * const bridge = new Bridge({ backend: new RedisBackend(6379), token });
 */
export class RedisBackend implements Backend {
  readonly rewritesFlaggedScripts = true;
  readonly port: number;
  #shared: Redis;
  #idle: Redis[] = [];
  #all = new Set<Redis>();

  constructor(port: number) {
    this.port = port;
    this.#shared = this.#connection(false);
  }

  async ready(timeoutMs = 5_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.#shared.status !== "ready") {
      if (Date.now() > deadline) throw new Error(`bridge could not reach redis-server on port ${this.port}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  call(command: string[]): Promise<unknown> {
    return this.#shared.callBuffer(...upper(command));
  }

  async transaction(commands: string[][]): Promise<[Error | null, unknown][] | null> {
    const conn = await this.#dedicated();
    try {
      const tx = conn.multi();
      for (const command of commands) tx.callBuffer(...upper(command));
      return await tx.exec();
    } finally {
      this.#idle.push(conn);
    }
  }

  async subscribe(channels: string[], handlers: SubscriptionHandlers): Promise<Subscription> {
    // No reconnect: a subscriber that reconnected would have missed messages silently; the stream ends instead.
    const conn = this.#connection(true, false);
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      this.#all.delete(conn);
      conn.disconnect();
    };
    try {
      await conn.connect();
      await conn.subscribe(...channels);
    } catch (error) {
      close();
      throw error;
    }
    conn.on("messageBuffer", (channel: Buffer, message: Buffer) => handlers.message(channel.toString("utf8"), message));
    conn.once("end", () => {
      if (closed) return;
      close();
      handlers.lost();
    });
    return { close };
  }

  close(): void {
    for (const conn of this.#all) conn.disconnect();
  }

  #connection(lazy: boolean, reconnect = true): Redis {
    const conn = new Redis({
      host: "127.0.0.1",
      port: this.port,
      lazyConnect: lazy,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      // Integer replies as decimal strings (bulk strings are Buffers): no precision lost beyond 2^53.
      stringNumbers: true,
      retryStrategy: reconnect ? () => 50 : () => null,
      autoResubscribe: false,
    });
    conn.on("error", () => {});
    this.#all.add(conn);
    return conn;
  }

  /** A connection nobody else uses while a transaction is open on it. */
  async #dedicated(): Promise<Redis> {
    const idle = this.#idle.pop();
    if (idle && idle.status === "ready") return idle;
    if (idle) {
      this.#all.delete(idle);
      idle.disconnect();
    }
    const conn = this.#connection(true);
    await conn.connect();
    return conn;
  }
}

/** Upper case: ioredis reshapes the replies of some lower-case names (hgetall into an object). */
function upper(command: string[]): [string, ...string[]] {
  const [name, ...args] = command;
  return [name.toUpperCase(), ...args];
}
