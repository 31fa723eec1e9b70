// The one place that runs a script by EVALSHA, falls back to EVAL on NOSCRIPT, and drops Upstash's
// key-locking flag where a database rejects it. The lock's nodes and fencing both go through it.
import { errorText } from "../support/redact.ts";
import { rejectsKeyLocking, scriptSha, withoutKeyLocking, type Script } from "../scripts/script.ts";
import type { Send } from "./batch.ts";

/** One EVAL or EVALSHA, as a transport (or the batcher) carries it. */
export interface EvalCommand {
  kind: "eval" | "evalsha";
  /** The Lua source (eval) or its SHA-1 (evalsha). */
  script: string;
  keys: string[];
  args: string[];
}

/** Whether a database still gets scripts with the key-locking flag: true until it rejects the flag. */
export interface KeyLockingState {
  accepted: boolean;
}

/** Each script's SHA-1 once known, so a request does not wait a microtask for a resolved promise. */
const shas = new Map<string, string>();

/**
 * Runs `script`: EVALSHA first (unless `evalsha` is false), EVAL once when the database does not know the
 * script yet, and the script without the key-locking flag, from then on, when the database rejects the
 * flag (`keyLocking` remembers it). Errors are judged by the database's own words: `@upstash/redis`
 * appends the command, and keys are user input.
 * @example
 * ```ts
 * const reply = await evalScript(send, ACQUIRE, ["k"], [value, "10000"], signal, { keyLocking: { accepted: true } });
 * ```
 */
export async function evalScript(
  send: Send<EvalCommand>,
  script: Script,
  keys: string[],
  args: string[],
  signal: AbortSignal,
  how: { keyLocking: KeyLockingState; evalsha?: boolean },
): Promise<unknown> {
  const flagged = how.keyLocking.accepted;
  const lua = flagged ? script.lua : withoutKeyLocking(script.lua);
  if (how.evalsha !== false) {
    let sha = shas.get(lua);
    if (sha === undefined) {
      sha = await scriptSha(lua);
      shas.set(lua, sha);
    }
    try {
      return await send({ kind: "evalsha", script: sha, keys, args }, signal);
    } catch (error) {
      if (!errorText(error).startsWith("NOSCRIPT")) throw error;
    }
  }
  try {
    return await send({ kind: "eval", script: lua, keys, args }, signal);
  } catch (error) {
    if (!flagged || !rejectsKeyLocking(errorText(error))) throw error;
    how.keyLocking.accepted = false;
    return await send({ kind: "eval", script: withoutKeyLocking(script.lua), keys, args }, signal);
  }
}
