// An in-memory Redis node on a virtual clock, with the semantics of the library's scripts
// (test/integration/sim-conformance.test.ts runs the same operations on real Redis and compares).
import type { RedlockNode } from "../../src/node/node.ts";
import { QUEUE_EPOCH_MS, type Script } from "../../src/scripts/index.ts";
import type { VirtualClock } from "./virtual-clock.ts";

/** How the node behaves: `up` answers, `down` fails, `hang` never answers, `garbage` answers nonsense. */
export type SimMode = "up" | "down" | "hang" | "garbage";

export interface SimRequest {
  script: Script["name"] | "naive-semaphore";
  keys: string[];
  sentAt: number;
  /** When the script ran on the node (undefined: never ran). */
  ranAt?: number;
  /** When the caller's signal cut the request (undefined: not cut). */
  cutAt?: number;
}

/** One simulated database: latency per request, a mode, and a store with expiries on virtual time. */
export class SimNode implements RedlockNode {
  readonly label: string;
  mode: SimMode = "up";
  /** Latency of each request (ms); the script runs when the request arrives, after this. */
  latency: number | ((request: SimRequest) => number) = 1;
  readonly requests: SimRequest[] = [];
  /** A request the caller gave up on still runs when it arrives (the network delivered it anyway). */
  deliverLate = false;
  /** Negative control: the extend script as it was before it stopped shortening and re-seeding keys (SET PX every time). */
  legacyExtend = false;
  /** Negative control: answer the fencing write-back round without raising any counter. */
  ignoreFenceWriteBack = false;
  /** This node's clock runs ahead (+) or behind (−) the simulation's by this many ms (its TIME). */
  clockSkewMs = 0;
  /** Fence counters: never expire, survive crashes (the node keeps its data). */
  readonly counters = new Map<string, bigint>();
  /** The naive semaphore's holders per key (value → expiry), for the negative control. */
  readonly #admitted = new Map<string, Map<string, number>>();
  #store = new Map<string, { value: string; expiresAt: number }>();
  /** Wait queues (sorted sets): ticket → deadline on the queue's own clock (QUEUE_EPOCH_MS − its PTTL). */
  #queues = new Map<string, { waiters: Map<string, number>; expiresAt: number }>();
  /** Negative control: grant as if no queue existed (the fair scripts still enqueue). */
  ignoreQueue = false;
  #clock: VirtualClock;

  constructor(clock: VirtualClock, label: string) {
    this.#clock = clock;
    this.label = label;
  }

