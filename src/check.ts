// The checks that run before any request: every argument and option, with a typed error that never
// repeats a secret.
import { InvalidArgumentError } from "./errors.ts";
import {
  DEFAULTS,
  MAX_TTL,
  RESERVED_PREFIX,
  defaultThreshold,
  type AcquireOptions,
  type RedlockOptions,
  type ResolvedOptions,
  type RetryPolicy,
  type UsingOptions,
} from "./options.ts";
import { systemClock, type Clock } from "./support/clock.ts";
import { MIN_SECRET_LENGTH } from "./support/redact.ts";

export function resolveOptions(options: RedlockOptions | undefined, where = "options"): ResolvedOptions {
  if (options !== undefined && (typeof options !== "object" || options === null)) {
    throw new InvalidArgumentError(where, "must be an object");
  }
  if (options) checkOptionNames(options, REDLOCK_OPTION_NAMES, where);
  const o = { ...DEFAULTS, clock: systemClock, ...definedOnly(options ?? {}) };
  checkRetry(o, where);
  checkNumber(`${where}.driftFactor`, o.driftFactor, { min: 0, below: 1 });
  checkNumber(`${where}.nodeTimeout`, o.nodeTimeout, { min: 1, max: MAX_TTL, integer: true });
  if (typeof o.batching !== "boolean") throw new InvalidArgumentError(`${where}.batching`, "must be a boolean");
  if (o.onEvent !== undefined && typeof o.onEvent !== "function") {
    throw new InvalidArgumentError(`${where}.onEvent`, "must be a function");
  }
  if (typeof o.warnings !== "boolean") throw new InvalidArgumentError(`${where}.warnings`, "must be a boolean");
  if (typeof o.fair !== "boolean") throw new InvalidArgumentError(`${where}.fair`, "must be a boolean");
  const clock = o.clock as Partial<Clock> | null;
  if (!clock || ["now", "epoch", "sleep", "timeout"].some((m) => typeof clock[m as keyof Clock] !== "function")) {
    throw new InvalidArgumentError(`${where}.clock`, "must have now, epoch, sleep and timeout functions");
  }
  return o;
}

/** The retry settings of one acquisition: the call's, else the instance's, checked. */
export function checkRetryPolicy(
  options: AcquireOptions,
  defaults: Pick<ResolvedOptions, "retryCount" | "retryDelay" | "retryJitter"> & { fair?: boolean },
): RetryPolicy {
  if (typeof options !== "object" || options === null) throw new InvalidArgumentError("options", "must be an object");
  checkOptionNames(options, ACQUIRE_OPTION_NAMES, "options");
  const signal = checkSignal(options.signal, "options.signal");
  const policy = {
    retryCount: options.retryCount ?? defaults.retryCount,
    retryDelay: options.retryDelay ?? defaults.retryDelay,
    retryJitter: options.retryJitter ?? defaults.retryJitter,
  };
  checkRetry(policy, "options");
  if (options.fair !== undefined && typeof options.fair !== "boolean")
    throw new InvalidArgumentError("options.fair", "must be a boolean");
  const maxWait = checkDuration("options.maxWait", options.maxWait);
  if (options.maxRequests !== undefined)
    checkNumber("options.maxRequests", options.maxRequests, { min: 1, max: 1_000_000, integer: true });
  // One try never enqueues: there is no later attempt to be served by. maxWait, when given, decides.
  const retries = maxWait !== undefined ? maxWait > 0 : policy.retryCount !== 0;
  const fair = (options.fair ?? defaults.fair ?? true) && retries;
  return { ...policy, maxWait, signal, joins: retries, fair, maxRequests: options.maxRequests };
}

/** Checks retry settings (also used for per-call overrides). */
export function checkRetry(o: Pick<ResolvedOptions, "retryCount" | "retryDelay" | "retryJitter">, where: string): void {
  checkNumber(`${where}.retryCount`, o.retryCount, { min: -1, max: 1_000_000, integer: true });
  checkNumber(`${where}.retryDelay`, o.retryDelay, { min: 0, max: MAX_TTL });
  checkNumber(`${where}.retryJitter`, o.retryJitter, { min: 0, max: MAX_TTL });
}

/**
 * Resources: a non-empty string or a non-empty (dense) array of distinct non-empty strings, none in the reserved
 * namespace.
 */
/** The longest resource name in UTF-8 bytes: Upstash's 32 KB key limit, less room for the fence key's prefix. */
export const MAX_RESOURCE_BYTES = 32 * 1024 - 64;

