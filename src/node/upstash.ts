// The RedlockNode over `@upstash/redis`: the only file that imports the client. It builds the client the
// lock needs, batches the requests that start in the same turn, and runs scripts through evalScript.
import { Redis, type Requester } from "@upstash/redis/cloudflare";
import { Abandoned, batching, type Outcome, type Send, type Transport } from "./batch.ts";
import type { NodeConfig, PubSubSubscriber, RedlockNode, ScriptClient } from "./node.ts";
import { evalScript, type EvalCommand, type KeyLockingState } from "./run-script.ts";
import { sseSubscribe, type Subscription } from "./subscribe.ts";

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
 * needs). Either way it sends the scripts with Upstash's key-locking flag until the node rejects it. Batched, the
 * first script that publishes (a fair script's wakeup) carries a probe in its pipeline request, a flagged script that
 * publishes on a channel nobody listens to; where the node refuses that, the scripts that publish go without the flag.
 * @example
 * ```ts
 * const node = upstashNode({ url: env.UPSTASH_REDIS_REST_URL_1, token: env.UPSTASH_REDIS_REST_TOKEN_1 });
 * ```
 */
export function upstashNode(target: NodeConfig | ScriptClient, options: UpstashNodeOptions | string = {}): RedlockNode {
  const { label, batching: batched = true } = typeof options === "string" ? { label: options } : options;
  const keyLocking: KeyLockingState = { accepted: true, ran: new Set() };
  if (isScriptClient(target)) {
    const send = (c: EvalCommand, signal: AbortSignal) =>
      // A request the caller no longer waits for is never started (it could not be cut, and would land late).
      signal.aborted
        ? Promise.reject(signal.reason)
        : untilAborted(
            c.kind === "evalsha" ? target.evalsha(c.script, c.keys, c.args) : target.eval(c.script, c.keys, c.args),
            signal,
          );
    const subscribe = target.subscribe;
    return {
      label: label ?? "redis",
      run: (script, keys, args, signal) => evalScript(send, script, keys, args, signal, { keyLocking }),
      ...(typeof subscribe === "function"
        ? {
            subscribe: (channel: string, onMessage: (payload: string) => void, signal: AbortSignal) =>
              clientSubscribe(subscribe.call(target, [channel]), onMessage, signal),
          }
        : {}),
    };
  }
  const { one, many } = clientTransport(target);
  // Without the client's request function (see clientRequest) there is no pipeline body to build: one request each.
  const send: Send<EvalCommand> = batched && many ? batching({ one, many }) : one;
  // Batched, a probe of PUBLISH from a flagged script rides in the first publishing script's request: no request more.
  if (send !== one) keyLocking.publish = "unknown";
  return {
    label: label ?? new URL(target.url).host,
    run: (script, keys, args, signal) => evalScript(send, script, keys, args, signal, { keyLocking }),
    subscribe: (channel, onMessage, signal) => sseSubscribe(target.url, target.token, channel, onMessage, signal),
  };
}

/**
 * A subscription through `@upstash/redis`'s own subscriber: confirmed by its `subscribe` event, ended by
 * `unsubscribe` when `signal` aborts. Its stream's end cannot be seen (the client only prints a read error), so
 * `closed` resolves only when the signal aborts; its fetch does not take the signal, so one that never confirms is
 * unsubscribed (which aborts it) when the signal aborts.
 */
function clientSubscribe(
  subscriber: PubSubSubscriber,
  onMessage: (payload: string) => void,
  signal: AbortSignal,
): Promise<Subscription> {
  const ended = new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener("abort", () => resolve(), { once: true });
  });
  const closed = ended.then(() => subscriber.unsubscribe().catch(() => undefined));
  subscriber.on("message", (event: { message?: unknown }) => onMessage(String(event?.message)));
  return new Promise((resolve, reject) => {
    subscriber.on("subscribe", () => resolve({ closed }));
    subscriber.on("error", (error: unknown) => reject(error));
    void ended.then(() => reject(signal.reason));
  });
}

