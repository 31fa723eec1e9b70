// The RedlockNode over `@upstash/redis`: the only file that imports the client. It builds the client the
// lock needs, batches the requests that start in the same turn, and runs scripts through evalScript.
import { Redis } from "@upstash/redis/cloudflare";
import { Abandoned, batching, type Outcome, type Send, type Transport } from "./batch.ts";
import type { NodeConfig, RedlockNode, ScriptClient } from "./node.ts";
import { evalScript, type EvalCommand, type KeyLockingState } from "./run-script.ts";

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
 * ```ts
 * const node = upstashNode({ url: env.UPSTASH_REDIS_REST_URL_1, token: env.UPSTASH_REDIS_REST_TOKEN_1 });
 * ```
 */
export function upstashNode(target: NodeConfig | ScriptClient, options: UpstashNodeOptions | string = {}): RedlockNode {
  const { label, batching: batched = true } = typeof options === "string" ? { label: options } : options;
  const keyLocking: KeyLockingState = { accepted: true };
  if (isScriptClient(target)) {
    const send = (c: EvalCommand, signal: AbortSignal) =>
      untilAborted(
        c.kind === "evalsha" ? target.evalsha(c.script, c.keys, c.args) : target.eval(c.script, c.keys, c.args),
        signal,
      );
    return {
      label: label ?? "redis",
      run: (script, keys, args, signal) => evalScript(send, script, keys, args, signal, { keyLocking }),
    };
  }
  const transport = clientTransport(target);
  const send: Send<EvalCommand> = batched ? batching(transport) : transport.one;
  return {
    label: label ?? new URL(target.url).host,
    run: (script, keys, args, signal) => evalScript(send, script, keys, args, signal, { keyLocking }),
  };
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
    one: (c, signal) =>
      withSignal(signal, () =>
        c.kind === "evalsha" ? client.evalsha(c.script, c.keys, c.args) : client.eval(c.script, c.keys, c.args),
      ),
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
        if (
          !signal.aborted &&
          error instanceof TypeError &&
          /is not a function|Cannot read|Cannot destructure/.test(error.message)
        )
          throw new Error("unexpected pipeline reply");
        throw error;
      }),
  };
}

/** Per command: an error wherever the entry carries one (any value, as for a plain request), else its result. */
function toOutcomes(replies: unknown): Outcome[] {
  if (!Array.isArray(replies)) throw new Error("unexpected pipeline reply");
  return replies.map((reply: { error?: unknown; result?: unknown } | null): Outcome => {
    if (typeof reply !== "object" || reply === null) return { ok: false, error: "unexpected pipeline reply" };
    return reply.error
      ? { ok: false, error: typeof reply.error === "string" ? reply.error : "unexpected pipeline reply" }
      : { ok: true, value: reply.result };
  });
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