  /** The live value of `key`, if any. */
  get(key: string): string | undefined {
    const entry = this.#store.get(key);
    if (!entry || entry.expiresAt <= this.#clock.now()) return undefined;
    return entry.value;
  }

  /** Sets a key directly (another holder), with a ttl. */
  set(key: string, value: string, ttl: number): void {
    this.#store.set(key, { value, expiresAt: this.#clock.now() + ttl });
  }

  pttl(key: string): number {
    const entry = this.#store.get(key);
    if (!entry || entry.expiresAt <= this.#clock.now()) return -2;
    // Redis answers whole ms (virtual time may be fractional: random waits).
    return Math.ceil(entry.expiresAt - this.#clock.now());
  }

  /** A queue's live entries (ticket → deadline on its clock), as `ZRANGE … WITHSCORES` would list them, or undefined. */
  queue(key: string): Map<string, number> | undefined {
    const queue = this.#queues.get(key);
    if (!queue || queue.expiresAt <= this.#clock.now()) return undefined;
    return queue.waiters;
  }

  /** The tickets of a queue whose lease has not run out (what the scripts count as waiting). */
  liveWaiters(key: string): string[] {
    const queue = this.#queues.get(key);
    if (!queue || queue.expiresAt <= this.#clock.now()) return [];
    const now = QUEUE_EPOCH_MS - (queue.expiresAt - this.#clock.now());
    return [...queue.waiters].filter(([, deadline]) => deadline > now).map(([ticket]) => ticket);
  }

  /** The queue's PTTL (-2: absent). */
  queuePttl(key: string): number {
    const queue = this.#queues.get(key);
    if (!queue || queue.expiresAt <= this.#clock.now()) return -2;
    return queue.expiresAt - this.#clock.now();
  }

  #queueNow(key: string): number | undefined {
    const queue = this.#queues.get(key);
    if (!queue || queue.expiresAt <= this.#clock.now()) return undefined;
    let now = QUEUE_EPOCH_MS - (queue.expiresAt - this.#clock.now());
    if (now > QUEUE_EPOCH_MS / 2) {
      for (const [ticket, deadline] of queue.waiters) queue.waiters.set(ticket, deadline - now);
      queue.expiresAt = this.#clock.now() + QUEUE_EPOCH_MS;
      now = 0;
    }
    return now;
  }

  #ahead(key: string, ticket: string): number {
    const now = this.#queueNow(key);
    if (now === undefined) return 0;
    const queue = this.#queues.get(key)!;
    for (const [waiter, deadline] of queue.waiters) if (deadline <= now) queue.waiters.delete(waiter);
    if (queue.waiters.size === 0) this.#queues.delete(key);
    if (this.ignoreQueue) return 0;
    return [...queue.waiters.keys()].filter((waiter) => waiter < ticket).length;
  }

  #enqueue(key: string, ticket: string, lease: number): void {
    const now = this.#queueNow(key);
    if (now === undefined) {
      this.#queues.set(key, { waiters: new Map([[ticket, lease]]), expiresAt: this.#clock.now() + QUEUE_EPOCH_MS });
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

  /** Keys with a live value. */
  liveKeys(): string[] {
    return [...this.#store.keys()].filter((key) => this.get(key) !== undefined);
  }

  run(script: Script | { name: "naive-semaphore" }, keys: string[], args: string[], signal: AbortSignal): Promise<unknown> {
    const request: SimRequest = { script: script.name, keys, sentAt: this.#clock.now() };
    this.requests.push(request);
    const latency = typeof this.latency === "function" ? this.latency(request) : this.latency;
    const mode = this.mode;
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      const onAbort = () => {
        if (!this.deliverLate) cancel();
        request.cutAt = this.#clock.now();
        reject(signal.reason);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      const cancel =
        mode === "hang"
          ? () => {}
          : this.#clock.schedule(latency, () => {
              signal.removeEventListener("abort", onAbort);
              if (mode === "down" || this.mode === "down") return reject(new TypeError("fetch failed"));
              if (mode === "garbage") return resolve({ html: "<h1>502</h1>" });
              request.ranAt = this.#clock.now();
              resolve(this.#execute(script.name, keys, args));
            });
    });
  }

  #execute(name: SimRequest["script"], keys: string[], args: string[]): unknown {
    const [value, ttlText] = args;
    const ttl = Number(ttlText);
    if (name === "semaphore-acquire") {
      const slot = Number(args[2]) - 1;
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
    if (name === "fair-acquire") {
      const n = Number(args[2]);
      const [ticket, lease, enqueue] = [args[3], Number(args[4]), args[5] === "1"];
      const pttls = keys.slice(0, n).map((key) => this.pttl(key)).filter((pttl) => pttl !== -2);
      const ahead = Math.max(0, ...keys.slice(n, 2 * n).map((queue) => this.#ahead(queue, ticket)));
      if (pttls.length > 0 || ahead > 0) {
        if (enqueue) for (const queue of keys.slice(n, 2 * n)) this.#enqueue(queue, ticket, lease);
        return [0, pttls.length > 0 ? Math.max(...pttls) : -2, ahead];
      }
      for (const queue of keys.slice(n, 2 * n)) this.#dequeue(queue, ticket);
      return this.#execute("acquire", [...keys.slice(0, n), ...keys.slice(2 * n)], [value, ttlText, String(n)]);
    }
    if (name === "fair-semaphore-acquire") {
      const limit = keys.length - 1;
      const [slot, ticket, lease, enqueue] = [Number(args[2]) - 1, args[3], Number(args[4]), args[5] === "1"];
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
      if (enqueue) this.#enqueue(keys[limit], ticket, lease);
      return [0, soonest, free, ahead];
    }
    if (name === "leave") {
      const n = keys.length / 2;
      let released = 0;
      for (let i = 0; i < n; i++) {
        if (this.get(keys[i]) === value) {
          this.#store.delete(keys[i]);
          released++;
        }
        this.#dequeue(keys[n + i], args[1]);
      }
      return released;
    }
    if (name === "inspect") return keys.map((key) => (this.get(key) === undefined ? 0 : [this.get(key), this.pttl(key)]));
    if (name === "naive-semaphore") {
      // Negative control: admit while fewer than ARGV[3] holders are live on this node (per-node counting).
      const holders = this.#admitted.get(keys[0]) ?? new Map<string, number>();
      this.#admitted.set(keys[0], holders);
      for (const [holder, until] of holders) if (until <= this.#clock.now()) holders.delete(holder);
      if (holders.size >= Number(args[2])) return [0, Math.min(...holders.values()) - this.#clock.now()];
      holders.set(value, this.#clock.now() + ttl);
      return [1];
    }
    if (name === "acquire") {
      const n = Number(args[2] ?? keys.length);
      const resources = keys.slice(0, n);
      const pttls = resources.map((key) => this.pttl(key)).filter((pttl) => pttl !== -2);
      if (pttls.length > 0) return [0, Math.max(...pttls)];
      let fence: bigint | undefined;
      resources.forEach((key, i) => {
        this.set(key, value, ttl);
        const counter = keys[n + i];
        if (counter === undefined) return;
        const timeUs = BigInt(Math.max(0, Math.round((this.#clock.now() + this.clockSkewMs) * 1000)));
        const incremented = (this.counters.get(counter) ?? 0n) + 1n;
        const next = incremented > timeUs ? incremented : timeUs;
        this.counters.set(counter, next);
        if (fence === undefined || next > fence) fence = next;
      });
      return fence === undefined ? [1] : [1, String(fence)];
    }
    if (name === "fence") {
      const n = keys.length / 2;
      for (const key of keys.slice(0, n)) if (this.get(key) !== value) return [0, this.pttl(key)];
      if (this.ignoreFenceWriteBack) return [1];
      const token = BigInt(args[1]);
      for (const counter of keys.slice(n)) if ((this.counters.get(counter) ?? 0n) < token) this.counters.set(counter, token);
      return [1];
    }
    if (name === "release") {
      let released = 0;
      for (const key of keys) {
        if (this.get(key) === value) {
          this.#store.delete(key);
          released++;
        }
      }
      return released;
    }
    if (this.legacyExtend) {
      for (const key of keys) if (this.get(key) !== undefined && this.get(key) !== value) return [0, this.pttl(key)];
      for (const key of keys) this.set(key, value, ttl);
      return [1];
    }
    // extend: only where every key still holds the value; never shortens, never creates.
    for (const key of keys) if (this.get(key) !== value) return [0, this.pttl(key)];
    for (const key of keys) if (this.pttl(key) < ttl) this.set(key, value, ttl);
    return [1];
  }
}

/** N simulated nodes on one virtual clock. */
export function simCluster(clock: VirtualClock, count = 5): SimNode[] {
  return Array.from({ length: count }, (_, i) => new SimNode(clock, `sim${i}`));
}
