// An in-process Redis node with the semantics of the library's scripts: the project's simulator, held to
// the same replies and keys as the real scripts on real Redis (test/integration/sim-conformance.test.ts).
// Web standards only: it runs in workerd, edge runtimes, Deno, Bun and Node.
import type { RedlockNode } from "../node/node.ts";
import type { Script } from "../scripts/script.ts";

/**
 * The time a {@link MemoryNode} runs on: expiries and latencies. The default is the real clock; the
 * project's own tests pass a virtual one.
 * @example
 * ```ts
 * const clock: MemoryClock = {
 *   now: () => Date.now(),
 *   schedule: (ms, fire) => {
 *     const timer = setTimeout(fire, ms);
 *     return () => clearTimeout(timer);
 *   },
 * };
 * ```
 */
export interface MemoryClock {
  /** Milliseconds on a monotonic scale. */
  now(): number;
  /** Calls `fire` after `ms`; returns a function that cancels it. */
  schedule(ms: number, fire: () => void): () => void;
}

/**
 * How a {@link MemoryNode} answers: `up` runs the script, `down` fails like a refused connection, `hang`
 * never answers (until the caller's timeout), `garbage` answers a reply the library cannot read.
 * @example
 * ```ts
 * nodes[0].mode = "down";
 * ```
 */
export type MemoryMode = "up" | "down" | "hang" | "garbage";

/**
 * One request a {@link MemoryNode} received, for assertions.
 * @example
 * ```ts
 * expect(nodes[0].requests.map((r) => r.script)).toEqual(["acquire", "release"]);
 * ```
 */
export interface MemoryRequest {
  /** The script's name (`acquire`, `release`, `extend`, …). */
  script: string;
  /** The keys it was sent with. */
  keys: string[];
  /** When it was sent (the node's clock). */
  sentAt: number;
  /** When the script ran on the node (undefined: never ran). */
  ranAt?: number;
  /** When the caller's signal cut the request (undefined: not cut). */
  cutAt?: number;
}

/** The wall clock: `performance.now()` where it exists, timers for latency. */
const REAL_CLOCK: MemoryClock = {
  now: () => (typeof performance === "object" ? performance.now() : Date.now()),
  schedule(ms, fire) {
    const timer = setTimeout(fire, Math.max(0, ms));
    return () => clearTimeout(timer);
  },
};

/**
 * One in-memory database that runs the library's scripts (acquire, fenced acquire, release, extend, the
 * fencing write-back, semaphore, inspect) with Redis' semantics: keys with expiries, fence counters that
 * never expire. A `RedlockNode`: hand an array of them to `new Redlock(...)`. Set `mode` and `latency` to
 * make it fail or slow.
 * @example
 * ```ts
 * const nodes = [new MemoryNode("a"), new MemoryNode("b"), new MemoryNode("c")];
 * const redlock = new Redlock(nodes);
 * nodes[2].mode = "down"; // a quorum (2 of 3) still holds
 * ```
 */
export class MemoryNode implements RedlockNode {
  /** The node's name in tallies and messages. */
  readonly label: string;
  /** How the node answers (default `up`). */
  mode: MemoryMode = "up";
  /** Latency of each request in ms (the script runs when the request arrives, after this). Default 0. */
  latency: number | ((request: MemoryRequest) => number) = 0;
  /** Every request received, in order. */
  readonly requests: MemoryRequest[] = [];
  /** A request the caller gave up on still runs when it arrives (the network delivered it anyway). */
  deliverLate = false;
  /** This node's clock runs ahead (+) or behind (−) by this many ms (what its `TIME` returns). */
  clockSkewMs = 0;
  /** Fence counters: they never expire. */
  readonly counters: Map<string, bigint> = new Map<string, bigint>();
  /** The clock the node runs on. */
  readonly clock: MemoryClock;
  #store = new Map<string, { value: string; expiresAt: number }>();

  /**
   * A node named `label` on `clock` (default: the real clock).
   * @param label the node's name in tallies
   * @param clock the time expiries and latencies run on
   */
  constructor(label = "memory", clock: MemoryClock = REAL_CLOCK) {
    this.label = label;
    this.clock = clock;
  }

  /** The live value of `key`, if any. */
  get(key: string): string | undefined {
    const entry = this.#store.get(key);
    if (!entry || entry.expiresAt <= this.clock.now()) return undefined;
    return entry.value;
  }

  /** Sets `key` directly (as another holder would), expiring after `ttl` ms. */
  set(key: string, value: string, ttl: number): void {
    this.#store.set(key, { value, expiresAt: this.clock.now() + ttl });
  }

  /** Deletes `key` directly. */
  delete(key: string): void {
    this.#store.delete(key);
  }

  /** The remaining time of `key` in ms, -2 when it is absent (as Redis' PTTL). */
  pttl(key: string): number {
    const entry = this.#store.get(key);
    if (!entry || entry.expiresAt <= this.clock.now()) return -2;
    return Math.ceil(entry.expiresAt - this.clock.now()); // whole ms, as Redis answers
  }

