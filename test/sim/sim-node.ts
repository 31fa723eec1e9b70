// The simulator's nodes: the package's MemoryNode (src/memory/memory-node.ts) on a virtual clock, plus the
// negative controls the project's own tests use (test/integration/testing/sim-conformance.test.ts holds both to real Redis).
import type { Script } from "../../src/scripts/script.ts";
import { MemoryNode, type MemoryMode, type MemoryRequest } from "../../src/memory/memory-node.ts";
import type { VirtualClock } from "./virtual-clock.ts";

/** How the node behaves: `up` answers, `down` fails, `hang` never answers, `garbage` answers nonsense. */
export type SimMode = MemoryMode;

export type SimRequest = MemoryRequest;

/** One simulated database on a virtual clock (latency 1 ms by default), with the negative controls. */
export class SimNode extends MemoryNode {
  /** Negative control: the extend script as it was before it stopped shortening and re-seeding keys (SET PX every time). */
  legacyExtend = false;
  /** Negative control: answer the fencing write-back round without raising any counter. */
  ignoreFenceWriteBack = false;
  /** Negative control: grant as if no queue existed (the fair scripts still enqueue). */
  ignoreQueue = false;
  /** Negative control: take every new ticket in line, however far its time is from the node's clock. */
  ignoreClock = false;
  /**
   * Negative control: a read-write lock that counts readers per node (one counter with one expiry, moved to the
   * longest reader's; a release takes one away), as quorum read-write locks built on counters do, instead of a
   * set with each reader's own expiry. A writer is granted where the counter is gone or 0. The queue is ignored.
   */
  readerCounters = false;
  /** The counters of the negative control: per reader-set key, how many readers and until when. */
  readonly #counters = new Map<string, { count: number; expiresAt: number }>();
  /** The naive semaphore's holders per key (value → expiry), for the negative control. */
  readonly #admitted = new Map<string, Map<string, number>>();
  /** The ARGV of each request (a MemoryRequest records none). */
  readonly #args = new WeakMap<MemoryRequest, readonly string[]>();

  constructor(clock: VirtualClock, label: string) {
    super(label, clock);
    this.latency = 1;
  }

  /**
   * The ARGV `request` was sent with; also known inside a `latency` function, so a test can slow one kind of request
   * (a reader's undo, which carries an entry life, apart from its release).
   */
  argsOf(request: MemoryRequest): readonly string[] | undefined {
    return this.#args.get(request);
  }

  override run(script: Pick<Script, "name">, keys: string[], args: string[], signal: AbortSignal): Promise<unknown> {
    const latency = this.latency;
    const note = (request: MemoryRequest) => void this.#args.set(request, [...args]);
    // MemoryNode asks the latency synchronously, with the request it just recorded.
    if (typeof latency === "function")
      this.latency = (request) => {
        note(request);
        return latency(request);
      };
    try {
      const reply = super.run(script, keys, args, signal);
      note(this.requests[this.requests.length - 1]);
      return reply;
    } finally {
      this.latency = latency;
    }
  }

  protected override get writeBack(): boolean {
    return !this.ignoreFenceWriteBack;
  }

  protected override get respectQueue(): boolean {
    return !this.ignoreQueue;
  }

  protected override get checkClock(): boolean {
    return !this.ignoreClock;
  }

  protected override execute(name: string, keys: string[], args: string[]): unknown {
    const [value, ttlText] = args;
    const ttl = Number(ttlText);
    if (name === "naive-semaphore") {
      // Negative control: admit while fewer than ARGV[3] holders are live on this node (per-node counting).
      const now = this.clock.now();
      const holders = this.#admitted.get(keys[0]) ?? new Map<string, number>();
      this.#admitted.set(keys[0], holders);
      for (const [holder, until] of holders) if (until <= now) holders.delete(holder);
      if (holders.size >= Number(args[2])) return [0, Math.min(...holders.values()) - now];
      holders.set(value, now + ttl);
      return [1];
    }
    if (this.readerCounters && name.startsWith("rw-")) return this.#counted(name, keys, args);
    if (name === "extend" && this.legacyExtend) {
      for (const key of keys) if (this.get(key) !== undefined && this.get(key) !== value) return [0, this.pttl(key)];
      for (const key of keys) this.set(key, value, ttl);
      return [1];
    }
    return super.execute(name, keys, args);
  }

  /** The read-write scripts over per-node reader counters (the negative control). */
  #counted(name: string, keys: string[], args: string[]): unknown {
    const [value, ttlText] = args;
    const now = this.clock.now();
    const live = (key: string) => {
      const counter = this.#counters.get(key);
      return counter && counter.expiresAt > now ? counter : undefined;
    };
    switch (name) {
      case "rw-read-acquire": {
        if (this.get(keys[0]) !== undefined) return [0, this.pttl(keys[0]), 0];
        const counter = live(keys[1]) ?? { count: 0, expiresAt: now };
        counter.count++;
        counter.expiresAt = Math.max(counter.expiresAt, now + Number(ttlText));
        this.#counters.set(keys[1], counter);
        return [1];
      }
      case "rw-read-extend": {
        const counter = live(keys[0]);
        if (!counter || counter.count === 0) return [0, -2];
        counter.expiresAt = Math.max(counter.expiresAt, now + Number(ttlText));
        return [1];
      }
      case "rw-read-release": {
        const counter = live(keys[0]);
        if (!counter || counter.count === 0) return 0;
        counter.count--;
        return 1;
      }
      case "rw-write-acquire": {
        const readers = live(keys[1])?.count ?? 0;
        if (this.get(keys[0]) !== undefined || readers > 0) return [0, Math.max(this.pttl(keys[0]), 1), 0];
        this.set(keys[0], value, Number(ttlText));
        return [1];
      }
      default:
        return super.execute(name, keys, args);
    }
  }
}

/** N simulated nodes on one virtual clock. */
export function simCluster(clock: VirtualClock, count = 5): SimNode[] {
  return Array.from({ length: count }, (_, i) => new SimNode(clock, `sim${i}`));
}
