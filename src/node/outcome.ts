// What a node's answer means to the lock: a vote, or a secret-free reason why there is none, and when
// the request behind it can no longer land.
import { clip, failureText, redact } from "../support/redact.ts";
import type { Script } from "../scripts/script.ts";
import type { Vote } from "../scripts/vote.ts";
import { Abandoned } from "./batch.ts";
import type { RedlockNode } from "./node.ts";

/**
 * Runs a script on a node as {@link runScript} does (same arguments) and maps the outcome to a vote.
 * Thrown errors become `error` votes whose cause names the kind of failure; the cause never contains the
 * command, the lock value (`args`) or any of `secrets` (the nodes' tokens), nor anything that looks like a
 * bearer token or URL credentials.
 */
export function castVote(
  node: RedlockNode,
  script: Script,
  keys: string[],
  args: string[],
  signal: AbortSignal,
  secrets: readonly string[] = [],
): Promise<Vote> {
  // One handler pair per vote: the reply is read here, not through runScript's { ok, reply } record.
  const failed = (error: unknown): Vote => {
    const vote: Vote = { outcome: "error", cause: describeFailure(error, signal, [...args, ...secrets]) };
    if (error instanceof Abandoned) landings.set(vote, error.landed);
    return vote;
  };
  let reply: Promise<unknown>;
  try {
    reply = node.run(script, keys, args, signal);
  } catch (error) {
    return Promise.resolve(failed(error));
  }
  // A reply whose rule throws is an error vote too, never a rejection (a cleanup awaits this promise).
  return Promise.resolve(reply).then((value) => {
    try {
      return script.vote(value);
    } catch (error) {
      return failed(error);
    }
  }, failed);
}

const landings = new WeakMap<Vote, Promise<void>>();

/**
 * When the request behind `vote` can no longer land on its node, if that is not at once: only an error vote
 * of a request that stopped being waited for while it still ran (see {@link Abandoned}) has such a promise,
 * which resolves once that request is over. Cleanups wait for it, so a release cannot overtake the request
 * it undoes; for any other vote the reply is in (or the request was cut) and nothing of it can land later.
 */
export function landingOf(vote: Vote): Promise<void> | undefined {
  return landings.get(vote);
}

/**
 * Runs `script` on `node`: its raw reply, or a secret-free cause (as {@link castVote} describes it).
 * For reads that are not votes (inspection).
 */
export async function runScript(
  node: RedlockNode,
  script: Script,
  keys: string[],
  args: string[],
  signal: AbortSignal,
  secrets: readonly string[] = [],
): Promise<{ ok: true; reply: unknown } | { ok: false; cause: string; landed?: Promise<void> }> {
  try {
    return { ok: true, reply: await node.run(script, keys, args, signal) };
  } catch (error) {
    return {
      ok: false,
      cause: describeFailure(error, signal, [...args, ...secrets]),
      ...(error instanceof Abandoned ? { landed: error.landed } : {}),
    };
  }
}

/** A short, secret-free description of why a node gave no answer. */
function describeFailure(error: unknown, signal: AbortSignal, secrets: string[]): string {
  if (signal.aborted) {
    const reason = signal.reason as { name?: string } | undefined;
    return reason?.name === "TimeoutError" ? "timeout" : "aborted";
  }
  const name = (error as { name?: string } | undefined)?.name ?? "Error";
  let text = name === "UpstashJSONParseError" ? "unparsable reply" : failureText(error);
  if (text === "Request did not return a result") return "reply without result";
  text = clip(redact(text, secrets));
  return name === "TypeError" ? `network: ${text}` : text;
}
