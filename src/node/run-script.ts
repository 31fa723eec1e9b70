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
  /**
   * The scripts (their Lua) that ran on this node: the first run of each is an EVAL (one request, which loads it), the
   * later ones EVALSHA (EVAL again on NOSCRIPT, after a restart).
   */
  ran?: Set<string>;
}

/** Each script's SHA-1 once known, so a request does not wait a microtask for a resolved promise. */
const shas = new Map<string, string>();

/**
 * Runs `script`: EVALSHA first (unless `evalsha` is false), EVAL once when the database does not know the
 * script yet, and the script without the key-locking flag, from then on, when the database rejects the
 * flag (`keyLocking` remembers it). Errors are judged by the database's own words: `@upstash/redis`
 * appends the command, and keys are user input.
 */
export function evalScript(
  send: Send<EvalCommand>,
  script: Script,
  keys: string[],
  args: string[],
  signal: AbortSignal,
  how: { keyLocking: KeyLockingState; evalsha?: boolean },
): Promise<unknown> {
  const flagged = how.keyLocking.accepted;
  const lua = flagged ? script.lua : withoutKeyLocking(script.lua);
  const run: ScriptRun = { send, script, lua, flagged, keys, args, signal, keyLocking: how.keyLocking };
  const ran = how.keyLocking.ran;
  // The first run on this node is an EVAL: one request, which also loads the script for the EVALSHAs after it.
  if (ran && !ran.has(lua)) return remember(run, evalLua(run));
  if (how.evalsha === false) return evalLua(run);
  return runBySha(run);
}

/** Notes, once the reply is in, that the script ran on this node (and so the flag's fate, when it was flagged). */
function remember(run: ScriptRun, reply: Promise<unknown>): Promise<unknown> {
  return reply.then((value) => {
    run.keyLocking.ran?.add(run.keyLocking.accepted ? run.script.lua : withoutKeyLocking(run.script.lua));
    return value;
  });
}

function runBySha(run: ScriptRun): Promise<unknown> {
  const { lua } = run;
  // The hot path is one request and one handler: no async frame, no await of a SHA already known.
  const sha = shas.get(lua);
  if (sha !== undefined) return evalSha(run, sha);
  return scriptSha(lua).then((computed) => {
    shas.set(lua, computed);
    return evalSha(run, computed);
  });
}

/** One script run: what {@link evalScript} was given, and the Lua it sends (with or without the flag). */
interface ScriptRun {
  send: Send<EvalCommand>;
  script: Script;
  lua: string;
  flagged: boolean;
  keys: string[];
  args: string[];
  signal: AbortSignal;
  keyLocking: KeyLockingState;
}

/** EVALSHA; EVAL when the node does not know the script. */
function evalSha(run: ScriptRun, sha: string): Promise<unknown> {
  return run
    .send({ kind: "evalsha", script: sha, keys: run.keys, args: run.args }, run.signal)
    .catch((error: unknown) => {
      if (!errorText(error).startsWith("NOSCRIPT")) throw error;
      return evalLua(run);
    });
}

/** EVAL; once more without the key-locking flag when the node rejects the flag (remembered from then on). */
function evalLua(run: ScriptRun): Promise<unknown> {
  return run
    .send({ kind: "eval", script: run.lua, keys: run.keys, args: run.args }, run.signal)
    .catch((error: unknown) => {
      if (!run.flagged || !rejectsKeyLocking(errorText(error))) throw error;
      run.keyLocking.accepted = false;
      return run.send(
        { kind: "eval", script: withoutKeyLocking(run.script.lua), keys: run.keys, args: run.args },
        run.signal,
      );
    });
}