export function checkResources(resources: unknown): string[] {
  const list = typeof resources === "string" ? [resources] : resources;
  if (!Array.isArray(list) || list.length === 0)
    throw new InvalidArgumentError("resources", "must be a non-empty array of strings");
  for (let i = 0; i < list.length; i++) {
    const key: unknown = list[i];
    if (!(i in list) || typeof key !== "string" || key.length === 0)
      throw new InvalidArgumentError(`resources[${i}]`, "must be a non-empty string");
    if (key.length > MAX_RESOURCE_BYTES / 3 && new TextEncoder().encode(key).length > MAX_RESOURCE_BYTES)
      throw new InvalidArgumentError(
        `resources[${i}]`,
        `must be at most ${MAX_RESOURCE_BYTES} bytes in UTF-8 (Upstash refuses keys over 32 KB; ` +
          "room is left for the library's fence key)",
      );
    if (key.startsWith(RESERVED_PREFIX))
      throw new InvalidArgumentError(
        `resources[${i}]`,
        `must not start with "${RESERVED_PREFIX}" (reserved for the library's own keys)`,
      );
  }
  if (new Set(list).size !== list.length)
    throw new InvalidArgumentError("resources", "must not contain the same key twice");
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
  const checked = nodeIdentity(url);
  if ("problem" in checked) throw new InvalidArgumentError(where, checked.problem);
  return checked.identity;
}

/**
 * What tells two nodes apart: one database has one identity under every spelling of its URL (host case,
 * a trailing dot or slash, an IPv4-mapped IPv6 address, the default port). Or why `url` is no REST URL,
 * in words that never repeat it.
 * @example
 * ```ts
 * nodeIdentity("https://EU1.example.com./"); // { identity: "eu1.example.com:443" }
 * ```
 */
