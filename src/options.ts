// Options, their defaults, and the checks that run before any request.
import { systemClock, type Clock } from "./clock.ts";
import { InvalidArgumentError } from "./errors.ts";
import { MIN_SECRET_LENGTH } from "./redact.ts";

/**
 * Options of a {@link Redlock}. Every field is optional; the defaults are listed here and in the README.
 * @example
 * const redlock = new Redlock(nodes, { retryCount: 3, nodeTimeout: 300 });
 */
export interface RedlockOptions {
  /** Attempts after the first one; `-1` retries until the caller's signal aborts. Default 10. */
  retryCount?: number;
  /** Mean wait between attempts in ms. Default 200. */
  retryDelay?: number;
  /** The wait is `retryDelay ± retryJitter`, uniformly random. Default 100. */
  retryJitter?: number;
  /** Clock drift allowance as a fraction of the ttl (plus 2 ms). Default 0.01. */
  driftFactor?: number;
  /**
   * Per-request timeout in ms; must be below every ttl used. Default 500: an HTTPS request to a
   * hosted database, new TLS connection included, normally answers in well under that, and a hung
   * node then costs at most 5 % of a 10 s ttl.
   */
  nodeTimeout?: number;
  /**
   * Send the requests to one node that start in the same turn (many locks taken or released together)
   * as one pipeline request. Default true. Applies to the clients built from `{ url, token }`.
   */
  batching?: boolean;
  /** Time source; replace only in tests (see {@link Clock}). */
  clock?: Clock;
}

/** Options of one acquisition; retry settings here override the instance's. */
export interface AcquireOptions {
  /** Aborting stops retrying, cuts the requests in flight, releases what was set and rejects with the signal's reason. */
  signal?: AbortSignal;
  retryCount?: number;
  retryDelay?: number;
  retryJitter?: number;
  /** Give up once the next attempt would start more than this many ms after the call (0 = one attempt). */
  maxWait?: number;
  /**
   * Hand out a fencing token (`lock.fence`): costs one more round trip (the write-back round).
   * Default false.
   */
  fencing?: boolean;
}

/** Options of {@link Redlock.using}: those of acquire, plus how the lock is kept. */
export interface UsingOptions extends AcquireOptions {
  /** Cap on the total holding time in ms; reaching it aborts the routine's signal with {@link MaxHoldError}. Default: none. */
  maxHold?: number;
  /**
   * Extend when this many ms of validity are left. Must be below the ttl. Default: half the ttl, and
   * at least nodeTimeout + 50 ms where the ttl allows (see {@link Redlock.defaultThreshold}).
   */
  extendThreshold?: number;
}

/** Options after defaults and checks. */
export type ResolvedOptions = Required<RedlockOptions>;

/** The defaults of {@link RedlockOptions}. */
export const DEFAULTS: Readonly<Omit<ResolvedOptions, "clock">> = Object.freeze({
  retryCount: 10,
  retryDelay: 200,
  retryJitter: 100,
  driftFactor: 0.01,
  nodeTimeout: 500,
  batching: true,
});

/** The longest ttl accepted (2^31 − 1 ms, the largest timer delay runtimes support). */
export const MAX_TTL = 2 ** 31 - 1;

export function resolveOptions(options: RedlockOptions | undefined, where = "options"): ResolvedOptions {
  if (options !== undefined && (typeof options !== "object" || options === null)) {
    throw new InvalidArgumentError(where, "must be an object");
  }
  const o = { ...DEFAULTS, clock: systemClock, ...definedOnly(options ?? {}) };
  checkRetry(o, where);
  checkNumber(`${where}.driftFactor`, o.driftFactor, { min: 0, below: 1 });
  checkNumber(`${where}.nodeTimeout`, o.nodeTimeout, { min: 1, max: MAX_TTL, integer: true });
  if (typeof o.batching !== "boolean") throw new InvalidArgumentError(`${where}.batching`, "must be a boolean");
  const clock = o.clock as Partial<Clock> | null;
  if (!clock || ["now", "epoch", "sleep", "timeout"].some((m) => typeof clock[m as keyof Clock] !== "function")) {
    throw new InvalidArgumentError(`${where}.clock`, "must have now, epoch, sleep and timeout functions");
  }
  return o;
}