/** EVAL and EVALSHA over a client the library builds, each request under its own signal. */
function clientTransport(target: NodeConfig): Pick<Transport<EvalCommand>, "one"> & Partial<Transport<EvalCommand>> {
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
  const request = clientRequest(client);
  return {
    one: request
      ? (c, signal) => withSignal(signal, () => request({ body: bodyOf(c) })).then(resultOf)
      : (c, signal) =>
          withSignal(signal, () =>
            c.kind === "evalsha" ? client.evalsha(c.script, c.keys, c.args) : client.eval(c.script, c.keys, c.args),
          ),
    many:
      request &&
      ((commands, signal) =>
        withSignal(signal, () => request({ path: ["pipeline"], body: commands.map(bodyOf) })).then(
          toOutcomes,
          (error: unknown) => {
            // A reply @upstash/redis cannot read (an error status with a body of `null`) fails inside it with a
            // TypeError: for a pipeline that is an unexpected reply, as it always was.
            if (!signal.aborted && error instanceof TypeError && /Cannot read|Cannot destructure/.test(error.message))
              throw new Error("unexpected pipeline reply");
            throw error;
          },
        )),
  };
}

/**
 * The client's own HTTP request, as `Redis.use` hands it to a middleware: with it a pipeline request is
 * one JSON body built from the batch's commands, without the ~200-method `Pipeline` and one `Command`
 * object per member that `client.pipeline()` builds, and a plain request is the command's body alone.
 * Caught once, at construction: the middleware takes the request function of one probe command and
 * answers it itself (nothing is sent), then lets every later request through. Undefined where the client
 * does not start a request synchronously (then each command goes out as a command of the client's own, one
 * request each, as with `batching: false`).
 */
function clientRequest(client: Redis): Requester["request"] | undefined {
  if (typeof client.use !== "function") return undefined;
  let request: Requester["request"] | undefined;
  let probing = true;
  client.use((req, next) => {
    if (!probing) return next(req);
    request = next;
    return Promise.resolve({ result: "probe" });
  });
  void client.echo("probe").catch(() => undefined);
  probing = false;
  return request;
}

/** EVAL or EVALSHA as the REST API takes it: `["evalsha", sha, numkeys, ...keys, ...args]`. */
function bodyOf(c: EvalCommand): (string | number)[] {
  const body: (string | number)[] = [c.kind, c.script, c.keys.length];
  for (const key of c.keys) body.push(key);
  for (const arg of c.args) body.push(arg);
  return body;
}

/**
 * A plain request's reply read as `@upstash/redis` reads a command's: its error thrown, a reply without a
 * result refused with the client's own words, else the result (no deserialization, as the client is set up).
 */
function resultOf(reply: unknown): unknown {
  const { result, error } = reply as { result?: unknown; error?: unknown };
  if (error) throw new Error(String(error));
  if (result === undefined) throw new TypeError("Request did not return a result");
  return result;
}

/**
 * Per command: an error wherever the entry carries one (any value, as for a plain request), else its result.
 * A reply that is not a list, or holds a null entry, fails the whole request (as `@upstash/redis` does).
 */
function toOutcomes(replies: unknown): Outcome[] {
  if (!Array.isArray(replies)) throw new Error("unexpected pipeline reply");
  const outcomes: Outcome[] = new Array(replies.length);
  for (let i = 0; i < replies.length; i++) {
    const reply = replies[i] as { error?: unknown; result?: unknown } | null | undefined;
    if (reply === null || reply === undefined) throw new Error("unexpected pipeline reply");
    const { error, result } = reply;
    outcomes[i] = error
      ? { ok: false, error: typeof error === "string" ? error : "unexpected pipeline reply" }
      : { ok: true, value: result };
  }
  return outcomes;
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
