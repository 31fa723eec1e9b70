// `doctor`: are the configured databases reachable, fast enough, able to run the scripts, and independent?
import { systemClock } from "./clock.ts";
import { PROBE_PREFIX, caller, inspect, measure, probesSeen, trialLock } from "./doctor-probes.ts";
import { judge } from "./doctor-verdict.ts";
import { InvalidArgumentError } from "./errors.ts";
import type { NodeConfig } from "./node.ts";
import { DEFAULTS } from "./options.ts";
import { randomValue } from "./token.ts";

/**
 * Options of {@link checkNodes}.
 * @example
 * await checkNodes(nodes, { samples: 10, nodeTimeout: 300, labels: ["eu", "us-east", "us-west", "ap", "sa"] });
 */
export interface DoctorOptions {
  /** Timed requests per node after the first one (which opens the connection and is reported apart). Default 4. */
  samples?: number;
  /** Per-request timeout of the checks in ms. Default 3000: above nodeTimeout, so a slow node is measured, not dropped. */
  timeout?: number;
  /** The lock's nodeTimeout to judge round trips against (ms). Default {@link DEFAULTS}.nodeTimeout. */
  nodeTimeout?: number;
  /** The ttl to judge clock offsets against (ms): the drift allowance is `ttl × driftFactor + 2`. Default 10 000. */
  ttl?: number;
  /** As in {@link RedlockOptions}. Default {@link DEFAULTS}.driftFactor. */
  driftFactor?: number;
  /** How long a probe key may take to show up on a replica of the same database (ms). Default 250. */
  settleMs?: number;
  /** A name per node for the report, e.g. the variable that holds its URL. Default `node 1` … Never a URL or token. */
  labels?: readonly string[];
  /** Stops the checks (each request in flight is cut). */
  signal?: AbortSignal;
}

/**
 * `fail` makes {@link DoctorReport.ok} false; `warn` does not.
 * @example
 * const worst = report.checks.some((c) => c.status === "fail") ? "fail" : "ok";
 */
export type CheckStatus = "ok" | "warn" | "fail";

/**
 * One line of the verdict.
 * @example
 * for (const c of report.checks) console.log(c.status, c.name, c.message);
 */
export interface DoctorCheck {
  name: "config" | "reachable" | "scripts" | "key-locking" | "independence" | "latency" | "clocks" | "eviction" | "lock";
  status: CheckStatus;
  message: string;
}

/**
 * What was found out about one node. Errors are secret-free: no URL, no token.
 * @example
 * const twins = report.nodes.filter((n) => n.sameAs.length > 0).map((n) => n.label);
 */
export interface NodeHealth {
  /** 0-based position in the list given. */
  index: number;
  label: string;
  /** Configuration problem found before any request (the node was not contacted). */
  configError?: string;
  reachable: boolean;
  /** Why the node could not be used, when it could not. */
  error?: string;
  /** The HTTP status of a refused request (401: the token was refused). */
  httpStatus?: number;
  /** The first request (opens the connection), ms. */
  firstMs?: number;
  p50Ms?: number;
  p99Ms?: number;
  /** The lock's scripts load (SCRIPT LOAD answers their SHA) and a script runs. */
  scripts?: "ok" | "failed";
  scriptError?: string;
  /** Upstash's `#!lua flags=allow-key-locking`: accepted, or rejected (the library then runs its scripts without the flag). */
  keyLocking?: "accepted" | "rejected";
  /**
   * The node's clock (`TIME`) minus this machine's, ms: taken at the midpoint of the fastest sample, so
   * it is off by at most {@link NodeHealth.clockUncertaintyMs} (half that round trip).
   */
  clockOffsetMs?: number;
  clockUncertaintyMs?: number;
  /** `maxmemory-policy` as the node reports it; `null` when it does not say. */
  eviction?: string | null;
  /** Other nodes (indexes) on which this node's probe key appeared: the same database. */
  sameAs: number[];
}

/**
 * What {@link checkNodes} found: per node, per check, and a verdict.
 * @example
 * const report = await checkNodes(nodes);
 * if (!report.ok) console.error(report.verdict);
 */
