// An in-process Redis node with the semantics of the library's scripts: the project's simulator, held to
// the same replies, keys and wakeups as the real scripts on real Redis
// (test/integration/testing/sim-conformance.test.ts).
// Web standards only: it runs in workerd, edge runtimes, Deno, Bun and Node.
import type { RedlockNode } from "../node/node.ts";
import { CLOCK_STEP_MS, LINE_KEEP_STEP_MS, LINE_LINGER_MS, QUIET_SLACK_MS, WAKE_PREFIX } from "../scripts/queue.ts";
import { READERS_CLOCK_MEMBER } from "../scripts/readers.ts";
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
  /**
   * Epoch milliseconds: what the node's `TIME` answers (plus its `clockSkewMs`). Without it, `now()` (the real
   * clock has it: `Date.now()`).
   */
  epoch?(): number;
  /** Calls `fire` after `ms`; returns a function that cancels it. */
  schedule(ms: number, fire: () => void): () => void;
}

/**
 * How a {@link MemoryNode} answers: `up` runs the script, `down` fails like a refused connection, `hang`
 * never answers (until the caller's timeout), `garbage` answers a reply the library cannot read.
 * @example
 * ```ts
 * const nodes = [new MemoryNode("a"), new MemoryNode("b"), new MemoryNode("c")];
 * nodes[0].mode = "down";
 * ```
 */
export type MemoryMode = "up" | "down" | "hang" | "garbage";

/**
 * One request a {@link MemoryNode} received, for assertions.
 * @example
 * ```ts
 * import { Redlock } from "edge-redlock";
 *
 * const node = new MemoryNode("a");
 * await new Redlock([node]).using(["k"], 5_000, async () => {});
 * node.requests.map((r) => r.script); // ["fair-acquire", "leave"]
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
 * const node = new MemoryNode("a");
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

/** At most this many tickets in one wakeup (the Lua's `SHOWN`, src/scripts/queue.ts). */
const WAKE_SHOWN = 8;

/** Whitespace as Lua's `tonumber` skips it around a number (C's `isspace`). */
const LUA_SPACE = /^[ \t\n\v\f\r]+|[ \t\n\v\f\r]+$/g;

/**
 * Lua 5.1's `tonumber(text)` (strtod, as glibc reads it): decimal and hex numbers, `inf` and `nan`, with
 * whitespace around; undefined where Lua gives nil.
 */
