// Typed errors. Messages and tallies name nodes by index and label, never a token or a lock value.
import { quorumOf } from "./quorum/rules.ts";
import type { NodeVote } from "./scripts/vote.ts";

/**
 * The base class of every error this library throws.
 * @example
 * ```ts
 * try { await redlock.acquire(["k"], 5_000); } catch (e) { if (e instanceof RedlockError) console.warn(e.message); }
 * ```
 */
export class RedlockError extends Error {
  /**
   * An error with `message`; its `name` is the class's name.
   * @param message what went wrong; never a token or a lock value
   * @param options `cause`: the error behind this one
   */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * A bad argument or option, thrown before any request is sent.
 * @example
 * ```ts
 * import { Redlock } from "edge-redlock";
 *
 * new Redlock([]); // throws InvalidArgumentError: nodes must hold at least one node
 * ```
 */
export class InvalidArgumentError extends RedlockError {
  /** The argument or option at fault, e.g. `"ttl"` or `"options.nodeTimeout"`. */
  readonly argument: string;
  /**
   * An error naming `argument` and what is wrong with it.
   * @param argument the argument or option at fault
   * @param problem what is wrong with it, in words that never repeat a secret
   */
  constructor(argument: string, problem: string) {
    super(`${argument} ${problem}`);
    this.argument = argument;
  }
}

/**
 * One round as it stood when it was decided.
 * @example
 * ```ts
 * try {
 *   await redlock.acquire(["k"], 5_000);
 * } catch (error) {
 *   if (!(error instanceof LockAcquisitionError)) throw error;
 *   const { granted, denied, errors, validityMs } = error.attempts.at(-1)!;
 * }
 * ```
 */
export interface AttemptTally {
  /** 1 for the first attempt. */
  attempt: number;
  /** Nodes that granted. */
  granted: number;
  /** Nodes that answered and refused (held by someone else). */
  denied: number;
  /** Nodes that gave no usable answer (timeout, network, HTTP status, unexpected reply). */
  errors: number;
  /** ms from the first request to the decision. */
  elapsedMs: number;
  /** ttl − elapsed − drift: > 0 means the grants were still valid when counted. */
  validityMs: number;
  /** Per node, what it answered (`unanswered` when the round was decided first). */
  votes: NodeVote[];
}

/**
 * Why a lock could not be acquired or extended:
 * `held` — nodes answered that another holder has it;
 * `unreachable` — too many nodes gave no usable answer for a quorum;
 * `expired` — a quorum granted, but the round took so long that no validity was left;
 * `lost` — (extension only) the lock's validity had already ended before the extension, or its keys
 * are gone from the nodes that answered;
 * `released` — (extension only) `release()` was called before the extension completed.
 * @example
 * ```ts
 * function refusal(error: LockAcquisitionError): Response {
 *   if (error.reason === "held") return new Response("busy", { status: 423 });
 *   return new Response("unavailable", { status: 503 });
 * }
 * ```
 */
export type FailureReason = "held" | "unreachable" | "expired" | "lost" | "released" | "budget";

/** An acquisition stopped by its `maxRequests`: how many requests it had sent, and what the next attempt needed. */
export interface RequestBudget {
  maxRequests: number;
  sent: number;
  /** The most the next attempt could send, with what must stay reserved (leaving the line). */
  next: number;
}

/**
 * The lock (or a semaphore's permit) was not acquired after every attempt; `reason` `held` means the
 * lock is held by someone else (for a semaphore: every permit is held), `retryAfterMs` when it may free up. Each
 * failed attempt was released on every node that
 * may hold it (a node where that release fails keeps the key until its ttl; nobody holds it).
 * @example
 * ```ts
 * try { await redlock.acquire(["k"], 5_000); }
 * catch (e) { if (e instanceof LockAcquisitionError && e.reason === "held") console.log(e.retryAfterMs); }
 * ```
 */
export class LockAcquisitionError extends RedlockError {
  /** Why the last attempt failed: `held`, `unreachable` or `expired`. */
  readonly reason: FailureReason;
  /** The resources asked for. */
  readonly resources: readonly string[];
  /** Every attempt's tally, the first one first. */
  readonly attempts: AttemptTally[];
  /**
   * Made by the library when every attempt failed; the message says why the last one did.
   * @param resources the resources asked for
   * @param attempts every attempt's tally
   * @param what a lock, or a semaphore's permit (the message says which)
   * @param budget when `maxRequests` stopped it: reason `budget`
   */
  constructor(
    resources: readonly string[],
    attempts: AttemptTally[],
    what: "lock" | "permit" = "lock",
    budget?: RequestBudget,
  ) {
    super(acquisitionMessage(resources, attempts, what, undefined, undefined, budget));
    this.reason = budget ? "budget" : failureReason(attempts[attempts.length - 1]);
    this.resources = resources;
    this.attempts = attempts;
    whats.set(this, what);
    if (budget) budgets.set(this, budget);
  }