/** Checks retry settings (also used for per-call overrides). */
export function checkRetry(o: Pick<ResolvedOptions, "retryCount" | "retryDelay" | "retryJitter">, where: string): void {
  checkNumber(`${where}.retryCount`, o.retryCount, { min: -1, max: 1_000_000, integer: true });
  checkNumber(`${where}.retryDelay`, o.retryDelay, { min: 0, max: MAX_TTL });
  checkNumber(`${where}.retryJitter`, o.retryJitter, { min: 0, max: MAX_TTL });
}

/**
 * The prefix of the keys the library keeps for itself on the lock nodes (fence counters): a resource
 * may not start with it, or locking it would collide with another resource's counter.
 */
export const RESERVED_PREFIX = "edge-redlock:";

/** Resources: a non-empty string or a non-empty (dense) array of distinct non-empty strings, none in the reserved namespace. */
export function checkResources(resources: unknown): string[] {
  const list = typeof resources === "string" ? [resources] : resources;
  if (!Array.isArray(list) || list.length === 0) throw new InvalidArgumentError("resources", "must be a non-empty array of strings");
  for (let i = 0; i < list.length; i++) {
    const key: unknown = list[i];
    if (!(i in list) || typeof key !== "string" || key.length === 0) throw new InvalidArgumentError(`resources[${i}]`, "must be a non-empty string");
    if (key.startsWith(RESERVED_PREFIX)) throw new InvalidArgumentError(`resources[${i}]`, `must not start with "${RESERVED_PREFIX}" (reserved for the library's own keys)`);
  }
  if (new Set(list).size !== list.length) throw new InvalidArgumentError("resources", "must not contain the same key twice");
  return [...list];
}

