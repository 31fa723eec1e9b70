// The bridge's backend on a real redis-server, through ioredis.
import { Redis } from "ioredis";
import type { Backend } from "./backend.ts";

/**
 * One redis-server: a shared connection for single commands and pipelines (their members go one by
 * one, so other clients' commands can land between them), and connections of their own for MULTI/EXEC.
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

  close(): void {
    for (const conn of this.#all) conn.disconnect();
  }

  #connection(lazy: boolean): Redis {
    const conn = new Redis({
      host: "127.0.0.1",
      port: this.port,
      lazyConnect: lazy,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      // Integer replies as decimal strings (bulk strings are Buffers): no precision lost beyond 2^53.
      stringNumbers: true,
      retryStrategy: () => 50,
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
