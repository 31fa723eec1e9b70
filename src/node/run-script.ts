// The one place that runs a script by EVALSHA, falls back to EVAL on NOSCRIPT, and drops Upstash's
// key-locking flag where a database rejects it, or where it refuses PUBLISH from a flagged script. The lock's nodes
// and fencing both go through it.
import { errorText } from "../support/redact.ts";
import { PROBE_CHANNEL, PUBLISH_FROM_FLAGGED_SCRIPT, publishesFromScript } from "../scripts/publish-probe.ts";
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
  /**
   * Whether a flagged script may PUBLISH there (the line's scripts wake their waiters so): `unknown` until the first
   * script that publishes carries a probe in its pipeline request; `refused` sends every script that publishes
   * without the flag from then on. Absent: never probed (a transport that sends one request per command).
   */
  publish?: "unknown" | "probing" | "accepted" | "refused";
  /** When the probe in flight went out (`Date.now()`): one whose replies never came (its request ended) expires. */
  probedAt?: number;
}

/** A probe with no verdict after this many ms is given up, and the next script that publishes carries another. */
const PROBE_EXPIRES_MS = 10_000;

/** Each script's SHA-1 once known, so a request does not wait a microtask for a resolved promise. */
const shas = new Map<string, string>();

/**
 * Runs `script`: EVALSHA first (unless `evalsha` is false), EVAL once when the database does not know the
 * script yet, and the script without the key-locking flag, from then on, when the database rejects the
 * flag (`keyLocking` remembers it). Where `keyLocking.publish` is set (a batched transport), the first flagged script
 * that publishes is sent with a probe of PUBLISH from a flagged script in the same turn, so in the same pipeline
 * request; a node that refuses it gets the scripts that publish without the flag. Errors are judged by the
 * database's own words: `@upstash/redis` appends the command, and keys are user input.
 */
export function evalScript(
  send: Send<EvalCommand>,
  script: Script,
  keys: string[],
  args: string[],
  signal: AbortSignal,
  how: { keyLocking: KeyLockingState; evalsha?: boolean },
): Promise<unknown> {
  const state = how.keyLocking;
  const lua = luaFor(script, state);
  const flagged = lua === script.lua && state.accepted;
  const run: ScriptRun = { send, script, lua, flagged, keys, args, signal, keyLocking: state };
  // Sent first, in the same turn: the batcher puts the probe in this script's pipeline request.
  const probe = flagged && unprobed(state) && publishesFromScript(script.lua) ? probePublish(run) : null;
  const ran = state.ran;
  // The first run on this node is an EVAL: one request, which also loads the script for the EVALSHAs after it.
  const reply =
    ran && !ran.has(lua) ? remember(run, evalLua(run)) : how.evalsha === false ? evalLua(run) : runBySha(run);
  if (probe) judgeProbe(state, probe, reply);
  return reply;
}

/** The Lua sent to a node in `state`: without the key-locking flag where it is rejected, or where it stops PUBLISH. */
function luaFor(script: Script, state: KeyLockingState): string {
  if (!state.accepted || (state.publish === "refused" && publishesFromScript(script.lua)))
    return withoutKeyLocking(script.lua);
  return script.lua;
}

/** Whether the node still needs a probe: none yet, the last one failed, or it never got its replies. */
function unprobed(state: KeyLockingState): boolean {
  if (state.publish === "unknown") return true;
  return state.publish === "probing" && Date.now() - (state.probedAt ?? 0) > PROBE_EXPIRES_MS;
}

/** A flagged script that publishes on a channel nobody listens to: does the node take PUBLISH there? */
function probePublish(run: ScriptRun): Promise<unknown> {
  run.keyLocking.publish = "probing";
  run.keyLocking.probedAt = Date.now();
  const command: EvalCommand = {
    kind: "eval",
    script: PUBLISH_FROM_FLAGGED_SCRIPT,
    keys: [],
    args: [PROBE_CHANNEL, ""],
  };
  return run.send(command, run.signal, true);
}

/**
 * The probe's verdict, once both replies are in: accepted when it answered; refused when the database refused it (an
 * error naming PUBLISH, or one that says it is not allowed) while the script beside it was answered; else unknown
 * again, for the next script that publishes: a passing error (`BUSY`, `LOADING`, `OOM`, a rate limit), a failed
 * request, or the flag itself rejected.
 */
function judgeProbe(state: KeyLockingState, probe: Promise<unknown>, reply: Promise<unknown>): void {
  void Promise.allSettled([probe, reply]).then(([tried, ran]) => {
    const text = tried.status === "rejected" ? errorText(tried.reason) : "";
    if (tried.status === "fulfilled") state.publish = "accepted";
    else if (ran.status === "fulfilled" && refusesPublish(text)) state.publish = "refused";
    else state.publish = "unknown";
  });
}

/**
 * Whether the probe's error is the database refusing PUBLISH there: an error reply (its code in capitals) that names
 * PUBLISH or says the command is not allowed, and not the key-locking flag's own rejection.
 */
function refusesPublish(text: string): boolean {
  return /^[A-Z][A-Z_]+ /.test(text) && /PUBLISH|not allowed|NOPERM|permission/i.test(text) && !rejectsKeyLocking(text);
}

/** Notes, once the reply is in, that the script ran on this node (and so the flag's fate, when it was flagged). */
function remember(run: ScriptRun, reply: Promise<unknown>): Promise<unknown> {
  return reply.then((value) => {
    // The Lua that ran: the one sent, or the flagless one when the node rejected the flag meanwhile.
    run.keyLocking.ran?.add(run.flagged && !run.keyLocking.accepted ? withoutKeyLocking(run.script.lua) : run.lua);
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