function luaNumber(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const s = text.replace(LUA_SPACE, "");
  const sign = s.startsWith("-") ? -1 : 1;
  const bare = s.replace(/^[+-]/, "");
  if (/^(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(bare)) return sign * Number(bare);
  const hex = /^0x([0-9a-f]*)(?:\.([0-9a-f]*))?(?:p([+-]?\d+))?$/i.exec(bare);
  if (hex && (hex[1] + (hex[2] ?? "")).length > 0) {
    const digits = hex[1] + (hex[2] ?? "");
    return (sign * Number.parseInt(digits, 16) * 2 ** Number(hex[3] ?? 0)) / 16 ** (hex[2] ?? "").length;
  }
  if (/^inf(inity)?$/i.test(bare)) return sign * Number.POSITIVE_INFINITY;
  if (/^nan$/i.test(bare)) return Number.NaN;
  return undefined;
}

/** Lua's `string.sub(s, from, to)` (1-based, on bytes): a ticket is printable ASCII, anything else is cut as UTF-8. */
function luaSub(s: string, from: number, to = -1): string {
  if (/^[ -~]*$/.test(s))
    return s.slice(Math.max(0, from < 0 ? s.length + from : from - 1), to < 0 ? s.length + to + 1 : to);
  const bytes = new TextEncoder().encode(s);
  const start = from < 0 ? bytes.length + from : from - 1;
  return new TextDecoder().decode(bytes.slice(Math.max(0, start), to < 0 ? bytes.length + to + 1 : to));
}

/** Lua `claim_window(ticket)`: the ticket's claim window in ms (the 5 digits after its 32), undefined where none. */
const claimWindow = (ticket: string): number | undefined => luaNumber(luaSub(ticket, 33, 37));

/** Lua's `<` on strings: byte order in the C locale; tickets (`[0-9a-f]`, then `r` or `w`) sort so in any locale. */
const luaLess = (a: string, b: string | undefined): boolean => {
  if (b === undefined) throw new Error("ERR attempt to compare string with nil");
  return a < b;
};

/** Lua's `math.max(a, b)`: a unless b is greater (so a NaN b gives a). */
const luaMax = (a: number, b: number): number => (b > a ? b : a);

/** A command's argument: a nil (missing) one fails the call, as `redis.call` does. */
function arg(value: string | undefined): string {
  if (value === undefined) throw new Error(LUA_ARGUMENT_ERROR);
  return value;
}

/** `KEYS[i]` or `ARGV[i]` in Lua: 1-based; an index past the end, or no integer, is nil. */
const at = (list: readonly string[], i: number): string | undefined =>
  Number.isInteger(i) && i >= 1 ? list[i - 1] : undefined;

/** A Lua number that Redis reads as an integer argument (it is sent as `%.17g`): else the command fails. */
function integerArgument(n: number): number {
  if (!Number.isInteger(n) || Math.abs(n) >= 1e17) throw new Error("ERR value is not an integer or out of range");
  return n;
}

/** `redis.sha1hex`: SHA-1 of the UTF-8 bytes of `text`, in lowercase hex. Synchronous, as a script runs. */
function sha1Hex(text: string): string {
  const data = new TextEncoder().encode(text);
  const blocks = ((data.length + 8) >> 6) + 1;
  const words = new Uint32Array(blocks * 16);
  for (let i = 0; i < data.length; i++) words[i >> 2] |= data[i] << (24 - (i & 3) * 8);
  words[data.length >> 2] |= 0x80 << (24 - (data.length & 3) * 8);
  words[blocks * 16 - 2] = Math.floor(data.length / 0x20000000);
  words[blocks * 16 - 1] = (data.length * 8) >>> 0;
  const h = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0];
  const w = new Uint32Array(80);
  for (let block = 0; block < blocks; block++) {
    for (let t = 0; t < 16; t++) w[t] = words[block * 16 + t];
    for (let t = 16; t < 80; t++) {
      const x = w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16];
      w[t] = (x << 1) | (x >>> 31);
    }
    let [a, b, c, d, e] = h;
    for (let t = 0; t < 80; t++) {
      const [f, k] =
        t < 20
          ? [(b & c) | (~b & d), 0x5a827999]
          : t < 40
            ? [b ^ c ^ d, 0x6ed9eba1]
            : t < 60
              ? [(b & c) | (b & d) | (c & d), 0x8f1bbcdc]
              : [b ^ c ^ d, 0xca62c1d6];
      const next = (((a << 5) | (a >>> 27)) + f + e + k + w[t]) >>> 0;
      [e, d, c, b, a] = [d, c, ((b << 30) | (b >>> 2)) >>> 0, a, next];
    }
    for (const [i, word] of [a, b, c, d, e].entries()) h[i] = (h[i] + word) >>> 0;
  }
  return h.map((word) => word.toString(16).padStart(8, "0")).join("");
}

/** A line as Redis holds it, a sorted set: ticket → deadline (the node's TIME, ms), and when the key expires. */
interface LineSet {
  members: Map<string, number>;
  /** On the node's clock (`now()`); `Infinity`: no expiry. */
  expiresAt: number;
}

/** The time of one script: Redis answers TIME and checks expiries with the time the script started. */
interface ScriptTime {
  /** The node's clock (`now()`), for expiries. */
  now: number;
  /** `TIME` in µs. */
  timeUs: number;
}

/** The wall clock: `performance.now()` where it exists, timers for latency. */
const REAL_CLOCK: MemoryClock = {
  now: () => (typeof performance === "object" ? performance.now() : Date.now()),
  epoch: () => Date.now(),
  schedule(ms, fire) {
    const timer = setTimeout(fire, Math.max(0, ms));
    return () => clearTimeout(timer);
  },
};

