// Are the local nodes named by some variables running? One PING per node, and one line when they are not,
// so a dev server or a Workers test run never starts against nodes that are gone (workerd would print a
// "Network connection lost." per request instead).
import { envNames } from "../node/env.ts";

/**
 * Options of {@link checkLocalNodes}.
 * @example
 * ```ts
 * await checkLocalNodes(env, { source: ".dev.vars", timeoutMs: 1_000 });
 * ```
 */
export interface CheckLocalNodesOptions {
  /** Where the variables came from, named in the message (default "the variables given"). */
  source?: string;
  /** How long each node has to answer, ms (default 2000). */
  timeoutMs?: number;
}

/**
 * The local nodes named by some variables do not all answer; the message is one line.
 * @example
 * ```ts
 * await checkLocalNodes(env).catch((e) => e instanceof LocalNodesNotRunningError && console.error(e.message));
 * ```
 */
export class LocalNodesNotRunningError extends Error {
  /** Per node that did not answer: its variable, host and why, e.g. `… 127.0.0.1:4012: ECONNREFUSED`. */
  readonly failures: string[];
  /**
   * Made by {@link checkLocalNodes}.
   * @param message one line
   * @param failures per node
   */
  constructor(message: string, failures: string[]) {
    super(message);
    this.name = "LocalNodesNotRunningError";
    this.failures = failures;
  }
}

/**
 * Resolves once every node named by `UPSTASH_REDIS_REST_URL_1` … `_N` in `env` answers a PING with its
 * token; otherwise rejects with a {@link LocalNodesNotRunningError} whose one-line message names the
 * variables, their hosts and the errors, and says how to start the nodes. Web standards only; never
 * prints a token.
 * @param env the variables (`.dev.vars` parsed, the process's environment, a Worker's bindings)
 * @param options see {@link CheckLocalNodesOptions}
 * @example
 * ```ts
 * // vitest globalSetup, with nodes from `npx edge-redlock dev` in .dev.vars:
 * import { checkLocalNodes } from "edge-redlock/testing";
 *
 * await checkLocalNodes(env, { source: ".dev.vars" }); // throws one clear line when they are not running
 * ```
 */
export async function checkLocalNodes(
  env: Record<string, string | undefined>,
  options: CheckLocalNodesOptions = {},
): Promise<void> {
  const source = options.source ?? "the variables given";
  const timeoutMs = options.timeoutMs ?? 2_000;
  const nodes: { name: string; url: string; token: string }[] = [];
  for (let n = 1; env[envNames(n).url] !== undefined; n++) {
    nodes.push({ name: envNames(n).url, url: env[envNames(n).url] ?? "", token: env[envNames(n).token] ?? "" });
  }
  if (nodes.length === 0)
    throw new LocalNodesNotRunningError(
      `edge-redlock: ${source} names no node (no UPSTASH_REDIS_REST_URL_1): start them with npx edge-redlock dev`,
      [],
    );
  const answers = await Promise.all(nodes.map((node) => ping(node.url, node.token, timeoutMs)));
  const failures = nodes.flatMap((node, i) =>
    answers[i] === undefined ? [] : [`${node.name} ${host(node.url)}: ${answers[i]}`],
  );
  if (failures.length === 0) return;
  const what =
    failures.length === nodes.length
      ? `the local nodes in ${source} are not running`
      : `${failures.length} of the ${nodes.length} local nodes in ${source} do not answer`;
  throw new LocalNodesNotRunningError(
    `edge-redlock: ${what} (${failures.join("; ")}). Start them in another terminal: npx edge-redlock dev`,
    failures,
  );
}

/** Undefined when the node answered PING; else why not, in a few words (an errno where there is one). */
async function ping(url: string, token: string, timeoutMs: number): Promise<string | undefined> {
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: '["PING"]',
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.text();
    if (response.status === 401) return "the token was refused (HTTP 401)";
    if (!response.ok) return `HTTP ${response.status}`;
    return text.includes("PONG") ? undefined : "an answer that is not an Upstash REST reply";
  } catch (error) {
    const err = error as { name?: string; cause?: { code?: unknown } };
    if (err?.name === "TimeoutError") return `no answer within ${timeoutMs} ms`;
    return typeof err?.cause?.code === "string" ? err.cause.code : "the connection failed";
  }
}

/** host:port of a URL, never its credentials or path. */
function host(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return "(not a URL)";
  }
}