/** What `@upstash/redis` accepts as a base URL (after one trailing slash is removed). */
const CLIENT_URL = /^https?:\/\/[^\s#$./?].\S*$/;

/**
 * A REST URL: http(s), a host, no whitespace or control characters, no credentials, query or
 * fragment. Returns its identity (scheme, host, port, path without trailing slashes) to tell two
 * nodes apart. The message never repeats the URL: it may hold a secret.
 */
export function checkUrl(url: unknown, where: string): string {
  if (typeof url !== "string" || /[\s\u0000-\u001f\u007f]/.test(url)) throw new InvalidArgumentError(where, "must be an http(s) URL without whitespace or control characters");
  if (!/^https?:\/\//i.test(url) || !URL.canParse(url)) throw new InvalidArgumentError(where, "must be an http(s) URL");
  const parsed = new URL(url);
  const authority = url.slice(url.indexOf("//") + 2).split(/[/?#]/)[0];
  if (authority.includes("@") || parsed.username !== "" || parsed.password !== "") {
    throw new InvalidArgumentError(where, "must not contain credentials (user:password@): the token goes in `token`");
  }
  if (url.includes("?") || url.includes("#")) throw new InvalidArgumentError(where, "must not contain a query or a fragment");
  if (!CLIENT_URL.test(url.replace(/\/$/, ""))) throw new InvalidArgumentError(where, "must be an http(s) URL with a host name");
  const port = parsed.port || (parsed.protocol === "https:" ? "443" : "80");
  return `${canonicalHost(parsed.hostname)}:${port}${parsed.pathname.replace(/\/+$/, "")}`;
}

/** One spelling per host: lower case (URL does that), no trailing dot, IPv4-mapped IPv6 as IPv4. */
function canonicalHost(hostname: string): string {
  const host = hostname.replace(/\.$/, "");
  const mapped = /^\[::ffff:(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))\]$/i.exec(host);
  if (!mapped) return host;
  if (mapped[1]) return mapped[1];
  const [hi, lo] = [parseInt(mapped[2], 16), parseInt(mapped[3], 16)];
  return [hi >> 8, hi & 255, lo >> 8, lo & 255].join(".");
}

/** A REST token: at least 8 visible ASCII characters (no whitespace or control characters). The message never repeats it. */
export function checkToken(token: unknown, where: string): string {
  if (typeof token !== "string" || !/^[\x21-\x7e]+$/.test(token) || token.length < MIN_SECRET_LENGTH) {
    throw new InvalidArgumentError(where, `must be a string of at least ${MIN_SECRET_LENGTH} visible ASCII characters (no whitespace or control characters)`);
  }
  return token;
}

/** A ttl: an integer number of ms, above nodeTimeout, at most {@link MAX_TTL}. */
export function checkTtl(ttl: unknown, nodeTimeout: number): number {
  checkNumber("ttl", ttl, { min: 1, max: MAX_TTL, integer: true });
  if ((ttl as number) <= nodeTimeout) {
    throw new InvalidArgumentError("ttl", `must be greater than nodeTimeout (${nodeTimeout} ms); got ${ttl as number}`);
  }
  return ttl as number;
}

/**
 * When auto-extension starts by default: half the ttl left, and never less than nodeTimeout + 50 ms
 * (an extension round may take up to nodeTimeout).
 */
export function defaultThreshold(ttl: number, nodeTimeout: number): number {
  return Math.max(ttl / 2, Math.min(ttl - 1, nodeTimeout + 50));
}

/** The checks of `using()` (lock or semaphore): a ttl, a routine, and how the hold is kept. */
export function checkUsing(ttl: unknown, routine: unknown, options: UsingOptions | undefined, nodeTimeout: number): { maxHold?: number; threshold: number } {
  checkTtl(ttl, nodeTimeout);
  if (typeof routine !== "function") throw new InvalidArgumentError("routine", "must be a function");
  const maxHold = checkDuration("options.maxHold", options?.maxHold, 1);
  const threshold = checkDuration("options.extendThreshold", options?.extendThreshold, 1) ?? defaultThreshold(ttl as number, nodeTimeout);
  if (threshold >= (ttl as number)) throw new InvalidArgumentError("options.extendThreshold", `must be below the ttl (${ttl as number} ms)`);
  return { maxHold, threshold };
}

/** An optional AbortSignal. */
export function checkSignal(signal: unknown, where: string): AbortSignal | undefined {
  if (signal === undefined) return undefined;
  if (typeof (signal as AbortSignal)?.aborted !== "boolean" || typeof (signal as AbortSignal).addEventListener !== "function") {
    throw new InvalidArgumentError(where, "must be an AbortSignal");
  }
  return signal as AbortSignal;
}

/** An optional non-negative duration in ms. */
export function checkDuration(name: string, value: unknown, min = 0): number | undefined {
  if (value === undefined) return undefined;
  checkNumber(name, value, { min, max: MAX_TTL });
  return value as number;
}

function checkNumber(name: string, value: unknown, rule: { min: number; max?: number; below?: number; integer?: boolean }): void {
  if (typeof value !== "number" || !Number.isFinite(value)) throw new InvalidArgumentError(name, `must be a finite number; got ${typeof value === "number" ? value : typeof value}`);
  if (rule.integer && !Number.isInteger(value)) throw new InvalidArgumentError(name, `must be an integer; got ${value}`);
  if (value < rule.min) throw new InvalidArgumentError(name, `must be at least ${rule.min}; got ${value}`);
  if (rule.max !== undefined && value > rule.max) throw new InvalidArgumentError(name, `must be at most ${rule.max}; got ${value}`);
  if (rule.below !== undefined && value >= rule.below) throw new InvalidArgumentError(name, `must be below ${rule.below}; got ${value}`);
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