/**
 * One in-memory database that runs the library's scripts (acquire, fenced acquire, release, extend, the
 * fencing write-back, semaphore, the fair line, the read-write lock, inspect) with Redis' semantics: keys with
 * expiries, fence counters that never expire, lines whose entries carry deadlines on the node's `TIME` (see
 * {@link MemoryNode.time}) and whose scripts publish wakeups through {@link MemoryNode.publish}, as the Lua does. A
 * `RedlockNode`: hand an array of them to `new Redlock(...)`. Set `mode` and `latency` to make it fail or slow. It
 * also has Redis' publish/subscribe (`publish`, `subscribe`), with `dropMessages`, `messageDelayMs` and
 * `cutSubscriptions()` to lose, slow or cut the messages.
 * @example
 * ```ts
 * import { Redlock } from "edge-redlock";
 *
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
  /**
   * The requests received, in order. Past {@link MemoryNode.keptRequests} the oldest tenth goes, so a long
   * `dev --memory` session stays small.
   */
  readonly requests: MemoryRequest[] = [];
  /** At most this many requests are kept in {@link MemoryNode.requests} (default 100,000). */
  keptRequests = 100_000;
  /** A request the caller gave up on still runs when it arrives (the network delivered it anyway). */
  deliverLate = false;
  /**
   * This node's clock runs ahead (+) or behind (−) by this many ms (what its `TIME` returns): the lines refuse
   * tickets more than `CLOCK_STEP_MS` out of step with it, and fence counters start from it.
   */
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
  /** The fair scripts' lines (sorted sets): ticket → deadline on the node's TIME. */
  #lines = new Map<string, LineSet>();
  /** The read-write locks' reader sets. */
  readonly #readers: ReaderSets;
  /** While a script runs: the time it started, which every expiry and `TIME` of it reads. */
  #scriptTime: ScriptTime | undefined;

  /**
   * A node named `label` on `clock` (default: the real clock).
   * @param label the node's name in tallies
   * @param clock the time expiries and latencies run on
   */
  constructor(label = "memory", clock: MemoryClock = REAL_CLOCK) {
    this.label = label;
    this.clock = clock;
    this.#readers = new ReaderSets({ now: () => this.#now() });
  }

  /** The live readers of a read-write lock's reader set (value → ms left). */
  readers(key: string): Map<string, number> {
    return this.#readers.live(key);
  }

  /** The live value of `key`, if any. */
  get(key: string): string | undefined {
    const entry = this.#store.get(key);
    if (!entry || entry.expiresAt <= this.#now()) return undefined;
    return entry.value;
  }

  /** Sets `key` directly (as another holder would), expiring after `ttl` ms (`Infinity`: never). */
  set(key: string, value: string, ttl: number): void {
    this.#store.set(key, { value, expiresAt: this.#now() + ttl });
  }

  /** Deletes `key` directly. */
  delete(key: string): void {
    this.#store.delete(key);
  }

  /** The remaining time of `key` in ms, -2 when it is absent (as Redis' PTTL). */
  pttl(key: string): number {
    const entry = this.#store.get(key);
    if (!entry || entry.expiresAt <= this.#now()) return -2;
    if (entry.expiresAt === Number.POSITIVE_INFINITY) return -1; // no expiry
    return Math.ceil(entry.expiresAt - this.#now()); // whole ms, as Redis answers
  }

  /** Keys with a live value. */
  liveKeys(): string[] {
    return [...this.#store.keys()].filter((key) => this.get(key) !== undefined);
  }

  /** Forgets every key, line and counter (a restart that lost its data). */
  flush(): void {
    this.#store.clear();
    this.#lines.clear();
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
   * const node = new MemoryNode("a");
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
   * const node = new MemoryNode("a");
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
   * const node = new MemoryNode("a");
   * node.cutSubscriptions(); // 1 when a waiter listened for its wakeup: its stream is gone
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

  /**
   * A line's entries as `ZRANGE … WITHSCORES` lists them: ticket → deadline, in epoch ms on the node's `TIME`
   * (see {@link MemoryNode.time}). Entries past their deadline stay until a script of the line drops them, as on
   * Redis; undefined when the line's key is absent or expired.
   * @example
   * ```ts
   * const node = new MemoryNode("a");
   * node.queue("edge-redlock:line:orders:42"); // one waiter: Map { "0001764165600000…00200" => 1764165612000 }
   * ```
   */
  queue(key: string): Map<string, number> | undefined {
    const line = this.#line(key);
    return line && new Map(line.members);
  }

  /**
   * The tickets of a line whose deadline is still ahead of the node's `TIME` (what the scripts count as waiting),
   * in line order (smallest ticket first).
   * @example
   * ```ts
   * const node = new MemoryNode("a");
   * node.liveWaiters("edge-redlock:line:orders:42").length; // 2 with two waiters in line
   * ```
   */
  liveWaiters(key: string): string[] {
    const now = this.time();
    const members = [...(this.#line(key)?.members ?? [])];
    return members
      .filter(([, deadline]) => deadline > now)
      .map(([ticket]) => ticket)
      .sort();
  }

  /**
   * The PTTL of a line's key (-2: absent, -1: no expiry): a line key lives {@link LINE_LINGER_MS} past the last
   * deadline of its waiters.
   * @example
   * ```ts
   * const node = new MemoryNode("a");
   * node.queuePttl("edge-redlock:line:orders:42"); // 17000 for an entry of 12000 ms
   * ```
   */
  queuePttl(key: string): number {
    const line = this.#line(key);
    if (!line) return -2;
    return line.expiresAt === Number.POSITIVE_INFINITY ? -1 : Math.ceil(line.expiresAt - this.#now());
  }

  /**
   * What the node's `TIME` answers now, in epoch ms (its clock's `epoch()`, plus `clockSkewMs`): the time the
   * lines' deadlines and tickets are checked against.
   * @example
   * ```ts
   * const node = new MemoryNode("a");
   * node.time(); // 1764165600000: a waiter's ticket taken at this time is in step with the node
   * ```
   */
  time(): number {
    return Math.floor(this.#timeUs() / 1000);
  }

  /** Runs `script` after the node's latency, as the mode says; rejects when `signal` aborts first. */
  run(script: Pick<Script, "name">, keys: string[], args: string[], signal: AbortSignal): Promise<unknown> {
    const request: MemoryRequest = { script: script.name, keys, sentAt: this.clock.now() };
    this.requests.push(request);
    if (this.requests.length > this.keptRequests)
      this.requests.splice(0, this.requests.length - Math.floor(this.keptRequests * 0.9));
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
              this.#scriptTime = { now: this.clock.now(), timeUs: this.#timeUs() };
              try {
                resolve(this.execute(script.name, keys, args));
              } catch (error) {
                reject(error);
              } finally {
                this.#scriptTime = undefined;
              }
            });
    });
  }

  /**
   * What the script named `name` does to the store, and its reply (as Redis would send it). The fair scripts follow
   * their Lua step by step, failures included: a script that fails keeps what it did before, as on Redis.
   */
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
        return this.#fairSemaphore(keys, args);
      case "leave":
        return this.#releaseEach(keys, args, (q) => this.#zrem(q, args[1]));
      case "requeue":
        return this.#releaseEach(keys, args, (q, now) => this.#enqueue(q, args[1], luaNumber(args[2]), now));
      case "rw-read-acquire":
        return this.#readAcquire(keys, args);
      case "rw-write-acquire":
        return this.#writeAcquire(keys, args);
      case "rw-read-extend":
        return this.#readers.extend(keys[0], value, ttl) ? [1] : [0, -2];
      case "rw-read-release":
        return this.#readRelease(keys, args);
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

  /** ACQUIRE: KEYS[1..n] (n = ARGV[3], else #KEYS) where none is held, with fence counters after them. */
  #acquire(keys: string[], args: string[]): unknown {
    const n = luaNumber(args[2]) ?? keys.length;
    const [held, wait] = this.#longestPttl(keys, n);
    if (held) return [0, wait];
    const fence = this.#take(keys, args, n, n);
    return fence === undefined ? [1] : [1, fence];
  }

  /** Lua `longest_pttl(n)`: whether any of KEYS[1..n] is held, and the longest PTTL (-1: one never expires). */
  #longestPttl(keys: string[], n: number): [boolean, number] {
    let held = false;
    let wait = 0;
    for (let i = 1; i <= n; i++) {
      const pttl = this.#pttl(at(keys, i));
      if (pttl === -2) continue;
      held = true;
      if (pttl === -1 || wait === -1) wait = -1;
      else if (pttl > wait) wait = pttl;
    }
    return [held, wait];
  }

  /**
   * Lua `take(n, fences)`: sets KEYS[1..n] to ARGV[1] for ARGV[2] ms; each counter KEYS[fences + i] rises past
   * the node's TIME in µs (see docs/SAFETY.md). The largest counter, as a decimal; undefined without counters.
   */
  #take(keys: string[], args: string[], n: number, fences: number): string | undefined {
    let fence: bigint | undefined;
    for (let i = 1; i <= n; i++) {
      this.#setPx(at(keys, i), args[0], args[1]);
      const counter = at(keys, fences + i);
      if (counter === undefined) continue;
      const next = this.#advanceCounter(counter);
      if (fence === undefined || next > fence) fence = next;
    }
    return fence === undefined ? undefined : String(fence);
  }

  /** INCR the counter, then raise it to the node's TIME in µs if that is greater; its new value. */
  #advanceCounter(counter: string): bigint {
    const timeUs = BigInt(this.#timeUs());
    const incremented = (this.counters.get(counter) ?? 0n) + 1n;
    const next = incremented > timeUs ? incremented : timeUs;
    this.counters.set(counter, next);
    return next;
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

  /**
   * FAIR_ACQUIRE (ARGV: value, ttl, n, ticket, life, join, age): as `acquire`, and only when no live waiter of any
   * line has a smaller ticket; a ticket out of step with TIME is refused with the node's time where it would be
   * ordered or queued; wakes the lines where the resources are free (refused) or taken (granted).
   */
  #fairAcquire(keys: string[], args: string[]): unknown {
    const now = this.#scriptNow();
    const n = luaNumber(args[2]);
    const [ticket, age] = [args[3], luaNumber(args[6]) ?? 0];
    if (ticket === undefined) throw new Error("ERR a line member is missing");
    if (n === undefined) throw new Error("ERR 'for' limit must be a number");
    let [ahead, waiting] = [0, false];
    for (let i = 1; i <= n; i++) {
      const [a, count] = this.#waitersAhead(at(keys, n + i), ticket, now);
      if (a > ahead) ahead = a;
      if (count > 0) waiting = true;
    }
    const allInStep = () => {
      for (let i = 1; i <= n; i++) if (!this.#inStep(at(keys, n + i), ticket, age, now)) return false;
      return true;
    };
    let step = !waiting || allInStep();
    // The first in line (or anyone, where nobody waits) tries SET NX before reading any PTTL, as the Lua does.
    if (step && ahead === 0 && n === 1 && keys[2] === undefined && this.#setNx(keys[0], args[0], args[1])) {
      this.#zrem(at(keys, 2), ticket);
      if (waiting) this.#wake(at(keys, 2), 0, now, args[1]);
      return [1];
    }
    const [held, longest] = this.#longestPttl(keys, n);
    const wait = held ? longest : -2;
    if (step && held && args[5] === "1" && !waiting) step = allInStep();
    if (!step) return [0, wait, -1, now];
    if (held || ahead > 0) {
      if (args[5] === "1") for (let i = 1; i <= n; i++) this.#enqueue(at(keys, n + i), ticket, luaNumber(args[4]), now);
      const quiet = args[5] === "1" ? claimWindow(ticket) : undefined;
      if (!held) for (let i = 1; i <= n; i++) this.#wake(at(keys, n + i), undefined, now, undefined, quiet);
      return [0, wait, ahead];
    }
    for (let i = 1; i <= n; i++) this.#zrem(at(keys, n + i), ticket);
    const fence = this.#take(keys, args, n, 2 * n);
    if (waiting) for (let i = 1; i <= n; i++) this.#wake(at(keys, n + i), 0, now, args[1]);
    return fence === undefined ? [1] : [1, fence];
  }

  /**
   * FAIR_SEMAPHORE_ACQUIRE (KEYS: slots, line; ARGV: value, ttl, slot, ticket, life, join, age): the slot is free
   * and fewer live waiters are ahead than slots are free here; wakes as many of the first as slots are free.
   */
  #fairSemaphore(keys: string[], args: string[]): unknown {
    const now = this.#scriptNow();
    const limit = keys.length - 1;
    const [slot, ticket, age] = [luaNumber(args[2]), args[3], luaNumber(args[6]) ?? 0];
    if (ticket === undefined) throw new Error("ERR a line member is missing");
    const q = at(keys, limit + 1);
    const free: number[] = [];
    let soonest = -1;
    for (let i = 1; i <= limit; i++) {
      const pttl = this.#pttl(at(keys, i));
      if (pttl === -2) free.push(i - 1);
      else if (pttl >= 0 && (soonest === -1 || pttl < soonest)) soonest = pttl;
    }
    const [ahead, waiting] = this.#waitersAhead(q, ticket, now);
    if (slot === undefined) throw new Error("ERR attempt to compare nil with number");
    const open = slot <= limit && !this.#exists(at(keys, slot));
    if (!this.#inStep(q, ticket, age, now) && (waiting > 0 || (!open && args[5] === "1"))) {
      return [0, soonest, free, -1, now];
    }
    if (open && ahead < free.length) {
      this.#zrem(q, ticket);
      this.#setPx(at(keys, slot), args[0], args[1]);
      if (waiting > 0) this.#wake(q, free.length - 1, now);
      return [1];
    }
    if (args[5] === "1") this.#enqueue(q, ticket, luaNumber(args[4]), now);
    if (free.length > 0) this.#wake(q, free.length, now);
    return [0, soonest, free, ahead];
  }

  /**
   * LEAVE and REQUEUE (KEYS: resources, then their lines; ARGV: value, ticket[, life]): deletes each resource that
   * holds the value, runs `step` on its line, and wakes the line where the resource is free.
   */
  #releaseEach(keys: string[], args: string[], step: (q: string | undefined, now: number) => void): number {
    const now = this.#scriptNow();
    const n = keys.length / 2;
    let released = 0;
    for (let i = 1; i <= n; i++) {
      const key = arg(at(keys, i));
      if (this.get(key) !== undefined && this.get(key) === args[0]) {
        this.#store.delete(key);
        released++;
      }
      step(at(keys, n + i), now);
      if (!this.#exists(key)) this.#wake(at(keys, n + i), undefined, now);
    }
    return released;
  }

  /**
   * RW_READ_ACQUIRE (KEYS: writer, readers, line; ARGV: value, ttl, member, life, join, age): no writer key and no
   * live writer waiting ahead (readers ahead do not stop a reader); the grant adds the reader and leaves the line.
   */
  #readAcquire(keys: string[], args: string[]): unknown {
    const now = this.#scriptNow();
    const [member, age] = [args[2], luaNumber(args[5]) ?? 0];
    if (member === undefined) throw new Error("ERR a line member is missing");
    const q = keys[2];
    const wait = this.#pttl(keys[0]);
    const [ahead, waiting] = this.#waitersAhead(q, member, now, (w) => luaSub(w, -1) === "w");
    if (!this.#inStep(q, member, age, now) && (waiting > 0 || (wait !== -2 && args[4] === "1")))
      return [0, wait, -1, now];
    if (wait !== -2 || ahead > 0) {
      if (args[4] === "1") this.#enqueue(q, member, luaNumber(args[3]), now);
      if (wait === -2) this.#rwWake(q, this.#liveReaders(keys[1]) > 0, now);
      return [0, wait, ahead];
    }
    this.#zrem(q, member);
    this.#readersAdd(keys[1], args[0], args[1]);
    if (waiting > 0) this.#rwWake(q, true, now);
    return [1];
  }

  /**
   * RW_WRITE_ACQUIRE (KEYS: writer, readers, line[, fence]; ARGV as the reader's): no writer key, no live reader and
   * no live waiter ahead; the grant sets the writer key, leaves the line, and with a counter advances it.
   */
  #writeAcquire(keys: string[], args: string[]): unknown {
    const now = this.#scriptNow();
    const [member, age] = [args[2], luaNumber(args[5]) ?? 0];
    if (member === undefined) throw new Error("ERR a line member is missing");
    const q = keys[2];
    let wait = this.#pttl(keys[0]);
    let held = wait !== -2;
    const readers = [...this.#readers.live(arg(keys[1])).values()];
    if (readers.length > 0) {
      const longest = Math.max(0, ...readers);
      if (!held) wait = longest;
      else if (wait !== -1 && longest > wait) wait = longest;
      held = true;
    }
    const [ahead, waiting] = this.#waitersAhead(q, member, now);
    if (!this.#inStep(q, member, age, now) && (waiting > 0 || (held && args[4] === "1"))) return [0, wait, -1, now];
    if (held || ahead > 0) {
      if (args[4] === "1") this.#enqueue(q, member, luaNumber(args[3]), now);
      if (!held) this.#rwWake(q, false, now);
      return [0, wait, ahead];
    }
    this.#zrem(q, member);
    this.#setPx(keys[0], args[0], args[1]);
    if (waiting > 0) this.#wake(q, 0, now, args[1]);
    if (keys[3] !== undefined) return [1, String(this.#advanceCounter(keys[3]))];
    return [1];
  }

  /**
   * RW_READ_RELEASE (KEYS: readers[, line[, writer]]; ARGV: value, member[, life]): the reader out first (kept, as on
   * Redis, when what follows fails), then the member out of the line or back in with a life; with the writer key
   * given, the last reader out wakes the line when no writer holds.
   */
  #readRelease(keys: string[], args: string[]): number {
    const now = this.#scriptNow();
    let released = 0;
    if (this.#liveReaders(keys[0]) > 0 && args[0] !== READERS_CLOCK_MEMBER) {
      released = this.#readers.remove(keys[0], arg(args[0])) ? 1 : 0;
    }
    if (keys[1] === undefined) return released;
    if (args[2] !== undefined) this.#enqueue(keys[1], args[1], luaNumber(args[2]), now);
    else this.#zrem(keys[1], args[1]);
    if (keys[2] !== undefined && !this.#exists(keys[2]) && this.#liveReaders(keys[0]) === 0) {
      this.#rwWake(keys[1], false, now);
    }
    return released;
  }

  /**
   * Lua `readers_add`: a reader until ttl ms from now. It fails where the Lua does: a ttl that is no number, and
   * one the set's PEXPIRE would take (a new set, or one the reader outlives) that is no positive integer.
   */
  #readersAdd(key: string | undefined, value: string | undefined, ttlText: string | undefined): void {
    const ttl = luaNumber(ttlText);
    const live = this.#readers.live(arg(key));
    if (ttl === undefined || Number.isNaN(ttl)) throw new Error(LUA_ARGUMENT_ERROR);
    if (live.size === 0 && ttl <= 0) throw new Error("ERR attempt to compare nil with number");
    if (live.size === 0 || ttl > Math.max(...live.values())) integerArgument(ttl);
    this.#readers.add(arg(key), arg(value), ttl);
  }

  /** How many live readers a reader set holds (0: no set); the expired ones are dropped, as `readers_live` does. */
  #liveReaders(key: string | undefined): number {
    return this.#readers.live(arg(key)).size;
  }

  // The line's Lua (src/scripts/queue.ts), function by function.

  /** Lua `line_read(q)`: every entry, past its deadline or not, smallest ticket first; nothing is dropped. */
  #lineRaw(q: string | undefined): string[] {
    const line = this.#line(arg(q));
    return line ? [...line.members.keys()].sort() : [];
  }

  /** Lua `line_sorted(q)`: drops the waiters whose deadline passed; the others, smallest ticket first. */
  #lineSorted(q: string | undefined, now: number): string[] {
    const key = arg(q);
    const line = this.#line(key);
    if (!line) return [];
    let dropped = 0;
    for (const [member, deadline] of line.members)
      if (deadline <= now) {
        line.members.delete(member);
        dropped++;
      }
    if (line.members.size === 0) this.#lines.delete(key);
    else if (dropped > 0) this.#lineKeep(key, now);
    return [...line.members.keys()].sort();
  }

  /**
   * Lua `line_keep(q, l)`: the key expires LINE_LINGER_MS after the last deadline rounded up to LINE_KEEP_STEP_MS
   * (nothing when the line is gone).
   */
  #lineKeep(key: string, now: number): void {
    const line = this.#line(key);
    if (!line || line.members.size === 0) return;
    const last = Math.max(...line.members.values());
    const by = Math.ceil(last / LINE_KEEP_STEP_MS) * LINE_KEEP_STEP_MS + LINE_LINGER_MS;
    this.#pexpire(key, luaMax(1, by - now));
  }

  /**
   * Lua `waiters_ahead(q, ticket)` (and `writers_ahead` with `counts`): the live waiters ahead of `ticket` that
   * `counts`, and how many wait. The negative control `respectQueue` counts none ahead.
   */
  #waitersAhead(
    q: string | undefined,
    ticket: string | undefined,
    now: number,
    counts?: (w: string) => boolean,
  ): [number, number] {
    // The smallest ticket reads no clock: nobody can be ahead of it (Lua `waiters_ahead`; `writers_ahead` always
    // reads the live line).
    const raw = counts ? [] : this.#lineRaw(q);
    const m = raw[0] !== undefined && raw[0] === ticket ? raw : this.#lineSorted(q, now);
    let ahead = 0;
    for (const w of m) if (luaLess(w, ticket) && (!counts || counts(w))) ahead++;
    return [this.respectQueue ? ahead : 0, m.length];
  }

  /** Lua `in_step(q, ticket, age)`: in line already, or its time plus its age within CLOCK_STEP_MS of TIME. */
  #inStep(q: string | undefined, ticket: string | undefined, age: number, now: number): boolean {
    if (this.#zscore(q, ticket) !== undefined || !this.checkClock) return true;
    const t = luaNumber(luaSub(ticket!, 1, 16));
    return t !== undefined && Math.abs(t + age - now) <= CLOCK_STEP_MS;
  }

  /** Lua `enqueue(q, ticket, life)`: joins or refreshes with a deadline `life` ms from now; `line_keep`. */
  #enqueue(q: string | undefined, ticket: string | undefined, life: number | undefined, now: number): void {
    if (life === undefined) throw new Error("ERR attempt to perform arithmetic on local 'life' (a nil value)");
    this.#zadd(q, now + life, ticket);
    this.#lineKeep(arg(q), now);
  }

  /**
   * Lua `wake(q, claimers, hold, quiet)`: when someone waits, the first `claimers` (undefined: the run of readers at
   * the head, or the head) have their deadlines shrunk to their claim window, and `"<claimers> <ticket> …"` is
   * published (with `+<hold>` after a grant for at most `hold` ms); with `quiet` (the claim window of a waiter
   * refused by the line alone), not when every claimer's entry already ends within its own window and at most
   * `QUIET_SLACK_MS` before that waiter asks again.
   */
  #wake(q: string | undefined, claimers: number | undefined, now: number, hold?: string, quiet?: number): void {
    const m = claimers === 0 ? this.#lineRaw(q) : this.#lineSorted(q, now);
    if (m.length === 0) return;
    let c = claimers;
    if (c === undefined) {
      c = 0;
      for (const w of m) {
        if (luaSub(w, -1) !== "r") break;
        c++;
      }
      if (c === 0) c = 1;
    }
    if (c > WAKE_SHOWN - 1) c = WAKE_SHOWN - 1;
    if (c > m.length) c = m.length;
    const shown: string[] = [];
    let told = true;
    for (let i = 1; i <= Math.min(m.length, c + 1); i++) {
      shown.push(m[i - 1]);
      if (i > c) continue;
      const by = now + (claimWindow(m[i - 1]) ?? 0);
      const score = this.#zscore(q, m[i - 1])!;
      if (score > by) {
        this.#zadd(q, by, m[i - 1]);
        told = false;
      } else if (quiet !== undefined && now + quiet > score + QUIET_SLACK_MS) told = false;
    }
    if (c > 0) this.#lineKeep(arg(q), now);
    if (quiet !== undefined && c > 0 && told) return;
    const payload = `${c} ${shown.join(" ")}${c === 0 && hold !== undefined ? ` +${hold}` : ""}`;
    this.publish(WAKE_PREFIX + sha1Hex(arg(q)).slice(0, 20), payload);
  }

  /** `rw_wake(q, readers)`: while readers hold, only the run of readers at the head may claim (0: a writer waits). */
  #rwWake(q: string | undefined, readers: boolean, now: number): void {
    if (!readers) {
      this.#wake(q, undefined, now);
      return;
    }
    let c = 0;
    for (const w of this.#lineSorted(q, now)) {
      if (luaSub(w, -1) !== "r") break;
      c++;
    }
    this.#wake(q, c, now);
  }

  // The commands the scripts send, as Redis answers them (a nil argument fails the call).

  /** A line's live key (an expired one is gone). */
  #line(key: string): LineSet | undefined {
    const line = this.#lines.get(key);
    if (!line || line.expiresAt > this.#now()) return line;
    this.#lines.delete(key);
    return undefined;
  }

  #zscore(q: string | undefined, member: string | undefined): number | undefined {
    return this.#line(arg(q))?.members.get(arg(member));
  }

  #zadd(q: string | undefined, score: number, member: string | undefined): void {
    const [key, ticket] = [arg(q), arg(member)];
    if (Number.isNaN(score)) throw new Error("ERR value is not a valid float");
    const line = this.#line(key) ?? { members: new Map<string, number>(), expiresAt: Number.POSITIVE_INFINITY };
    line.members.set(ticket, score);
    this.#lines.set(key, line);
  }

  /** Lua `line_leave(q, ticket)`: ZREM, then `line_keep` when it removed one. */
  #zrem(q: string | undefined, member: string | undefined): void {
    const [key, ticket] = [arg(q), arg(member)];
    const line = this.#line(key);
    if (!line) return;
    const removed = line.members.delete(ticket);
    if (line.members.size === 0) this.#lines.delete(key);
    else if (removed) this.#lineKeep(key, this.#scriptNow());
  }

  #pexpire(key: string, ms: number): void {
    const line = this.#line(key);
    if (line) line.expiresAt = this.#now() + integerArgument(ms);
  }

  /** SET key value PX ms: the ms must be a positive integer, as Redis reads it. */
  #setPx(key: string | undefined, value: string | undefined, px: string | undefined): void {
    const [k, v] = [arg(key), arg(value)];
    this.set(k, v, expiryOf(px));
  }

  /** `SET key value NX PX px`: the expiry is checked first (as Redis does), then set only where the key is absent. */
  #setNx(key: string | undefined, value: string | undefined, px: string | undefined): boolean {
    const ms = expiryOf(px);
    if (this.#exists(key)) return false;
    this.set(arg(key), arg(value), ms);
    return true;
  }

  #pttl(key: string | undefined): number {
    return this.pttl(arg(key));
  }

  #exists(key: string | undefined): boolean {
    return this.get(arg(key)) !== undefined;
  }

  /** Whether waiters ahead stop a grant (the project's negative control turns it off). */
  protected get respectQueue(): boolean {
    return true;
  }

  /** Whether a ticket out of step with the node's clock is refused (the project's negative control turns it off). */
  protected get checkClock(): boolean {
    return true;
  }

  /** Whether the fencing write-back raises the counters (the project's negative controls turn it off). */
  protected get writeBack(): boolean {
    return true;
  }

  /** The node's clock for expiries: the time the running script started, else the clock's now. */
  #now(): number {
    return this.#scriptTime?.now ?? this.clock.now();
  }

  /** The running script's `NOW` (the Lua line's: TIME in ms). */
  #scriptNow(): number {
    return Math.floor(this.#timeUs() / 1000);
  }

  /** The node's `TIME` in µs: its clock's epoch (or now) plus the skew; while a script runs, the script's start. */
  #timeUs(): number {
    if (this.#scriptTime) return this.#scriptTime.timeUs;
    const epoch = this.clock.epoch ? this.clock.epoch() : this.clock.now();
    return Math.max(0, Math.round((epoch + this.clockSkewMs) * 1000));
  }
}

/** `SET`'s `PX` argument as Redis checks it, before the key is looked at: a positive integer of ms. */
function expiryOf(px: string | undefined): number {
  const text = arg(px);
  if (!/^-?(0|[1-9][0-9]*)$/.test(text) || !Number.isSafeInteger(Number(text))) {
    throw new Error("ERR value is not an integer or out of range");
  }
  if (Number(text) <= 0) throw new Error("ERR invalid expire time in 'set' command");
  return Number(text);
}
