// One Redis database: runs a script under a signal and turns whatever happens into a vote.
import { Redis } from "@upstash/redis/cloudflare";
import { Abandoned, batching, type Outcome, type Send, type Transport } from "./batch.ts";
import { errorText, redact } from "./redact.ts";
import { rejectsKeyLocking, scriptSha, withoutKeyLocking, type Script } from "./scripts.ts";
import type { Vote } from "./vote.ts";

/**
 * One independent Redis database as the lock sees it. Implement this to plug in another transport.
 * `run` sends one script and resolves with the raw reply; it must stop when `signal` aborts.
 * @example
 * const node: RedlockNode = { label: "eu-1", run: (script, keys, args, signal) => myEval(script.lua, keys, args, signal) };
 */
export interface RedlockNode {
  /** A name for logs and tallies; never a secret. */
  readonly label: string;
  run(script: Script, keys: string[], args: string[], signal: AbortSignal): Promise<unknown>;
}

/**
 * Where an Upstash database lives: its REST URL and token (the console's
 * `UPSTASH_REDIS_REST_URL` / `UPSTASH_REDIS_REST_TOKEN`).
 * @example
 * const node: NodeConfig = { url: "https://eu1-sharp-cat-12345.upstash.io", token: env.TOKEN_1 };
 */
export interface NodeConfig {
  url: string;
  token: string;
}

/**
 * The two methods the lock needs from an `@upstash/redis` `Redis` instance (or any client like it).
 * @example
 * const client: ScriptClient = new Redis({ url, token, retry: { retries: 0 }, enableAutoPipelining: false });
 */
export interface ScriptClient {
  eval(script: string, keys: string[], args: string[]): Promise<unknown>;
  evalsha(sha: string, keys: string[], args: string[]): Promise<unknown>;
}

/** @internal How the library configures the `@upstash/redis` clients it builds (see {@link upstashNode}). */
export const CLIENT_SETTINGS = {
  retry: { retries: 0 },
  enableAutoPipelining: false,
  automaticDeserialization: false,
  enableTelemetry: false,
  // The replies are integers and decimal strings: base64 would only cost CPU on both ends.
  responseEncoding: false,
  // Every command is a script on the primary: the sync-token header buys nothing here.
  readYourWrites: false,
} as const;

/** Options of {@link upstashNode}. */
export interface UpstashNodeOptions {
  /** A name for tallies (default: the URL's host, or "redis" for a `Redis` instance). */
  label?: string;
  /**
   * Send the requests that start in the same turn as one pipeline request (default true). Applies to
   * the clients the library builds from `{ url, token }`; a `Redis` instance you pass is used as is.
   */
  batching?: boolean;
}

/** One EVAL or EVALSHA, as the batcher carries it. */
interface EvalCommand {
  kind: "eval" | "evalsha";
  /** The Lua source (eval) or its SHA-1 (evalsha). */
  script: string;
  keys: string[];
  args: string[];
}

/** Whether a node still gets scripts with the key-locking flag: true until it rejects the flag. */
interface KeyLockingState {
  accepted: boolean;
}

/**
 * A node over `@upstash/redis`. Given `{ url, token }`, it builds the client the lock needs:
 * no client retries (the lock's retry loop is the only one), no auto-pipelining (its own batching
 * instead: the requests that start in the same turn go out as one pipeline request, a lone one as a
 * plain request), no automatic deserialization, no base64 response encoding, no read-your-writes token
 * (every command is a script on the primary), and the per-request signal wired into `fetch` so a
 * timed-out request is really cancelled. Given a `Redis` instance, it uses it as is, one request per
 * command, and stops waiting when the signal aborts (see the README for the settings such an instance
 * needs). Either way it sends the scripts with Upstash's key-locking flag until the node rejects it.
 * @example
 * const node = upstashNode({ url: env.UPSTASH_REDIS_REST_URL_1, token: env.UPSTASH_REDIS_REST_TOKEN_1 });
 */
export function upstashNode(target: NodeConfig | ScriptClient, options: UpstashNodeOptions | string = {}): RedlockNode {
  const { label, batching: batched = true } = typeof options === "string" ? { label: options } : options;
  const keyLocking: KeyLockingState = { accepted: true };
  if (isScriptClient(target)) {
    const send = (c: EvalCommand, signal: AbortSignal) => untilAborted(c.kind === "evalsha" ? target.evalsha(c.script, c.keys, c.args) : target.eval(c.script, c.keys, c.args), signal);
    return { label: label ?? "redis", run: (script, keys, args, signal) => evalScript(send, script, keys, args, signal, keyLocking) };
  }
  const transport = clientTransport(target);
  const send: Send<EvalCommand> = batched ? batching(transport) : transport.one;
  return { label: label ?? new URL(target.url).host, run: (script, keys, args, signal) => evalScript(send, script, keys, args, signal, keyLocking) };
}