export function nodeIdentity(url: unknown): { identity: string } | { problem: string } {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses
  if (typeof url !== "string" || /[\s\u0000-\u001f\u007f]/.test(url))
    return { problem: "must be an http(s) URL without whitespace or control characters" };
  if (!/^https?:\/\//i.test(url) || !URL.canParse(url))
    return {
      problem: /^rediss?:\/\//i.test(url)
        ? "must be the database's REST URL (https://…), not its redis:// URL"
        : "must be an http(s) URL (the database's REST URL, https://…)",
    };
  const parsed = new URL(url);
  const authority = url.slice(url.indexOf("//") + 2).split(/[/?#]/)[0];
  if (authority.includes("@") || parsed.username !== "" || parsed.password !== "") {
    return { problem: "carries credentials (user:password@); give the token on its own" };
  }
  if (url.includes("?") || url.includes("#")) return { problem: "must not contain a query or a fragment" };
  if (!CLIENT_URL.test(url.replace(/\/$/, ""))) return { problem: "must be an http(s) URL with a host name" };
  const port = parsed.port || (parsed.protocol === "https:" ? "443" : "80");
  return { identity: `${canonicalHost(parsed.hostname)}:${port}${parsed.pathname.replace(/\/+$/, "")}` };
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

/**
 * A REST token: at least 8 visible ASCII characters (no whitespace or control characters). The message never repeats
 * it.
 */
export function checkToken(token: unknown, where: string): string {
  const problem = tokenProblem(token);
  if (problem) throw new InvalidArgumentError(where, problem);
  return token as string;
}

/**
 * Why `token` cannot be a REST token, in words that never repeat it; undefined when it can. Shorter
 * tokens are refused because a secret that short cannot be kept out of failure texts reliably.
 * @example
 * ```ts
 * tokenProblem("abc"); // "must be a string of at least 8 visible ASCII characters (…)"
 * ```
 */
export function tokenProblem(token: unknown): string | undefined {
  if (typeof token === "string" && /^[\x21-\x7e]+$/.test(token) && token.length >= MIN_SECRET_LENGTH) return undefined;
  const what = `at least ${MIN_SECRET_LENGTH} visible ASCII characters`;
  return `must be a string of ${what} (no whitespace or control characters)`;
}

/** The options of `new Redlock` (and `fromEnv`, less its `nodes`). */
export const REDLOCK_OPTION_NAMES = [
  "retryCount",
  "retryDelay",
  "retryJitter",
  "driftFactor",
  "nodeTimeout",
  "batching",
  "warnings",
  "fair",
  "clock",
  "onEvent",
] as const;

/** The options of `fromEnv`: a Redlock's, and how many databases to read. */
export const FROM_ENV_OPTION_NAMES = [...REDLOCK_OPTION_NAMES, "nodes"] as const;

/** The options of an acquisition (`acquire`, `acquireRead`, `acquireWrite`, a semaphore's `acquire`). */
export const ACQUIRE_OPTION_NAMES = [
  "signal",
  "retryCount",
  "retryDelay",
  "retryJitter",
  "maxWait",
  "maxRequests",
  "fair",
  "fencing",
] as const;

/** The options of `using()`: an acquisition's, and how the hold is kept. */
const USING_OPTION_NAMES = [...ACQUIRE_OPTION_NAMES, "maxHold", "extendThreshold"] as const;

/** What a name that is not an option of one call may have meant. */
const MEANT: Record<string, string> = {
  wait: "maxWait (wait is the middlewares' name)",
  timeout: "nodeTimeout (a Redlock option) or signal",
  ttl: "the ttl argument",
  retries: "retryCount",
  fence: "fencing",
};

/**
 * Refuses an option `options` has but `known` does not list: a misspelled option would otherwise be ignored, and the
 * call would run with the default (a JavaScript caller, or TypeScript given a variable, has no compiler to tell).
 * @example
 * ```ts
 * checkOptionNames({ retryCont: 3 }, ACQUIRE_OPTION_NAMES, "options"); // throws: options.retryCont is not …
 * ```
 */
export function checkOptionNames(options: object, known: readonly string[], where: string): void {
  for (const name of Object.keys(options)) {
    // An option left undefined asks for the default either way: a caller spreading a wider object is not refused.
    if (known.includes(name) || (options as Record<string, unknown>)[name] === undefined) continue;
    const lower = name.toLowerCase();
    const meant = known.find((k) => k.toLowerCase() === lower) ?? MEANT[lower] ?? nearest(lower, known);
    throw new InvalidArgumentError(
      `${where}.${name}`,
      `is not an option here${meant ? ` (did you mean ${meant}?)` : ""}; the options are ${known.join(", ")}`,
    );
  }
}

/** The known name fewest edits (insert, delete, replace, swap two neighbours) from `name`, if two or fewer. */
function nearest(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let fewest = 3;
  for (const k of known) {
    const n = edits(name, k.toLowerCase());
    if (n < fewest) [best, fewest] = [k, n];
  }
  return best;
}

/** The optimal string alignment distance of `a` and `b`. */
function edits(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.length][b.length];
}

/** A ttl: an integer number of ms, above nodeTimeout, at most {@link MAX_TTL}. */
export function checkTtl(ttl: unknown, nodeTimeout: number): number {
  // The bound a ttl of 0 or less misses is nodeTimeout, not 1: one message gives the value that works.
  if (typeof ttl === "number" && nodeTimeout > 0 && ttl <= nodeTimeout)
    throw new InvalidArgumentError("ttl", `must be greater than nodeTimeout (${nodeTimeout} ms); got ${ttl}`);
  checkNumber("ttl", ttl, { min: 1, max: MAX_TTL, integer: true });
  return ttl as number;
}

/** The checks of `using()` (lock or semaphore): a ttl, a routine, and how the hold is kept. */
export function checkUsing(
  ttl: unknown,
  routine: unknown,
  options: UsingOptions | undefined,
  nodeTimeout: number,
): { maxHold?: number; threshold: number; acquire: AcquireOptions } {
  checkTtl(ttl, nodeTimeout);
  if (typeof routine !== "function") throw new InvalidArgumentError("routine", "must be a function");
  if (options !== undefined && (typeof options !== "object" || options === null))
    throw new InvalidArgumentError("options", "must be an object");
  if (options) checkOptionNames(options, USING_OPTION_NAMES, "options");
  const maxHold = checkDuration("options.maxHold", options?.maxHold, 1);
  const threshold =
    checkDuration("options.extendThreshold", options?.extendThreshold, 1) ??
    defaultThreshold(ttl as number, nodeTimeout);
  if (threshold >= (ttl as number))
    throw new InvalidArgumentError("options.extendThreshold", `must be below the ttl (${ttl as number} ms)`);
  const { maxHold: _hold, extendThreshold: _threshold, ...acquire } = options ?? {};
  return { maxHold, threshold, acquire };
}

/** An optional AbortSignal. */
export function checkSignal(signal: unknown, where: string): AbortSignal | undefined {
  if (signal === undefined) return undefined;
  if (
    typeof (signal as AbortSignal)?.aborted !== "boolean" ||
    typeof (signal as AbortSignal).addEventListener !== "function"
  ) {
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

function checkNumber(
  name: string,
  value: unknown,
  rule: { min: number; max?: number; below?: number; integer?: boolean },
): void {
  if (typeof value !== "number" || !Number.isFinite(value))
    throw new InvalidArgumentError(
      name,
      `must be a finite number; got ${typeof value === "number" ? value : typeof value}`,
    );
  if (rule.integer && !Number.isInteger(value))
    throw new InvalidArgumentError(name, `must be an integer; got ${value}`);
  if (value < rule.min) throw new InvalidArgumentError(name, `must be at least ${rule.min}; got ${value}`);
  if (rule.max !== undefined && value > rule.max)
    throw new InvalidArgumentError(name, `must be at most ${rule.max}; got ${value}`);
  if (rule.below !== undefined && value >= rule.below)
    throw new InvalidArgumentError(name, `must be below ${rule.below}; got ${value}`);
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
