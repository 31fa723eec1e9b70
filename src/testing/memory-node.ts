// An in-process Redis node with the semantics of the library's scripts: the project's simulator, held to
// the same replies and keys as the real scripts on real Redis (test/integration/sim-conformance.test.ts).
// Web standards only: it runs in workerd, edge runtimes, Deno, Bun and Node.
import type { RedlockNode } from "../node/node.ts";
import { QUEUE_EPOCH_MS } from "../scripts/queue.ts";
import type { Script } from "../scripts/script.ts";
import { ReaderSets } from "./memory-readers.ts";

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

/**
 * A subscription made by {@link MemoryNode.subscribe}, once the node confirmed it.
 * @example
 * ```ts
 * const subscription = await node.subscribe("wake:orders", (message) => console.log(message), signal);
 * await subscription.closed; // the signal aborted, or the node cut the subscription
 * ```
 */
export interface MemorySubscription {
  /**
   * Resolves when the subscription ends: its signal aborted, or the node cut it (`cutSubscriptions()`, as a
   * stream lost mid-way). No message arrives after that.
   */
  readonly closed: Promise<void>;
}

/** One listener of a channel: what `cutSubscriptions()` and its signal end. */
interface Listener {
  onMessage: (message: string) => void;
  end: () => void;
}

/** What Redis answers when a script passes a missing (nil) argument to a command. */
const LUA_ARGUMENT_ERROR = "ERR Lua redis() command arguments must be strings or integers";

/**
 * A lease argument as the queue scripts read it (`tonumber`): a number, else the script fails (Lua's `tonumber`
 * gives nil for a missing, blank or non-numeric text, and the ZADD or the addition after it fails).
 */
