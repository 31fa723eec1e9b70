// The resource side of fencing: a write (or a read) that a stale token cannot make.
import { InvalidArgumentError, RedlockError } from "../errors.ts";
import type { ScriptClient } from "../node/node.ts";
import { evalScript, type EvalCommand } from "../node/run-script.ts";
import { DECIMAL } from "../scripts/decimal.ts";
import { FENCED_READ, FENCED_WRITE } from "../scripts/fencing.ts";
import { parseInteger } from "../scripts/replies.ts";
import type { Script } from "../scripts/script.ts";
import { errorText, redact } from "../support/redact.ts";

/** Options of {@link fencedWrite}. */
export interface FencedWriteOptions {
  /** Where the resource keeps the highest token it accepted. Default: `${key}:fence`. */
  tokenKey?: string;
}

/**
 * The resource side of fencing: writes `value` to `key` only if `fence` is at least the highest
 * token this resource has accepted, and records it — one atomic script. A holder that paused past
 * its validity and lost the lock to a newer holder gets `false` here once the newer holder wrote.
 * @param redis an `@upstash/redis` client (or any client with `eval`) of the database that holds the resource
 * @returns whether the write was accepted
 * @example
 * ```ts
 * const lock = await redlock.acquire(["invoice:7"], 10_000, { fencing: true });
 * const accepted = await fencedWrite(redis, "invoice:7", JSON.stringify({ paid: true }), lock.fence!);
 * if (!accepted) throw new Error("a newer holder wrote first");
 * ```
 */
export async function fencedWrite(
  redis: Pick<ScriptClient, "eval">,
  key: string,
  value: string,
  fence: string,
  options: FencedWriteOptions = {},
): Promise<boolean> {
  if (typeof value !== "string") throw new InvalidArgumentError("value", "must be a string");
  const tokenKey = checkFenced(key, fence, options);
  const reply = await runGuard(redis, FENCED_WRITE, [key, tokenKey], [fence, value]);
  const vote = FENCED_WRITE.vote(parseInteger(reply) ?? reply);
  if (vote.outcome === "error") throw new RedlockError(`fencedWrite: ${vote.cause}`);
  return vote.outcome === "granted";
}

/**
 * The read half of a fenced read-modify-write: reads `key` only if `fence` is at least the highest
 * token the resource has accepted, and records `fence` — so once a newer holder has read, an older
 * holder's write is refused even if the newer one has not written yet.
 * @returns `{ accepted: false }` for a stale token, else `{ accepted: true, value }` (null when unset)
 * @example
 * ```ts
 * const read = await fencedRead(redis, "counter", lock.fence!);
 * if (read.accepted) await fencedWrite(redis, "counter", String(Number(read.value ?? 0) + 1), lock.fence!);
 * ```
 */
export async function fencedRead(
  redis: Pick<ScriptClient, "eval">,
  key: string,
  fence: string,
  options: FencedWriteOptions = {},
): Promise<{ accepted: true; value: string | null } | { accepted: false }> {
  const tokenKey = checkFenced(key, fence, options);
  const reply = await runGuard(redis, FENCED_READ, [key, tokenKey], [fence]);
  const vote = FENCED_READ.vote(reply);
  if (vote.outcome === "error") throw new RedlockError(`fencedRead: ${vote.cause}`);
  if (vote.outcome === "denied") return { accepted: false };
  const value = (reply as unknown[])[1];
  return { accepted: true, value: value === null || value === undefined ? null : String(value) };
}

/**
 * Runs a guard script with EVAL (through the library's one script runner: with the key-locking flag, and
 * without it where the database rejects the flag). A failure is rethrown as a {@link RedlockError} whose
 * message keeps the database's words but not the command (`@upstash/redis` appends it, with the key, the
 * token and the value written).
 */
async function runGuard(
  redis: Pick<ScriptClient, "eval">,
  script: Script,
  keys: string[],
  args: string[],
): Promise<unknown> {
  const send = (c: EvalCommand) => redis.eval(c.script, c.keys, c.args);
  try {
    return await evalScript(send, script, keys, args, new AbortController().signal, {
      keyLocking: { accepted: true },
      evalsha: false,
    });
  } catch (error) {
    throw new RedlockError(`${script.name}: ${redact(errorText(error), args)}`);
  }
}

function checkFenced(key: unknown, fence: unknown, options: FencedWriteOptions): string {
  if (typeof key !== "string" || key === "") throw new InvalidArgumentError("key", "must be a non-empty string");
  if (typeof fence !== "string" || !DECIMAL.test(fence))
    throw new InvalidArgumentError("fence", "must be a fencing token (a decimal string)");
  const tokenKey = options.tokenKey ?? `${key}:fence`;
  if (typeof tokenKey !== "string" || tokenKey === "" || tokenKey === key)
    throw new InvalidArgumentError("options.tokenKey", "must be a non-empty string other than the key");
  return tokenKey;
}
