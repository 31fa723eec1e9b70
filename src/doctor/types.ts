// What the doctor takes and what it reports (apart from the checks, so probes and verdict import no cycle).

/**
 * Options of {@link checkNodes}.
 * @example
 * ```ts
 * import { checkNodes } from "edge-redlock";
 *
 * await checkNodes(nodes, { samples: 10, nodeTimeout: 300, labels: ["eu", "us-east", "us-west", "ap", "sa"] });
 * ```
 */
export interface DoctorOptions {
  /** Timed requests per node after the first one (which opens the connection and is reported apart). Default 4. */
  samples?: number;
  /**
   * Per-request timeout of the checks in ms. Default 3000: above nodeTimeout, so a slow node is measured, not
   * dropped.
   */
  timeout?: number;
  /** The lock's nodeTimeout to judge round trips against (ms). Default `DEFAULTS.nodeTimeout` (500). */
  nodeTimeout?: number;
  /** The ttl to judge clock offsets against (ms): the drift allowance is `ttl × driftFactor + 2`. Default 10 000. */
  ttl?: number;
  /** As in `RedlockOptions`. Default `DEFAULTS.driftFactor` (0.01). */
  driftFactor?: number;
  /** How long a probe key may take to show up on a replica of the same database (ms). Default 250. */
  settleMs?: number;
  /** A name per node for the report, e.g. the variable that holds its URL. Default `node 1` … Never a URL or token. */
  labels?: readonly string[];
  /** Stops the checks (each request in flight is cut). */
  signal?: AbortSignal;
}

/**
 * `fail` makes {@link DoctorReport.ok} false; `warn` does not; `skip`: the check could not run (no node it
 * needs answered), and says so instead of passing.
 * @example
 * ```ts
 * import { checkNodes } from "edge-redlock";
 *
 * const report = await checkNodes(nodes);
 * const worst = report.checks.some((c) => c.status === "fail") ? "fail" : "ok";
 * ```
 */
export type CheckStatus = "ok" | "warn" | "fail" | "skip";

/**
 * One line of the verdict.
 * @example
 * ```ts
 * import { checkNodes } from "edge-redlock";
 *
 * const report = await checkNodes(nodes);
 * for (const c of report.checks) console.log(c.status, c.name, c.message);
 * ```
 */
export interface DoctorCheck {
  /** Which check this is. */
  name:
    | "config"
    | "reachable"
    | "scripts"
    | "key-locking"
    | "independence"
    | "latency"
    | "clocks"
    | "eviction"
    | "wakeups"
    | "lock";
  /** `fail` breaks locks, `warn` weakens them, `skip`: not checked (the nodes it needs are down). */
  status: CheckStatus;
  /**
   * What was found, in one sentence, naming the nodes it could not be checked on (`not checked on … (node
   * down)`); never a URL or a token.
   */
  message: string;
}

/**
 * What was found out about one node. Errors are secret-free: no URL, no token.
 * @example
 * ```ts
 * import { checkNodes } from "edge-redlock";
 *
 * const report = await checkNodes(nodes);
 * const twins = report.nodes.filter((n) => n.sameAs.length > 0).map((n) => n.label);
 * ```
 */
export interface NodeHealth {
  /** 0-based position in the list given. */
  index: number;
  /** The name given in `DoctorOptions.labels` (default `node 1` …). */
  label: string;
  /** Configuration problem found before any request (the node was not contacted). */
  configError?: string;
  /** Whether every timed request got an answer. */
  reachable: boolean;
  /** Why the node could not be used, when it could not. */
  error?: string;
  /** The HTTP status of a refused request (401: the token was refused). */
  httpStatus?: number;
  /** The first request (opens the connection), ms. */
  firstMs?: number;
  /** Median round trip of the timed requests, ms. */
  p50Ms?: number;
  /** 99th-percentile round trip of the timed requests, ms. */
  p99Ms?: number;
  /**
   * Every script the library may send loads (SCRIPT LOAD answers its SHA) and runs once with the reply it
   * should give (the doctor's `SCRIPT_TRIALS`, the fenced acquire included).
   */
  scripts?: "ok" | "failed";
  /** Why the scripts failed, when they did. */
  scriptError?: string;
  /**
   * Upstash's `#!lua flags=allow-key-locking`: accepted, or rejected (the library then runs its scripts without
   * the flag).
   */
  keyLocking?: "accepted" | "rejected";
  /**
   * The node's clock (`TIME`) minus this machine's, ms: taken at the midpoint of the fastest sample, so
   * it is off by at most {@link NodeHealth.clockUncertaintyMs} (half that round trip).
   */
  clockOffsetMs?: number;
  /** Half the round trip the clock offset was taken in, ms: the offset is off by at most this. */
  clockUncertaintyMs?: number;
  /**
   * Whether a Pub/Sub subscription is accepted and a message a script publishes arrives (`delivered`), or why not:
   * waiters in line are woken this way, else they ask again when the holder's time is up.
   */
  wakeups?: string;
  /** `maxmemory-policy` as the node reports it; `null` when it does not say. */
  eviction?: string | null;
  /** Other nodes (indexes) on which this node's probe key appeared: the same database. */
  sameAs: number[];
}

/**
 * What {@link checkNodes} found: per node, per check, and a verdict.
 * @example
 * ```ts
 * import { checkNodes } from "edge-redlock";
 *
 * const report = await checkNodes(nodes);
 * if (!report.ok) console.error(report.verdict);
 * ```
 */
export interface DoctorReport {
  /** No check failed (warnings allowed). */
  ok: boolean;
  /** One sentence: `OK: …` or `FAIL: <checks>`. */
  verdict: string;
  /** How many nodes make a quorum. */
  quorum: number;
  /** Per node, in the order given. */
  nodes: NodeHealth[];
  /** Per check, in a fixed order, each listed: one that could not run says so (`skip`). */
  checks: DoctorCheck[];
  /** The quorum-th fastest p50: about what one lock round takes. `null` when fewer than a quorum answer. */
  expectedLockLatencyMs: number | null;
  /**
   * How far apart the node clocks are at least, ms: the measured offsets minus their uncertainty (a
   * node slow to answer widens its own). `null` with fewer than two reachable nodes.
   */
  clockSpreadMs: number | null;
  /** ttl × driftFactor + 2 ms. */
  driftAllowanceMs: number;
}