function leaseOf(text: string | undefined): number {
  const lease = text === undefined || text.trim() === "" ? Number.NaN : Number(text);
  if (Number.isNaN(lease)) throw new Error("ERR the lease is not a number");
  return lease;
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
 * fencing write-back, semaphore, the fair queue, the read-write lock, inspect) with Redis' semantics: keys with
 * expiries, fence counters that never expire. A `RedlockNode`: hand an array of them to `new Redlock(...)`. Set
 * `mode` and `latency` to make it fail or slow. It also has Redis' publish/subscribe (`publish`, `subscribe`),
 * with `dropMessages`, `messageDelayMs` and `cutSubscriptions()` to lose, slow or cut the messages.
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
  /**
   * Latency of each request in ms (the script runs when the request arrives, after this). Default 0. A
   * function is asked per request; a subscription asks it with the script name `subscribe`.
   */
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
  /**
   * Drop the next this many message deliveries (one PUBLISH to two subscribers is two deliveries): each is
   * counted by `publish` and never arrives, as a wakeup lost on the way. Counts down to 0 (the default).
   */
  dropMessages = 0;
  /** Each message arrives this many ms after its `publish` (default 0: on the next turn of the clock). */
  messageDelayMs = 0;
  /** Subscribers by channel. */
  readonly #channels = new Map<string, Set<Listener>>();
  #store = new Map<string, { value: string; expiresAt: number }>();
  /** Wait queues (sorted sets): ticket → deadline on the queue's own clock (QUEUE_EPOCH_MS − its PTTL). */
  #queues = new Map<string, { waiters: Map<string, number>; expiresAt: number }>();
  /** The read-write locks' reader sets. */
  readonly #readers: ReaderSets;

  /**
   * A node named `label` on `clock` (default: the real clock).
   * @param label the node's name in tallies
   * @param clock the time expiries and latencies run on
   */
  constructor(label = "memory", clock: MemoryClock = REAL_CLOCK) {
    this.label = label;
    this.clock = clock;
    this.#readers = new ReaderSets(clock);
  }

  /** The live readers of a read-write lock's reader set (value → ms left). */
  readers(key: string): Map<string, number> {
    return this.#readers.live(key);
  }

  /** The live value of `key`, if any. */
  get(key: string): string | undefined {
    const entry = this.#store.get(key);
    if (!entry || entry.expiresAt <= this.clock.now()) return undefined;
    return entry.value;
  }

  /** Sets `key` directly (as another holder would), expiring after `ttl` ms (`Infinity`: never). */
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
    if (entry.expiresAt === Number.POSITIVE_INFINITY) return -1; // no expiry
    return Math.ceil(entry.expiresAt - this.clock.now()); // whole ms, as Redis answers
  }

  /** Keys with a live value. */
  liveKeys(): string[] {
    return [...this.#store.keys()].filter((key) => this.get(key) !== undefined);
  }

  /** Forgets every key, queue and counter (a restart that lost its data). */
  flush(): void {
    this.#store.clear();
    this.#queues.clear();
    this.#readers.clear();
    this.counters.clear();
  }

  /**
   * PUBLISH: hands `message` to every subscriber of `channel` and returns how many there are (as Redis does,
   * counted when it is published, also those whose delivery `dropMessages` drops). Subscribers get it
   * later, never inside this call (after `messageDelayMs`, on the node's clock), as a script's PUBLISH
   * reaches subscribers after the script. A node that is `down` or hangs delivers nothing meanwhile.
   * A script of this node that publishes calls this from {@link MemoryNode.execute}.
   * @param channel the channel
   * @param message the payload
   * @returns the number of subscribers of `channel`
   * @example
   * ```ts
   * node.publish("wake:orders", "released"); // 1 when one subscriber listens
   * ```
   */
  publish(channel: string, message: string): number {
    const listeners = [...(this.#channels.get(channel) ?? [])];
    for (const listener of listeners) {
      if (this.dropMessages > 0) {
        this.dropMessages--;
        continue;
      }
      this.clock.schedule(this.messageDelayMs, () => {
        const live = this.#channels.get(channel)?.has(listener) ?? false;
        if (live && this.mode !== "down" && this.mode !== "hang") listener.onMessage(message);
      });
    }
    return listeners.length;
  }

  /**
   * SUBSCRIBE: `onMessage` gets every message published on `channel` from when the returned promise
   * resolves until `signal` aborts or the node cuts the subscription (see {@link MemorySubscription.closed}).
   * The node answers as its `mode` says, after its `latency`: `up` subscribes, `down` rejects as a refused
   * connection, `hang` never confirms (until `signal` aborts: then it rejects with its reason), `garbage`
   * rejects as a reply that is no subscription.
   * @param channel the channel
   * @param onMessage called with each message's payload
   * @param signal ends the subscription (before it is confirmed: the promise rejects with its reason)
   * @returns once subscribed: a PUBLISH from then on reaches `onMessage`
   * @example
   * ```ts
   * const [node] = memoryNodes(1);
   * const stop = new AbortController();
   * const woken: string[] = [];
   * await node.subscribe("wake:orders", (message) => woken.push(message), stop.signal);
   * node.publish("wake:orders", "released"); // 1
   * stop.abort(); // unsubscribes
   * ```
   */
  subscribe(channel: string, onMessage: (message: string) => void, signal?: AbortSignal): Promise<MemorySubscription> {
    const request: MemoryRequest = { script: "subscribe", keys: [channel], sentAt: this.clock.now() };
    const latency = typeof this.latency === "function" ? this.latency(request) : this.latency;
    const mode = this.mode;
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = () => {
        cancel();
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      const cancel =
        mode === "hang"
          ? () => {}
          : this.clock.schedule(latency, () => {
              signal?.removeEventListener("abort", onAbort);
              if (mode === "down" || this.mode === "down")
                return reject(new TypeError("fetch failed", { cause: { code: "ECONNREFUSED" } }));
              if (mode === "garbage") return reject(new Error("ERR the node's reply was not a subscription"));
              resolve(this.#listen(channel, onMessage, signal));
            });
    });
  }

  /**
   * Ends every open subscription now (each one's `closed` resolves), as streams cut mid-way: messages
   * published from now on reach nobody until someone subscribes again.
   * @returns how many subscriptions it ended
   * @example
   * ```ts
   * nodes[0].cutSubscriptions(); // a waiter's wakeup stream on node 1 is gone
   * ```
   */
  cutSubscriptions(): number {
    const listeners = [...this.#channels.values()].flatMap((set) => [...set]);
    for (const listener of listeners) listener.end();
    return listeners.length;
  }

  #listen(channel: string, onMessage: (message: string) => void, signal: AbortSignal | undefined): MemorySubscription {
    let ended!: () => void;
    const closed = new Promise<void>((resolve) => (ended = resolve));
    const listener: Listener = {
      onMessage,
      end: () => {
        const set = this.#channels.get(channel);
        set?.delete(listener);
        if (set?.size === 0) this.#channels.delete(channel);
        signal?.removeEventListener("abort", listener.end);
        ended();
      },
    };
    const set = this.#channels.get(channel) ?? new Set<Listener>();
    set.add(listener);
    this.#channels.set(channel, set);
    signal?.addEventListener("abort", listener.end, { once: true });
    return { closed };
  }

  /** A wait queue's entries (ticket → deadline on the queue's clock), as `ZRANGE … WITHSCORES` lists them. */
  queue(key: string): Map<string, number> | undefined {
    const queue = this.#queues.get(key);
    if (!queue || queue.expiresAt <= this.clock.now()) return undefined;
    return queue.waiters;
  }

  /** The tickets of a wait queue whose lease has not run out (what the scripts count as waiting). */
  liveWaiters(key: string): string[] {
    const queue = this.#queues.get(key);
    if (!queue || queue.expiresAt <= this.clock.now()) return [];
    const now = QUEUE_EPOCH_MS - (queue.expiresAt - this.clock.now());
    return [...queue.waiters].filter(([, deadline]) => deadline > now).map(([ticket]) => ticket);
  }

  /** A wait queue's PTTL (-2: absent). */
  queuePttl(key: string): number {
    const queue = this.#queues.get(key);
    if (!queue || queue.expiresAt <= this.clock.now()) return -2;
    return queue.expiresAt - this.clock.now();
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
      case "fair-acquire":
        return this.#fairAcquire(keys, args);
      case "fair-semaphore-acquire":
        return this.#fairSemaphore(keys, value, ttl, args);
      case "leave":
        return this.#leave(keys, value, args[1]);
      case "requeue":
        return this.#requeue(keys, value, args[1], args[2]);
      case "rw-read-acquire":
        return this.#readAcquire(keys, args);
      case "rw-write-acquire":
        return this.#writeAcquire(keys, args);
      case "rw-read-extend":
        return this.#readers.extend(keys[0], value, ttl) ? [1] : [0, -2];
      case "rw-read-release":
        return this.#readRelease(keys, value, args[1], args[2]);
      case "rw-inspect":
        return [this.get(keys[0]) ?? 0, this.pttl(keys[0]), [...this.#readers.live(keys[1])].flat()];
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
    if (pttls.length > 0) return [0, pttls.includes(-1) ? -1 : Math.max(...pttls)];
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

  /** The fair acquire: as `acquire`, and only when no live waiter of any queue has a smaller ticket. */
  #fairAcquire(keys: string[], args: string[]): unknown {
    const [value, ttlText, countText, ticket, leaseText, join] = args;
    const n = Number(countText);
    const queues = keys.slice(n, 2 * n);
    const pttls = keys
      .slice(0, n)
      .map((key) => this.pttl(key))
      .filter((pttl) => pttl !== -2);
    const ahead = Math.max(0, ...queues.map((queue) => this.#ahead(queue, ticket)));
    if (pttls.length > 0 || ahead > 0) {
      if (join === "1") for (const queue of queues) this.#enqueue(queue, ticket, Number(leaseText));
      return [0, pttls.length === 0 ? -2 : pttls.includes(-1) ? -1 : Math.max(...pttls), ahead];
    }
    for (const queue of queues) this.#dequeue(queue, ticket);
    return this.#acquire([...keys.slice(0, n), ...keys.slice(2 * n)], [value, ttlText, String(n)]);
  }

  /**
   * A reader: no writer key, and no live writer waits ahead (readers ahead do not stop a reader). The grant adds
   * the value to the reader set and leaves the queue.
   */
  #readAcquire(keys: string[], args: string[]): unknown {
    const [writer, readers, queue] = keys;
    const [value, ttlText, member, leaseText, join] = args;
    const pttl = this.pttl(writer);
    const ahead = this.#ahead(queue, member, (waiter) => waiter.endsWith("w"));
    if (pttl !== -2 || ahead > 0) {
      if (join === "1") this.#enqueue(queue, member, Number(leaseText));
      return [0, pttl, ahead];
    }
    this.#dequeue(queue, member);
    this.#readers.add(readers, value, Number(ttlText));
    return [1];
  }

  /** A writer: no writer key, no live reader, and no live waiter ahead; the grant sets the writer key. */
  #writeAcquire(keys: string[], args: string[]): unknown {
    const [writer, readers, queue, fence] = keys;
    const [value, ttlText, member, leaseText, join] = args;
    let pttl = this.pttl(writer);
    const live = [...this.readers(readers).values()];
    if (live.length > 0 && pttl !== -1) pttl = Math.max(pttl, ...live);
    const ahead = this.#ahead(queue, member);
    if (pttl !== -2 || ahead > 0) {
      if (join === "1") this.#enqueue(queue, member, Number(leaseText));
      return [0, pttl, ahead];
    }
    this.#dequeue(queue, member);
    return this.#acquire(fence === undefined ? [writer] : [writer, fence], [value, ttlText, "1"]);
  }

  /** The fair semaphore: the slot is free and fewer live waiters are ahead than slots are free here. */
  #fairSemaphore(keys: string[], value: string, ttl: number, args: string[]): unknown {
    const limit = keys.length - 1;
    const [slot, ticket, lease, join] = [Number(args[2]) - 1, args[3], Number(args[4]), args[5] === "1"];
    const free: number[] = [];
    let soonest = -1;
    keys.slice(0, limit).forEach((key, i) => {
      const pttl = this.pttl(key);
      if (pttl === -2) free.push(i);
      else if (pttl >= 0 && (soonest === -1 || pttl < soonest)) soonest = pttl;
    });
    const ahead = this.#ahead(keys[limit], ticket);
    if (slot < limit && this.get(keys[slot]) === undefined && ahead < free.length) {
      this.#dequeue(keys[limit], ticket);
      this.set(keys[slot], value, ttl);
      return [1];
    }
    if (join) this.#enqueue(keys[limit], ticket, lease);
    return [0, soonest, free, ahead];
  }

  /**
   * A reader's release as the Lua runs it: the reader out first (kept, as on Redis, when what follows fails), then the
   * member out of the queue, or back in with a lease; a missing member or a lease that is no number fails there.
   */
  #readRelease(keys: string[], value: string, member: string | undefined, lease: string | undefined): number {
    const released = this.#readers.remove(keys[0], value) ? 1 : 0;
    if (keys[1] === undefined) return released;
    if (member === undefined) throw new Error(LUA_ARGUMENT_ERROR);
    if (lease === undefined) this.#dequeue(keys[1], member);
    else this.#enqueue(keys[1], member, leaseOf(lease));
    return released;
  }

  /**
   * Release where the value still holds, and put the ticket back in every queue with a deadline of the lease. As in
   * the Lua, a missing ticket or a lease that is no number fails at the first queue, after its resource was released.
   */
  #requeue(keys: string[], value: string, ticket: string | undefined, lease: string | undefined): number {
    return this.#releaseEach(keys, value, (queue) => {
      if (ticket === undefined) throw new Error(LUA_ARGUMENT_ERROR);
      this.#enqueue(queue, ticket, leaseOf(lease));
    });
  }

  /** Release where the value still holds, and take the ticket out of every queue. */
  #leave(keys: string[], value: string, ticket: string): number {
    return this.#releaseEach(keys, value, (queue) => this.#dequeue(queue, ticket));
  }

  /** Over keys = resources then their queues: deletes each resource holding `value`, runs `step` on its queue. */
  #releaseEach(keys: string[], value: string, step: (queue: string) => void): number {
    const n = keys.length / 2;
    let released = 0;
    for (let i = 0; i < n; i++) {
      if (this.get(keys[i]) === value) {
        this.#store.delete(keys[i]);
        released++;
      }
      step(keys[n + i]);
    }
    return released;
  }

  /** A queue's clock (QUEUE_EPOCH_MS − its PTTL), rebased after half an epoch; undefined when absent. */
  #queueNow(key: string): number | undefined {
    const queue = this.#queues.get(key);
    if (!queue || queue.expiresAt <= this.clock.now()) return undefined;
    let now = QUEUE_EPOCH_MS - (queue.expiresAt - this.clock.now());
    if (now > QUEUE_EPOCH_MS / 2) {
      for (const [ticket, deadline] of queue.waiters) queue.waiters.set(ticket, deadline - now);
      queue.expiresAt = this.clock.now() + QUEUE_EPOCH_MS;
      now = 0;
    }
    return now;
  }

  /** Live waiters with a smaller ticket (expired ones are dropped first), of those `counts` (default: all). */
  #ahead(key: string, ticket: string, counts: (waiter: string) => boolean = () => true): number {
    const now = this.#queueNow(key);
    if (now === undefined) return 0;
    const queue = this.#queues.get(key)!;
    for (const [waiter, deadline] of queue.waiters) if (deadline <= now) queue.waiters.delete(waiter);
    if (queue.waiters.size === 0) this.#queues.delete(key);
    if (!this.respectQueue) return 0;
    return [...queue.waiters.keys()].filter((waiter) => waiter < ticket && counts(waiter)).length;
  }

  #enqueue(key: string, ticket: string, lease: number): void {
    const now = this.#queueNow(key);
    if (now === undefined) {
      this.#queues.set(key, { waiters: new Map([[ticket, lease]]), expiresAt: this.clock.now() + QUEUE_EPOCH_MS });
      return;
    }
    this.#queues.get(key)!.waiters.set(ticket, now + lease);
  }

  #dequeue(key: string, ticket: string): void {
    const queue = this.#queues.get(key);
    if (!queue) return;
    queue.waiters.delete(ticket);
    if (queue.waiters.size === 0) this.#queues.delete(key);
  }

  /** Whether waiters ahead stop a grant (the project's negative control turns it off). */
  protected get respectQueue(): boolean {
    return true;
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
