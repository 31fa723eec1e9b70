// A virtual clock for deterministic tests: time moves only when every promise is idle.
import type { Clock } from "../../src/support/clock.ts";

interface Timer {
  at: number;
  seq: number;
  fire: () => void;
}

/** Implements the library's Clock on virtual time; `run` drives a promise to completion. */
export class VirtualClock implements Clock {
  #now = 0;
  #seq = 0;
  #timers: Timer[] = [];
  readonly epochBase = 1_700_000_000_000;
  /** Every sleep requested, in order (ms). */
  readonly sleeps: number[] = [];

  now(): number {
    return this.#now;
  }

  epoch(): number {
    return this.epochBase + this.#now;
  }

  /** Calls `fire` at virtual time now + ms; returns a cancel function. */
  schedule(ms: number, fire: () => void): () => void {
    const timer = { at: this.#now + Math.max(0, ms), seq: this.#seq++, fire };
    this.#timers.push(timer);
    return () => {
      this.#timers = this.#timers.filter((t) => t !== timer);
    };
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.sleeps.push(ms);
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const cancel = this.schedule(ms, resolve);
      signal?.addEventListener("abort", () => {
        cancel();
        reject(signal.reason);
      });
    });
  }

  timeout(ms: number): { signal: AbortSignal; clear(): void } {
    const controller = new AbortController();
    const clear = this.schedule(ms, () => controller.abort(new DOMException("virtual timeout", "TimeoutError")));
    return { signal: controller.signal, clear };
  }

  /** Runs until `promise` settles, advancing time to the next timer whenever nothing else can happen. */
  async run<T>(promise: Promise<T>, limitMs = 10 * 60_000): Promise<T> {
    let outcome: { ok: true; value: T } | { ok: false; error: unknown } | undefined;
    promise.then(
      (value) => (outcome = { ok: true, value }),
      (error: unknown) => (outcome = { ok: false, error }),
    );
    for (;;) {
      await idle();
      if (outcome) break;
      if (this.#step()) continue;
      await realWork(() => outcome !== undefined || this.#timers.length > 0);
      if (outcome) break;
      if (!this.#step()) throw new Error(`deadlock: promise pending at t=${this.#now} with no timer left`);
      if (this.#now > limitMs) throw new Error(`virtual time limit ${limitMs} ms exceeded`);
    }
    if (outcome.ok) return outcome.value;
    throw outcome.error;
  }

  /** Lets every pending timer fire (e.g. straggler replies after a decision). */
  async drain(): Promise<void> {
    for (;;) {
      await idle();
      if (!this.#step()) return;
    }
  }

  /** Advances virtual time by `ms`, firing the timers due. */
  async advance(ms: number): Promise<void> {
    const until = this.#now + ms;
    for (;;) {
      await idle();
      const next = this.#next();
      if (!next || next.at > until) break;
      this.#step();
    }
    this.#now = until;
    await idle();
  }

  #next(): Timer | undefined {
    return [...this.#timers].sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
  }

  #step(): boolean {
    const next = this.#next();
    if (!next) return false;
    this.#timers = this.#timers.filter((t) => t !== next);
    this.#now = Math.max(this.#now, next.at);
    next.fire();
    return true;
  }
}

/**
 * Web Crypto digests in flight (a waiter names its wakeup channel with SHA-1). They run on a thread pool, in real
 * time: virtual time stands still until they are done, so a subscription confirms at the same virtual time on every
 * run instead of whenever the thread pool answers.
 */
const digests = new Set<Promise<unknown>>();
{
  const subtle = globalThis.crypto.subtle;
  const digest = subtle.digest.bind(subtle);
  subtle.digest = (...args: Parameters<SubtleCrypto["digest"]>) => {
    const done = digest(...args);
    digests.add(done);
    const forget = () => void digests.delete(done);
    done.then(forget, forget);
    return done;
  };
}

async function idle(): Promise<void> {
  do {
    await Promise.allSettled([...digests]);
    await new Promise((resolve) => setImmediate(resolve));
  } while (digests.size > 0);
}

/** Lets work that is truly asynchronous (Web Crypto's digest runs on a thread pool) finish: up to ~50 ms of real time. */
async function realWork(done: () => boolean): Promise<void> {
  for (let i = 0; i < 50 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 1));
}