export interface DoctorReport {
  /** No check failed (warnings allowed). */
  ok: boolean;
  verdict: string;
  quorum: number;
  nodes: NodeHealth[];
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

/**
 * Checks the databases a `Redlock` would use and says whether they can carry a lock:
 * every node reachable and its round trips (p50/p99); the lock's scripts load and run, and whether
 * Upstash's key-locking flag is accepted; **independence** (a random probe key written on one node
 * must not appear on any other: two URLs of one database are one node); clock offsets against the
 * drift allowance; the expected lock latency (the quorum-th fastest round trip); eviction, where a
 * node reports it; and a trial lock, taken and released. Probe keys expire after a minute and are
 * deleted at the end. Web standards only, so it runs in a Worker's health route too.
 *
 * Requests per node: `samples` + 5 (a single pipeline carries the script checks). On the Workers
 * free plan (50 subrequests) five nodes fit with the default `samples` of 4.
 * @throws {InvalidArgumentError} for a non-array or empty `nodes`, or bad options. Node problems never throw: they are in the report.
 * @example
 * import { checkNodes, nodesFromEnv } from "edge-redlock";
 * app.get("/health/lock", async (c) => {
 *   const report = await checkNodes(nodesFromEnv(c.env));
 *   return c.json(report, report.ok ? 200 : 503);
 * });
 */
export async function checkNodes(nodes: readonly NodeConfig[], options: DoctorOptions = {}): Promise<DoctorReport> {
  if (!Array.isArray(nodes) || nodes.length === 0) throw new InvalidArgumentError("nodes", "must hold at least one node");
  const o = resolveDoctorOptions(options, nodes.length);
  const run = randomValue().slice(0, 16);
  const probeKeys = nodes.map((_, i) => `${PROBE_PREFIX}${run}:${i}`);
  const quorum = Math.floor(nodes.length / 2) + 1;
  const problems = configErrors(nodes);
  const health: NodeHealth[] = nodes.map((_, index) => ({
    index,
    label: o.labels[index],
    ...(problems[index] ? { configError: problems[index] } : {}),
    reachable: false,
    sameAs: [],
  }));
  const calls = nodes.map((node) => caller(node, o.timeout, o.signal));

  // 1. Round trips and clocks, every node at once.
  await Promise.all(health.map(async (h, i) => h.configError === undefined && Object.assign(h, await measure(calls[i], o.samples))));
  const reachable = health.filter((h) => h.reachable).map((h) => h.index);

  // 2. Scripts, the key-locking flag, eviction, and each node's probe key.
  const probed = new Set<number>();
  await Promise.all(
    reachable.map(async (i) => {
      const found = await inspect(calls[i], probeKeys[i], run);
      Object.assign(health[i], found.health);
      if (found.probed) probed.add(i);
    }),
  );

  // 3. Independence: once the probes had time to reach any replica, look for every probe on every node.
  if (probed.size > 1) await systemClock.sleep(o.settleMs, o.signal);
  const seen = await Promise.all(reachable.map((j) => probesSeen(calls[j], probeKeys, run, j)));
  reachable.forEach((j, k) => {
    for (const i of seen[k]) {
      if (!health[i].sameAs.includes(j)) health[i].sameAs.push(j);
      if (!health[j].sameAs.includes(i)) health[j].sameAs.push(i);
    }
  });
  for (const h of health) h.sameAs.sort((a, b) => a - b);

  // 4. A lock as the library takes it, when the configuration allows one.
  const trial = reachable.length >= quorum && problems.every((p) => p === undefined) ? await trialLock(nodes, `${PROBE_PREFIX}${run}:lock`, o) : undefined;
  return judge(health, quorum, o, probed, trial);
}

interface ResolvedDoctorOptions {
  samples: number;
  timeout: number;
  nodeTimeout: number;
  ttl: number;
  driftFactor: number;
  settleMs: number;
  labels: string[];
  signal: AbortSignal | undefined;
}

function resolveDoctorOptions(options: DoctorOptions, count: number): ResolvedDoctorOptions {
  if (typeof options !== "object" || options === null) throw new InvalidArgumentError("options", "must be an object");
  const integer = (name: string, value: unknown, fallback: number, min: number): number => {
    if (value === undefined) return fallback;
    if (typeof value !== "number" || !Number.isInteger(value) || value < min) throw new InvalidArgumentError(`options.${name}`, `must be an integer of at least ${min}`);
    return value;
  };
  const driftFactor = options.driftFactor ?? DEFAULTS.driftFactor;
  if (typeof driftFactor !== "number" || !(driftFactor >= 0 && driftFactor < 1)) throw new InvalidArgumentError("options.driftFactor", "must be a number in [0, 1)");
  const labels = options.labels === undefined ? Array.from({ length: count }, (_, i) => `node ${i + 1}`) : [...options.labels];
  if (labels.length !== count || labels.some((l) => typeof l !== "string" || l === "")) {
    throw new InvalidArgumentError("options.labels", `must hold ${count} non-empty strings`);
  }
  if (options.signal !== undefined && typeof options.signal?.addEventListener !== "function") throw new InvalidArgumentError("options.signal", "must be an AbortSignal");
  return {
    samples: integer("samples", options.samples, 4, 1),
    timeout: integer("timeout", options.timeout, 3_000, 1),
    nodeTimeout: integer("nodeTimeout", options.nodeTimeout, DEFAULTS.nodeTimeout, 1),
    ttl: integer("ttl", options.ttl, 10_000, 1),
    driftFactor,
    settleMs: integer("settleMs", options.settleMs, 250, 0),
    labels,
    signal: options.signal,
  };
}

/** Per node, what is wrong with its `{ url, token }` before any request; never the values themselves. */
function configErrors(nodes: readonly NodeConfig[]): (string | undefined)[] {
  const seen = new Map<string, number>();
  return nodes.map((node, i) => {
    const { url, token } = (typeof node === "object" && node !== null ? node : {}) as Partial<NodeConfig>;
    if (typeof url !== "string" || !URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) return "the URL is not an http(s) URL";
    const parsed = new URL(url);
    if (parsed.username !== "" || parsed.password !== "") return "the URL carries credentials (user:password@); give the token on its own";
    if (typeof token !== "string" || token.trim() === "" || token.trim() !== token) return "the token is empty or has surrounding whitespace";
    const earlier = seen.get(parsed.href);
    if (earlier !== undefined) return `the same URL as node ${earlier + 1}`;
    seen.set(parsed.href, i);
    return undefined;
  });
}
