// Fault controls of one local node over its admin API: fetch only, so a test in any runtime can use them.

/**
 * Faults on one node started by `startLocalNodes`, over that node's admin API. Each call resolves once
 * the node applies it.
 * @example
 * ```ts
 * import { startLocalNodes } from "edge-redlock/testing";
 *
 * const local = await startLocalNodes();
 * await local.faults[0].cut(); // node 1 drops every request: a partition
 * await local.faults[0].reset();
 * ```
 */
export interface NodeFaults {
  /**
   * The node's requests vanish (held unanswered until the client gives up): a partition. Its open
   * subscription streams stay open but the messages published meanwhile never reach them.
   */
  cut(): Promise<void>;
  /** The node accepts requests and answers none until `reset`. */
  hang(): Promise<void>;
  /** Every request waits `ms` before it runs. */
  latency(ms: number): Promise<void>;
  /** Every request is answered with this HTTP status (e.g. 401, 500) instead of running. */
  status(code: number): Promise<void>;
  /**
   * The next `count` messages bound for the node's subscription streams are lost: PUBLISH still counts
   * their receivers, but the messages never arrive (lost wakeups). Counted per stream: one PUBLISH to two
   * streams uses two. `reset` sets it back to 0.
   */
  dropMessages(count: number): Promise<void>;
  /** Each message bound for the node's subscription streams arrives `ms` after it was published. */
  delayMessages(ms: number): Promise<void>;
  /**
   * Ends every open subscription stream of the node now, after its headers were sent: the connection drops
   * mid-body (with `graceful`, the body ends properly instead). Messages published afterwards reach nobody
   * on the node until someone subscribes again.
   */
  cutStreams(options?: { graceful?: boolean }): Promise<void>;
  /**
   * Kills the node's server (its redis-server; a memory node stops answering the same way): its data is gone,
   * requests are answered HTTP 503 until `restart`.
   */
  kill(): Promise<void>;
  /** Starts the node's server again, empty (a crash that lost the data). */
  restart(): Promise<void>;
  /** Stops the node's server (SIGSTOP; a memory node holds its commands the same way) until `resume`. */
  pause(): Promise<void>;
  /** Lets a paused server go on; the held commands run. */
  resume(): Promise<void>;
  /** Clears every fault (the redis-server stays as it is). */
  reset(): Promise<void>;
}

/**
 * The {@link NodeFaults} of the node whose admin API is at `adminUrl` (a local node's `adminUrl`).
 * @param adminUrl the node's admin URL
 * @returns the node's fault controls
 * @example
 * ```ts
 * import { startLocalNodes } from "edge-redlock/testing";
 *
 * const local = await startLocalNodes();
 * await nodeFaults(local.nodes[2].adminUrl).latency(250);
 * ```
 */
export function nodeFaults(adminUrl: string): NodeFaults {
  const post = async (path: string, body: unknown = {}): Promise<void> => {
    const res = await fetch(adminUrl + path, { method: "POST", body: JSON.stringify(body) });
    const text = await res.text();
    if (!res.ok) throw new Error(`edge-redlock/testing: ${path} failed (HTTP ${res.status}): ${adminError(text)}`);
  };
  return {
    cut: () => post("/faults", { cut: true }),
    hang: () => post("/faults", { hang: true }),
    latency: (ms) => post("/faults", { latencyMs: ms }),
    status: (code) => post("/faults", { status: code }),
    dropMessages: (count) => post("/faults", { dropMessages: count }),
    delayMessages: (ms) => post("/faults", { messageDelayMs: ms }),
    cutStreams: (options = {}) => post("/streams/cut", options),
    kill: () => post("/redis/kill"),
    restart: () => post("/redis/restart"),
    pause: () => post("/redis/pause"),
    resume: () => post("/redis/resume"),
    reset: () => post("/reset"),
  };
}

/** The admin API's error text alone (its body is `{"error": …}`), else the body as it came. */
function adminError(body: string): string {
  try {
    const { error } = JSON.parse(body) as { error?: unknown };
    return typeof error === "string" ? error : body;
  } catch {
    return body;
  }
}