  /**
   * When to ask again (ms), if known: the holder's remaining time as the denying nodes of the last attempt
   * reported it, times one plus the waiters that were ahead in line (each may hold as long).
   */
  get retryAfterMs(): number | undefined {
    const last = this.attempts[this.attempts.length - 1];
    const pttl = holderPttl(last);
    return pttl === undefined ? undefined : pttl * (1 + (waitersAhead(last) ?? 0));
  }
}

/**
 * The lock could not be extended: treat it as lost and stop acting on it.
 * @example
 * ```ts
 * const work = new AbortController(); // what acts under the lock follows work.signal
 * try { await lock.extend(5_000); } catch (e) { if (e instanceof LockExtensionError) work.abort(e); }
 * ```
 */
export class LockExtensionError extends RedlockError {
  /** Why the lock is lost: `lost`, `released`, `held`, `unreachable` or `expired`. */
  readonly reason: FailureReason;
  /** The lock's resources. */
  readonly resources: readonly string[];
  /** The extension round, absent when no request was sent (validity over, or the lock released). */
  readonly tally?: AttemptTally;
  /**
   * Made by the library when an extension failed or could not be sent.
   * @param resources the lock's resources
   * @param tally the extension round, when one was sent
   * @param reason without a round: `lost` (validity over) or `released`
   */
  constructor(resources: readonly string[], tally?: AttemptTally, reason: "lost" | "released" = "lost") {
    const why = tally ? extensionReason(tally) : reason;
    super(extensionMessage(resources, why, tally, undefined));
    this.reason = why;
    this.resources = resources;
    this.tally = tally;
  }
}

/** A refusal from a node where the key is gone (PTTL -2) means lost, not taken by another holder. */
function extensionReason(tally: AttemptTally): FailureReason {
  const reason = failureReason(tally);
  const heldElsewhere = tally.votes.some((v) => v.outcome === "denied" && v.pttl !== -2);
  return reason === "held" && !heldElsewhere ? "lost" : reason;
}

/** Why an attempt with this tally failed: `expired` (a quorum, too late), `unreachable` or `held`. */
export function failureReason(tally: AttemptTally): FailureReason {
  const nodes = tally.votes.length;
  const quorum = quorumOf(nodes);
  if (tally.granted >= quorum) return "expired";
  return tally.errors > nodes - quorum ? "unreachable" : "held";
}

/** What the messages call each node: the labels of the Redlock's nodes, else `node <n>` (1-based). */
type Names = readonly string[] | undefined;
const nameOf = (names: Names, node: number) => names?.[node] ?? `node ${node + 1}`;
const whats = new WeakMap<LockAcquisitionError, "lock" | "permit">();
const budgets = new WeakMap<LockAcquisitionError, RequestBudget>();

/** How many resource names a message shows, and how much of each. */
const SHOWN_RESOURCES = 3;
const SHOWN_NAME_LENGTH = 60;

/** The first few resources, each cut short: `"a", "b", "c" and 4 more`. */
function showResources(resources: readonly string[]): string {
  const shown = resources
    .slice(0, SHOWN_RESOURCES)
    .map((r) => JSON.stringify(r.length > SHOWN_NAME_LENGTH ? `${r.slice(0, SHOWN_NAME_LENGTH)}…` : r));
  const more = resources.length - shown.length;
  return more > 0 ? `${shown.join(", ")} and ${more} more` : shown.join(", ");
}

function acquisitionMessage(
  resources: readonly string[],
  attempts: AttemptTally[],
  what: "lock" | "permit",
  names: Names,
  waitedMs?: number,
  budget?: RequestBudget,
): string {
  const last = attempts[attempts.length - 1];
  const subject =
    what === "permit" ? `a permit of semaphore ${showResources(resources)}` : `a lock on ${showResources(resources)}`;
  const waited = waitedMs === undefined ? "" : ` over ${Math.round(waitedMs)} ms`;
  const reason = failureReason(last);
  const held = describe(reason, last, what, names);
  // Spent on nodes that fail, a larger budget only sends more requests to them.
  const advice = reason === "held" ? "raise maxRequests or lower maxWait" : "the nodes are failing, not busy";
  const detail = budget
    ? `the next attempt could pass maxRequests (${budget.sent} of ${budget.maxRequests} requests sent, the next ` +
      `needs up to ${budget.next}): ${advice}; the last attempt: ${held}`
    : held;
  return `could not acquire ${subject} after ${attempts.length} attempt(s)${waited}: ${detail}`;
}

function extensionMessage(
  resources: readonly string[],
  why: FailureReason,
  tally: AttemptTally | undefined,
  names: Names,
): string {
  const detail = tally
    ? describe(why, tally, "lock", names)
    : why === "released"
      ? "it was released"
      : "its validity ended before the extension";
  return `lock on ${showResources(resources)} lost: ${detail}`;
}

/**
 * @internal Names the nodes in `error`'s message by `labels` (a Redlock's nodes, in order), and says how
 * long the acquisition waited. Returns the error.
 */
export function nameNodes<E extends LockAcquisitionError | LockExtensionError>(
  error: E,
  labels: readonly string[],
  waitedMs?: number,
): E {
  if (error instanceof LockAcquisitionError) {
    const what = whats.get(error) ?? "lock";
    error.message = acquisitionMessage(error.resources, error.attempts, what, labels, waitedMs, budgets.get(error));
  } else if (error.tally) {
    error.message = extensionMessage(error.resources, error.reason, error.tally, labels);
  }
  return error;
}

function describe(reason: FailureReason, tally: AttemptTally, what: "lock" | "permit", names: Names): string {
  const { granted, denied, errors, votes } = tally;
  const counts = `${granted} granted, ${denied} denied, ${errors} failed of ${votes.length} nodes`;
  if (reason === "expired") return `quorum reached too late (${counts}, validity ${Math.round(tally.validityMs)} ms)`;
  if (reason === "unreachable") {
    const failed = votes.flatMap((v) => (v.outcome === "error" ? [`${nameOf(names, v.node)}: ${v.cause}`] : []));
    const unanswered = votes.filter((v) => v.outcome === "unanswered").length;
    const rest = unanswered > 0 ? `; ${unanswered} not waited for` : "";
    return (
      `quorum impossible after ${errors} of ${votes.length} nodes failed ` +
      `(a quorum is ${quorumOf(votes.length)}; ${granted} granted, ${denied} denied): ${failed.join("; ")}${rest}`
    );
  }
  if (reason === "lost") return `its keys are gone from the nodes (${counts})`;
  const pttl = holderPttl(tally);
  const frees = pttl === undefined ? "" : `, free in about ${pttl} ms`;
  return what === "permit" ? `every permit is held${frees} (${counts})` : `held by another holder${frees} (${counts})`;
}

/** The median of the places in line the denying nodes reported, if any did. */
function waitersAhead(tally: AttemptTally | undefined): number | undefined {
  const places = (tally?.votes ?? []).flatMap((v) =>
    v.outcome === "denied" && v.position !== undefined ? [v.position] : [],
  );
  if (places.length === 0) return undefined;
  return places.sort((a, b) => a - b)[Math.floor((places.length - 1) / 2)];
}

function holderPttl(tally: AttemptTally | undefined): number | undefined {
  const pttls = (tally?.votes ?? []).flatMap((v) =>
    v.outcome === "denied" && v.pttl !== undefined && v.pttl >= 0 ? [v.pttl] : [],
  );
  if (pttls.length === 0) return undefined;
  return pttls.sort((a, b) => a - b)[Math.floor((pttls.length - 1) / 2)];
}

/**
 * The reason the Hono middleware's `c.var.lock.signal` aborts when the client cancelled a streamed
 * response, or will never read it (a HEAD request): stop producing it. The lock stays held until the
 * handler's stream ends (at the latest one ttl later, when the stream is cancelled), so a step already
 * under way is still covered.
 * @example
 * ```ts
 * import { redlock } from "edge-redlock/hono";
 * import { streamText } from "hono/streaming";
 *
 * app.get("/export", redlock("export"), (c) =>
 *   streamText(c, async (out) => {
 *     for (const line of ["a", "b", "c"]) {
 *       if (c.var.lock.signal.reason instanceof ResponseAbandonedError) return; // nobody reads any more
 *       await out.writeln(line);
 *     }
 *   }),
 * );
 * ```
 */
export class ResponseAbandonedError extends RedlockError {
  /** Made by the middleware when the client stops reading the response. */
  constructor() {
    super("the client no longer reads the response: stop producing it (the lock is released once its stream ends)");
  }
}

/**
 * The reason a {@link Redlock.using} routine's signal aborts when `maxHold` is reached.
 * @example
 * ```ts
 * if (signal.reason instanceof MaxHoldError) console.warn("held too long", signal.reason.maxHold);
 * ```
 */
export class MaxHoldError extends RedlockError {
  /** The `maxHold` that was reached (ms). */
  readonly maxHold: number;
  /**
   * Made by the keeper when `maxHold` is reached.
   * @param maxHold the cap that was reached (ms)
   */
  constructor(maxHold: number) {
    super(`lock held for its maximum of ${maxHold} ms`);
    this.maxHold = maxHold;
  }
}
