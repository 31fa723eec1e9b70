// `doctor`: are the configured databases reachable, fast enough, able to run the scripts, and independent?
import { nodeIdentity, tokenProblem } from "../check.ts";
import { InvalidArgumentError } from "../errors.ts";
import type { NodeConfig } from "../node/node.ts";
import { DEFAULTS } from "../options.ts";
import { quorumOf } from "../quorum/rules.ts";
import { systemClock } from "../support/clock.ts";
import { randomValue } from "../support/random.ts";
import { PROBE_PREFIX, caller, inspect, measure, probesAndScripts } from "./probes.ts";
import { trialLock } from "./trial.ts";
import { checkWakeups } from "./wakeups.ts";
import type { DoctorOptions, DoctorReport, NodeHealth } from "./types.ts";
import { judge } from "./verdict.ts";

/**
 * Checks the databases a `Redlock` would use and says whether they can carry a lock:
 * every node reachable and its round trips (p50/p99); every script the library sends to a lock node loads
 * and runs (the fenced acquires, which read `TIME` before they write, included), and whether
 * Upstash's key-locking flag is accepted; **independence** (a random probe key written on one node
 * must not appear on any other: two URLs of one database are one node); clock offsets against the
 * drift allowance; the expected lock latency (the quorum-th fastest round trip); eviction, where a
 * node reports it; and a trial lock, taken and released. Probe keys expire after a minute and are
 * deleted at the end. Web standards only, so it runs in a Worker's health route too.
 *
 * Requests per node: `samples` + 8 on a healthy node (a single pipeline carries the script checks). On the
 * Workers free plan (50 subrequests) five nodes fit with `samples: 1` (45), not with the default 4 (60).
 * @throws {InvalidArgumentError} for a non-array or empty `nodes`, or bad options. Node problems never throw: they
 *   are in the report.
 * @example
 * ```ts
 * import { checkNodes, nodesFromEnv } from "edge-redlock";
 * app.get("/health/lock", async (c) => {
 *   const report = await checkNodes(nodesFromEnv(c.env));
 *   return c.json(report, report.ok ? 200 : 503);
 * });
 * ```
 */
export async function checkNodes(nodes: readonly NodeConfig[], options: DoctorOptions = {}): Promise<DoctorReport> {
  if (!Array.isArray(nodes) || nodes.length === 0)
    throw new InvalidArgumentError("nodes", "must hold at least one node");
  const o = resolveDoctorOptions(options, nodes.length);
  const run = randomValue().slice(0, 16);
  const probeKeys = nodes.map((_, i) => `${PROBE_PREFIX}${run}:${i}`);
  const quorum = quorumOf(nodes.length);
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
  await Promise.all(
    health.map(async (h, i) => h.configError === undefined && Object.assign(h, await measure(calls[i], o.samples))),
  );
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

  // 2b. Wakeups: a subscription on each node, and a message published to it.
  await Promise.all(
    reachable.map(async (i) => {
      const channel = `${PROBE_PREFIX}wake:${run}:${i}`;
      const flagged = health[i].keyLocking === "accepted";
      health[i].wakeups = await checkWakeups(nodes[i], calls[i], channel, { timeout: o.timeout, flagged });
    }),
  );

  // 3. Independence: once the probes had time to reach any replica, look for every probe on every node;
  //    in the same request, every lock-node script of the library runs once (the fenced acquires included).
  if (probed.size > 1) await systemClock.sleep(o.settleMs, o.signal);
  const seen = await Promise.all(
    reachable.map((j) => probesAndScripts(calls[j], probeKeys, run, j, health[j].keyLocking === "accepted")),
  );
  reachable.forEach((j, k) => {
    const { scriptError } = seen[k];
    if (health[j].scripts === "ok" && scriptError !== undefined)
      Object.assign(health[j], { scripts: "failed", scriptError });
    for (const i of seen[k].twins) {
      if (!health[i].sameAs.includes(j)) health[i].sameAs.push(j);
      if (!health[j].sameAs.includes(i)) health[j].sameAs.push(i);
    }
  });
  for (const h of health) h.sameAs.sort((a, b) => a - b);

  // 4. A lock as the library takes it, when the configuration allows one.
  const trial =
    reachable.length >= quorum && problems.every((p) => p === undefined)
      ? await trialLock(nodes, `${PROBE_PREFIX}${run}:lock`, o)
      : undefined;
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
    if (typeof value !== "number" || !Number.isInteger(value) || value < min)
      throw new InvalidArgumentError(`options.${name}`, `must be an integer of at least ${min}`);
    return value;
  };
  const driftFactor = options.driftFactor ?? DEFAULTS.driftFactor;
  if (typeof driftFactor !== "number" || !(driftFactor >= 0 && driftFactor < 1))
    throw new InvalidArgumentError("options.driftFactor", "must be a number in [0, 1)");
  const labels =
    options.labels === undefined ? Array.from({ length: count }, (_, i) => `node ${i + 1}`) : [...options.labels];
  if (labels.length !== count || labels.some((l) => typeof l !== "string" || l === "")) {
    throw new InvalidArgumentError("options.labels", `must hold ${count} non-empty strings`);
  }
  if (options.signal !== undefined && typeof options.signal?.addEventListener !== "function")
    throw new InvalidArgumentError("options.signal", "must be an AbortSignal");
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

/**
 * Per node, what is wrong with its `{ url, token }` before any request, judged by the same checks as
 * `new Redlock` (one database twice under two spellings included); never the values themselves.
 */
function configErrors(nodes: readonly NodeConfig[]): (string | undefined)[] {
  const seen = new Map<string, number>();
  return nodes.map((node, i) => {
    const { url, token } = (typeof node === "object" && node !== null ? node : {}) as Partial<NodeConfig>;
    const checked = nodeIdentity(url);
    if ("problem" in checked) return `the URL ${checked.problem}`;
    const problem = tokenProblem(token);
    if (problem) return `the token ${problem}`;
    const earlier = seen.get(checked.identity);
    if (earlier !== undefined) return `the same database as node ${earlier + 1}`;
    seen.set(checked.identity, i);
    return undefined;
  });
}