/** EVAL and EVALSHA over a client the library builds, each request under its own signal. */
function clientTransport(target: NodeConfig): Transport<EvalCommand> {
  let nextSignal: AbortSignal | undefined;
  const client = new Redis({
    url: target.url,
    token: target.token,
    ...CLIENT_SETTINGS,
    // @upstash/redis calls this synchronously when it starts a request; `withSignal` sets it just before.
    signal: () => nextSignal ?? AbortSignal.abort(new Error("request outside a lock round")),
  });
  const withSignal = <T>(signal: AbortSignal, call: () => Promise<T>): Promise<T> => {
    nextSignal = signal;
    try {
      return call();
    } finally {
      nextSignal = undefined;
    }
  };
  return {
    one: (c, signal) => withSignal(signal, () => (c.kind === "evalsha" ? client.evalsha(c.script, c.keys, c.args) : client.eval(c.script, c.keys, c.args))),
    many: (commands, signal) =>
      withSignal(signal, () => {
        const pipeline = client.pipeline();
        for (const c of commands) {
          if (c.kind === "evalsha") pipeline.evalsha(c.script, c.keys, c.args);
          else pipeline.eval(c.script, c.keys, c.args);
        }
        return pipeline.exec({ keepErrors: true });
      }).then(toOutcomes, (error: unknown) => {
        // A reply that is JSON but not a list of results fails inside @upstash/redis with a TypeError.
        if (!signal.aborted && error instanceof TypeError && /is not a function|Cannot read|Cannot destructure/.test(error.message)) throw new Error("unexpected pipeline reply");
        throw error;
      }),
  };
}

/** Per command: an error wherever the entry carries one (any value, as for a plain request), else its result. */
function toOutcomes(replies: unknown): Outcome[] {
  if (!Array.isArray(replies)) throw new Error("unexpected pipeline reply");
  return replies.map((reply: { error?: unknown; result?: unknown } | null): Outcome => {
    if (typeof reply !== "object" || reply === null) return { ok: false, error: "unexpected pipeline reply" };
    return reply.error ? { ok: false, error: typeof reply.error === "string" ? reply.error : "unexpected pipeline reply" } : { ok: true, value: reply.result };
  });
}

/**
 * EVALSHA, EVAL once when the node does not know the script yet, and the script without the
 * key-locking flag from then on when the node rejects the flag.
 */
async function evalScript(send: Send<EvalCommand>, script: Script, keys: string[], args: string[], signal: AbortSignal, keyLocking: KeyLockingState): Promise<unknown> {
  const flagged = keyLocking.accepted;
  const lua = flagged ? script.lua : withoutKeyLocking(script.lua);
  // Judge by the database's own error text: @upstash/redis appends the command (keys are user input).
  try {
    return await send({ kind: "evalsha", script: await scriptSha(lua), keys, args }, signal);
  } catch (error) {
    if (!errorText(error).startsWith("NOSCRIPT")) throw error;
  }
  try {
    return await send({ kind: "eval", script: lua, keys, args }, signal);
  } catch (error) {
    if (!flagged || !rejectsKeyLocking(errorText(error))) throw error;
    keyLocking.accepted = false;
    return await send({ kind: "eval", script: withoutKeyLocking(script.lua), keys, args }, signal);
  }
}

/**
 * Runs `script` on `node` and maps the outcome to a vote. Thrown errors become `error` votes whose
 * cause names the kind of failure; the cause never contains the command, the lock value (`args`) or
 * any of `secrets` (the nodes' tokens), nor anything that looks like a bearer token or URL credentials.
 * @example
 * const vote = await castVote(node, ACQUIRE, ["k"], [value, "10000"], signal, [token]);
 */
export async function castVote(node: RedlockNode, script: Script, keys: string[], args: string[], signal: AbortSignal, secrets: readonly string[] = []): Promise<Vote> {
  const outcome = await runScript(node, script, keys, args, signal, secrets);
  if (outcome.ok) return script.vote(outcome.reply);
  const vote: Vote = { outcome: "error", cause: outcome.cause };
  if (outcome.landed) landings.set(vote, outcome.landed);
  return vote;
}

const landings = new WeakMap<Vote, Promise<void>>();

/**
 * When the request behind `vote` can no longer land on its node: at once, except for an error vote of a
 * request that stopped being waited for while it still ran (see {@link Abandoned}): once it is over.
 * Cleanups wait for it, so a release cannot overtake the request it undoes.
 * @example
 * const vote = await castVote(node, ACQUIRE, keys, args, signal);
 * await landed(vote);
 */
export function landed(vote: Vote): Promise<void> {
  return landings.get(vote) ?? Promise.resolve();
}

/**
 * Runs `script` on `node`: its raw reply, or a secret-free cause (as {@link castVote} describes it).
 * For reads that are not votes (inspection).
 * @example
 * const outcome = await runScript(node, INSPECT, ["k"], [], signal, [token]);
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
    return { ok: false, cause: describeFailure(error, signal, [...args, ...secrets]), ...(error instanceof Abandoned ? { landed: error.landed } : {}) };
  }
}

/** A short, secret-free description of why a node gave no answer. */
function describeFailure(error: unknown, signal: AbortSignal, secrets: string[]): string {
  if (signal.aborted) {
    const reason = signal.reason as { name?: string } | undefined;
    return reason?.name === "TimeoutError" ? "timeout" : "aborted";
  }
  const name = (error as { name?: string } | undefined)?.name ?? "Error";
  let text = name === "UpstashJSONParseError" ? "unparsable reply" : errorText(error);
  if (text === "Request did not return a result") return "reply without result";
  text = redact(text, secrets);
  if (text.length > 160) text = text.slice(0, 160) + "…";
  return name === "TypeError" ? `network: ${text}` : text;
}

function isScriptClient(target: NodeConfig | ScriptClient): target is ScriptClient {
  return typeof (target as ScriptClient).evalsha === "function" && typeof (target as ScriptClient).eval === "function";
}

/** Stops waiting when `signal` aborts; the request itself (a user's client cannot be cancelled) runs on. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const landed = promise.then(
      () => undefined,
      () => undefined,
    );
    const onAbort = () => reject(new Abandoned(signal.reason, landed));
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