  /** Keys with a live value. */
  liveKeys(): string[] {
    return [...this.#store.keys()].filter((key) => this.get(key) !== undefined);
  }

  /** Forgets every key and counter (a restart that lost its data). */
  flush(): void {
    this.#store.clear();
    this.counters.clear();
  }

  /** Runs `script` after the node's latency, as the mode says; rejects when `signal` aborts first. */
  run(script: Pick<Script, "name">, keys: string[], args: string[], signal: AbortSignal): Promise<unknown> {
    const request: MemoryRequest = { script: script.name, keys, sentAt: this.clock.now() };
    this.requests.push(request);
    const latency = typeof this.latency === "function" ? this.latency(request) : this.latency;
    const mode = this.mode;
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      const onAbort = () => {
        if (!this.deliverLate) cancel();
        request.cutAt = this.clock.now();
        reject(signal.reason);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      const cancel =
        mode === "hang"
          ? () => {}
          : this.clock.schedule(latency, () => {
              signal.removeEventListener("abort", onAbort);
              if (mode === "down" || this.mode === "down")
                return reject(new TypeError("fetch failed", { cause: { code: "ECONNREFUSED" } }));
              if (mode === "garbage") return resolve({ html: "<h1>502</h1>" });
              request.ranAt = this.clock.now();
              try {
                resolve(this.execute(script.name, keys, args));
              } catch (error) {
                reject(error);
              }
            });
    });
  }

  /** What the script named `name` does to the store, and its reply (as Redis would send it). */
  protected execute(name: string, keys: string[], args: string[]): unknown {
    const [value, ttlText] = args;
    const ttl = Number(ttlText);
    switch (name) {
      case "acquire":
        return this.#acquire(keys, args);
      case "fence":
        return this.#fence(keys, value, args[1]);
      case "semaphore-acquire":
        return this.#semaphore(keys, value, ttl, Number(args[2]) - 1);
      case "inspect":
        return keys.map((key) => (this.get(key) === undefined ? 0 : [this.get(key), this.pttl(key)]));
      case "release":
        return keys.filter((key) => this.get(key) === value && this.#store.delete(key)).length;
      case "extend":
        // Only where every key still holds the value; never shortens, never creates.
        for (const key of keys) if (this.get(key) !== value) return [0, this.pttl(key)];
        for (const key of keys) if (this.pttl(key) < ttl) this.set(key, value, ttl);
        return [1];
      default:
        throw new Error(`ERR memoryNodes do not run the "${name}" script`);
    }
  }

  #acquire(keys: string[], args: string[]): unknown {
    const [value, ttlText, countText] = args;
    const n = Number(countText ?? keys.length);
    const resources = keys.slice(0, n);
    const pttls = resources.map((key) => this.pttl(key)).filter((pttl) => pttl !== -2);
    if (pttls.length > 0) return [0, Math.max(...pttls)];
    let fence: bigint | undefined;
    resources.forEach((key, i) => {
      this.set(key, value, Number(ttlText));
      const counter = keys[n + i];
      if (counter === undefined) return;
      // The fenced acquire: the counter rises past the node's TIME in microseconds (see docs/SAFETY.md).
      const timeUs = BigInt(Math.max(0, Math.round((this.#epoch() + this.clockSkewMs) * 1000)));
      const incremented = (this.counters.get(counter) ?? 0n) + 1n;
      const next = incremented > timeUs ? incremented : timeUs;
      this.counters.set(counter, next);
      if (fence === undefined || next > fence) fence = next;
    });
    return fence === undefined ? [1] : [1, String(fence)];
  }

  #fence(keys: string[], value: string, tokenText: string): unknown {
    const n = keys.length / 2;
    for (const key of keys.slice(0, n)) if (this.get(key) !== value) return [0, this.pttl(key)];
    if (!this.writeBack) return [1];
    const token = BigInt(tokenText);
    for (const counter of keys.slice(n))
      if ((this.counters.get(counter) ?? 0n) < token) this.counters.set(counter, token);
    return [1];
  }

  #semaphore(keys: string[], value: string, ttl: number, slot: number): unknown {
    if (this.get(keys[slot]) === undefined) {
      this.set(keys[slot], value, ttl);
      return [1];
    }
    const free: number[] = [];
    let soonest = -1;
    keys.forEach((key, i) => {
      const pttl = this.pttl(key);
      if (pttl === -2) free.push(i);
      else if (pttl >= 0 && (soonest === -1 || pttl < soonest)) soonest = pttl;
    });
    return [0, soonest, free];
  }

  /** Whether the fencing write-back raises the counters (the project's negative controls turn it off). */
  protected get writeBack(): boolean {
    return true;
  }

  /** What the node's `TIME` says, in ms: the wall clock on the real clock, else the given clock's time. */
  #epoch(): number {
    return this.clock === REAL_CLOCK ? Date.now() : this.clock.now();
  }
}
