// `doctor`: are the configured databases reachable, fast enough, able to run the scripts, and independent?
import { anySignal, systemClock } from "./clock.ts";
import { InvalidArgumentError, LockAcquisitionError } from "./errors.ts";
import type { NodeConfig } from "./node.ts";
import { DEFAULTS } from "./options.ts";
import { Redlock } from "./redlock.ts";
import { ACQUIRE, EXTEND, FENCE, RELEASE, scriptSha } from "./scripts.ts";
import { randomValue } from "./token.ts";

/** Options of {@link checkNodes}. */
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

/** `fail` makes {@link DoctorReport.ok} false; `warn` does not. */
export type CheckStatus = "ok" | "warn" | "fail";

/** One line of the verdict. */
export interface DoctorCheck {
  name: "config" | "reachable" | "scripts" | "key-locking" | "independence" | "latency" | "clocks" | "eviction" | "lock";
  status: CheckStatus;
  message: string;
}

/** What was found out about one node. Errors are secret-free: no URL, no token. */
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

/** A command the library runs on every node, to check that scripting works there. */
const EXISTS_SCRIPT = 'return redis.call("EXISTS", KEYS[1])';
/** Upstash locks only the script's KEYS with this flag; plain Redis 7 rejects it. */
const KEY_LOCKING_SHEBANG = "#!lua flags=allow-key-locking\n";
const PROBE_PREFIX = "edge-redlock:doctor:";
const PROBE_TTL_MS = 60_000;

type Reply = { ok: true; result: unknown; ms: number } | { ok: false; error: string; status?: number; ms: number };

/**
 * Checks the databases a {@link Redlock} would use and says whether they can carry a lock:
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
  const probeKey = (i: number) => `${PROBE_PREFIX}${run}:${i}`;
  const quorum = Math.floor(nodes.length / 2) + 1;
  const health: NodeHealth[] = nodes.map((_, index) => ({ index, label: o.labels[index], reachable: false, sameAs: [] }));

  configErrors(nodes).forEach((problem, i) => {
    if (problem) health[i].configError = problem;
  });
  const usable = (i: number) => health[i].configError === undefined;
  const call = (i: number, command: unknown[], path = "") => rest(nodes[i], command, path, o.timeout, o.signal);

  // Round trips and clocks: TIME, one after another, the first reported apart.
  await Promise.all(
    nodes.map(async (_, i) => {
      if (!usable(i)) return;
      const samples: { ms: number; offset: number }[] = [];
      for (let s = 0; s <= o.samples; s++) {
        const sentAt = systemClock.epoch();
        const reply = await call(i, ["TIME"]);
        const offset = reply.ok ? clockOffset(reply.result, sentAt, systemClock.epoch()) : undefined;
        if (!reply.ok || offset === undefined) {
          // A node that fails one request in a handful is not one to lock on: it counts as unreachable.
          const why = reply.ok ? "TIME answered something unexpected" : reply.error;
          health[i].error = s === 0 ? why : `request ${s + 1} of ${o.samples + 1}: ${why}`;
          if (!reply.ok && reply.status !== undefined) health[i].httpStatus = reply.status;
          return;
        }
        samples.push({ ms: reply.ms, offset });
      }
      const warm = samples.slice(1);
      const times = warm.map((s) => s.ms).sort((a, b) => a - b);
      Object.assign(health[i], {
        reachable: true,
        firstMs: samples[0].ms,
        p50Ms: percentile(times, 0.5),
        p99Ms: percentile(times, 0.99),
        ...tightestOffset(samples),
      });
    }),
  );
  const reachable = health.filter((h) => h.reachable).map((h) => h.index);

  // Scripts, the key-locking flag, eviction, and the independence probe: one pipeline per node.
  const lockScripts = [ACQUIRE, RELEASE, EXTEND, FENCE];
  const shas = await Promise.all(lockScripts.map(scriptSha));
  const written = new Set<number>();
  await Promise.all(
    reachable.map(async (i) => {
      const h = health[i];
      const reply = await call(
        i,
        [
          ...lockScripts.map((s) => ["SCRIPT", "LOAD", s.lua]),
          ["EVAL", EXISTS_SCRIPT, "1", probeKey(i)],
          ["EVAL", KEY_LOCKING_SHEBANG + EXISTS_SCRIPT, "1", probeKey(i)],
          ["INFO", "memory"],
          ["SET", probeKey(i), run, "PX", String(PROBE_TTL_MS)],
        ],
        "/pipeline",
      );
      const parts = reply.ok ? pipelineParts(reply.result, lockScripts.length + 4) : undefined;
      if (!parts) {
        h.scripts = "failed";
        h.scriptError = reply.ok ? "the pipeline answered something unexpected" : reply.error;
        return;
      }
      const loads = parts.slice(0, lockScripts.length);
      const [plain, flagged, info, set] = parts.slice(lockScripts.length);
      const badLoad = loads.findIndex((p, k) => p.error !== undefined || p.result !== shas[k]);
      if (badLoad >= 0) {
        const p = loads[badLoad];
        h.scripts = "failed";
        h.scriptError = `SCRIPT LOAD of ${lockScripts[badLoad].name}: ${p.error ?? "answered another SHA than the library computes (EVALSHA would miss)"}`;
      } else if (plain.error !== undefined || !isInteger(plain.result)) {
        h.scripts = "failed";
        h.scriptError = `EVAL: ${plain.error ?? "answered something unexpected"}`;
      } else h.scripts = "ok";
      if (h.scripts === "ok") h.keyLocking = flagged.error === undefined && isInteger(flagged.result) ? "accepted" : "rejected";
      h.eviction = info.error === undefined ? evictionPolicy(info.result) : null;
      if (set.error === undefined) written.add(i);
    }),
  );

  // Independence: after the probes had time to reach any replica, look for every probe on every node.
  if (written.size > 1) await systemClock.sleep(o.settleMs, o.signal);
  const allKeys = nodes.map((_, i) => probeKey(i));
  const seenOn = new Map<number, Set<number>>();
  await Promise.all(
    reachable.map(async (j) => {
      const reply = await call(j, [["MGET", ...allKeys], ["DEL", ...allKeys]], "/pipeline");
      const parts = reply.ok ? pipelineParts(reply.result, 2) : undefined;
      const values = parts?.[0].result;
      if (!Array.isArray(values)) return;
      values.forEach((value, i) => {
        if (i === j || value !== run) return;
        const seen = seenOn.get(i) ?? new Set<number>();
        seen.add(j);
        seenOn.set(i, seen);
      });
    }),
  );
  for (const [i, seen] of seenOn) {
    for (const j of seen) {
      if (!health[i].sameAs.includes(j)) health[i].sameAs.push(j);
      if (!health[j].sameAs.includes(i)) health[j].sameAs.push(i);
    }
  }
  for (const h of health) h.sameAs.sort((a, b) => a - b);

  const trial = reachable.length >= quorum && health.every((h) => h.configError === undefined) ? await trialLock(nodes, run, o) : undefined;
  return report(health, quorum, o, written, trial);
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

/** One Upstash REST request: a command on `POST /`, or a list of them on `POST /pipeline`. */
async function rest(node: NodeConfig, body: unknown[], path: string, timeout: number, signal: AbortSignal | undefined): Promise<Reply> {
  const deadline = systemClock.timeout(timeout);
  const started = systemClock.now();
  const ms = () => systemClock.now() - started;
  const secrets = [node.token, node.url];
  try {
    const response = await fetch(node.url.replace(/\/+$/, "") + (path || "/"), {
      method: "POST",
      headers: { authorization: `Bearer ${node.token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: anySignal([deadline.signal, signal]),
    });
    const text = await response.text();
    const elapsed = ms();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return { ok: false, error: `HTTP ${response.status}: the reply is not JSON`, status: response.ok ? undefined : response.status, ms: elapsed };
    }
    const error = (json as { error?: unknown } | null)?.error;
    if (!response.ok) {
      const said = typeof error === "string" ? `: ${redact(error, secrets)}` : "";
      return { ok: false, error: `HTTP ${response.status}${said}${response.status === 401 ? " (the token was refused)" : ""}`, status: response.status, ms: elapsed };
    }
    if (typeof error === "string") return { ok: false, error: redact(error, secrets), ms: elapsed };
    if (Array.isArray(json)) return { ok: true, result: json, ms: elapsed };
    if (json === null || typeof json !== "object" || !("result" in json)) return { ok: false, error: "the reply has no result", ms: elapsed };
    return { ok: true, result: (json as { result: unknown }).result, ms: elapsed };
  } catch (error) {
    if (deadline.signal.aborted) return { ok: false, error: `no answer within ${timeout} ms`, ms: ms() };
    if (signal?.aborted) throw signal.reason;
    const err = error as { name?: string; message?: string; cause?: { code?: string; message?: string } };
    const detail = err?.cause?.code ?? err?.cause?.message;
    return { ok: false, error: redact(`network: ${err?.message ?? String(error)}${detail ? ` (${detail})` : ""}`, secrets), ms: ms() };
  } finally {
    deadline.clear();
  }
}

function redact(text: string, secrets: string[]): string {
  let out = text;
  for (const secret of secrets) if (secret.length >= 4) out = out.split(secret).join("[redacted]");
  return out.length > 160 ? out.slice(0, 160) + "…" : out;
}

/** The replies of a pipeline, each `{ result }` or `{ error }`, or undefined when the shape is wrong. */
function pipelineParts(result: unknown, count: number): { result?: unknown; error?: string }[] | undefined {
  if (!Array.isArray(result) || result.length !== count) return undefined;
  const parts = result.map((p) => (typeof p === "object" && p !== null ? (p as { result?: unknown; error?: unknown }) : undefined));
  if (parts.some((p) => p === undefined)) return undefined;
  return parts.map((p) => (typeof p!.error === "string" ? { error: p!.error } : { result: p!.result }));
}

function clockOffset(result: unknown, sentAt: number, receivedAt: number): number | undefined {
  if (!Array.isArray(result) || result.length !== 2) return undefined;
  const [seconds, micros] = result.map(Number);
  if (!Number.isFinite(seconds) || !Number.isFinite(micros)) return undefined;
  return seconds * 1000 + micros / 1000 - (sentAt + receivedAt) / 2;
}

/** The offset from the sample with the shortest round trip: it bounds the node's clock most tightly. */
function tightestOffset(samples: { ms: number; offset: number }[]): { clockOffsetMs: number; clockUncertaintyMs: number } {
  const best = samples.reduce((a, b) => (b.ms < a.ms ? b : a));
  return { clockOffsetMs: best.offset, clockUncertaintyMs: best.ms / 2 };
}

function evictionPolicy(info: unknown): string | null {
  if (typeof info !== "string") return null;
  return /^maxmemory_policy:(\S+)/m.exec(info)?.[1] ?? null;
}

function isInteger(value: unknown): boolean {
  return typeof value === "number" ? Number.isInteger(value) : typeof value === "string" && /^-?\d+$/.test(value);
}

/** Nearest-rank percentile of sorted values. */
function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))];
}

interface Trial {
  acquired: boolean;
  ms: number;
  message: string;
}

/** Takes and releases one lock the way the library does, on every configured node. */
async function trialLock(nodes: readonly NodeConfig[], run: string, o: ResolvedDoctorOptions): Promise<Trial> {
  let redlock: Redlock;
  try {
    redlock = new Redlock(nodes, { retryCount: 0, nodeTimeout: o.nodeTimeout, driftFactor: o.driftFactor });
  } catch (error) {
    return { acquired: false, ms: 0, message: `not tried: ${(error as Error).message}` };
  }
  const started = systemClock.now();
  try {
    const lock = await redlock.acquire([`${PROBE_PREFIX}${run}:lock`], Math.max(o.ttl, o.nodeTimeout + 1), { signal: o.signal });
    const ms = systemClock.now() - started;
    const granted = lock.attempts === 1 ? "" : ` after ${lock.attempts} attempts`;
    const { released, pending } = await lock.release();
    await pending;
    return { acquired: true, ms, message: `a trial lock was acquired in ${fmt(ms)} ms${granted} and released on ${released} of ${nodes.length} nodes` };
  } catch (error) {
    if (error instanceof LockAcquisitionError) {
      const t = error.attempts[error.attempts.length - 1];
      return { acquired: false, ms: systemClock.now() - started, message: `a trial lock failed (${error.reason}: ${t.granted} granted, ${t.denied} denied, ${t.errors} errors)` };
    }
    throw error;
  }
}

function report(health: NodeHealth[], quorum: number, o: ResolvedDoctorOptions, written: Set<number>, trial: Trial | undefined): DoctorReport {
  const n = health.length;
  const label = (i: number) => health[i].label;
  const list = (hs: NodeHealth[]) => hs.map((h) => h.label).join(", ");
  const checks: DoctorCheck[] = [];
  const add = (name: DoctorCheck["name"], status: CheckStatus, message: string) => checks.push({ name, status, message });

  const misconfigured = health.filter((h) => h.configError !== undefined);
  const tolerance = n - quorum;
  if (misconfigured.length > 0) add("config", "fail", misconfigured.map((h) => `${h.label}: ${h.configError}`).join("; "));
  else if (tolerance === 0) add("config", "warn", `${n} node${n === 1 ? "" : "s"}, quorum ${quorum}: a single node failure stops every lock (use 5)`);
  else add("config", "ok", `${n} nodes, quorum ${quorum}: locks survive ${tolerance} node failure${tolerance === 1 ? "" : "s"}`);

  const contacted = health.filter((h) => h.configError === undefined);
  const down = contacted.filter((h) => !h.reachable);
  if (down.length > 0) add("reachable", "fail", down.map((h) => `${h.label}: ${h.error}`).join("; "));
  else add("reachable", "ok", `${contacted.length} of ${n} nodes answer`);

  const up = health.filter((h) => h.reachable);
  const noScripts = up.filter((h) => h.scripts !== "ok");
  if (noScripts.length > 0) add("scripts", "fail", noScripts.map((h) => `${h.label}: ${h.scriptError}`).join("; "));
  else if (up.length > 0) add("scripts", "ok", `the lock's scripts load and run on ${up.length} node${up.length === 1 ? "" : "s"}`);

  const rejected = up.filter((h) => h.keyLocking === "rejected");
  const accepted = up.filter((h) => h.keyLocking === "accepted");
  if (accepted.length + rejected.length > 0) {
    add(
      "key-locking",
      "ok",
      rejected.length === 0
        ? `the allow-key-locking flag is accepted on every node (scripts lock only their keys)`
        : `accepted on ${accepted.length}; rejected on ${list(rejected)}: the library falls back to scripts without the flag there`,
    );
  }

  const pairs = health.flatMap((h) => h.sameAs.filter((j) => j > h.index).map((j) => `${h.label} and ${label(j)}`));
  const unprobed = up.filter((h) => !written.has(h.index));
  if (pairs.length > 0) {
    add("independence", "fail", `the same database is configured twice: ${pairs.join("; ")} (a probe written on one appeared on the other)`);
  } else if (unprobed.length > 0) add("independence", "warn", `not checked on ${list(unprobed)} (the probe could not be written)`);
  else if (up.length > 1) add("independence", "ok", `no probe key appeared on another node: ${up.length} independent databases`);

  const p50s = health.map((h) => (h.reachable && h.p50Ms !== undefined ? h.p50Ms : Infinity)).sort((a, b) => a - b);
  const expected = Number.isFinite(p50s[quorum - 1]) ? p50s[quorum - 1] : null;
  const slow = up.filter((h) => (h.p99Ms ?? 0) >= o.nodeTimeout);
  const coldSlow = up.filter((h) => (h.firstMs ?? 0) >= o.nodeTimeout && !slow.includes(h));
  const quorumTh = ordinal(quorum);
  if (expected === null) add("latency", "fail", `fewer than ${quorum} nodes answer: no lock can be taken`);
  else if (expected >= o.nodeTimeout) add("latency", "fail", `a lock round needs the ${quorumTh}-fastest node: p50 ${fmt(expected)} ms ≥ nodeTimeout ${o.nodeTimeout} ms`);
  else if (slow.length > 0) {
    const each = slow.map((h) =>
      h.p50Ms! >= o.nodeTimeout ? `${h.label}: p50 ${fmt(h.p50Ms!)} ms, it times out in every round` : `${h.label}: p99 ${fmt(h.p99Ms!)} ms, it often times out`,
    );
    add("latency", "warn", `expected lock latency ${fmt(expected)} ms; slower than nodeTimeout ${o.nodeTimeout} ms: ${each.join("; ")}`);
  } else if (coldSlow.length > 0) {
    add("latency", "warn", `expected lock latency ${fmt(expected)} ms; the first request to ${list(coldSlow)} (new connection) took ≥ nodeTimeout ${o.nodeTimeout} ms: a cold start's first round may miss it`);
  } else add("latency", "ok", `expected lock latency ${fmt(expected)} ms (the ${quorumTh}-fastest p50), below nodeTimeout ${o.nodeTimeout} ms`);

  const drift = o.ttl * o.driftFactor + 2;
  const clocks = up.filter((h) => h.clockOffsetMs !== undefined && h.clockUncertaintyMs !== undefined);
  const spread = clocks.length > 1 ? Math.max(0, Math.max(...clocks.map((h) => h.clockOffsetMs! - h.clockUncertaintyMs!)) - Math.min(...clocks.map((h) => h.clockOffsetMs! + h.clockUncertaintyMs!))) : null;
  if (spread !== null) {
    const apart = spread === 0 ? "node clocks agree within the measurement" : `node clocks at least ${fmt(spread)} ms apart`;
    const within = `${apart} (TIME, ± half a round trip); drift allowance ${fmt(drift)} ms (ttl ${o.ttl} × ${o.driftFactor} + 2)`;
    add("clocks", spread > drift ? "warn" : "ok", spread > drift ? `${within}: a clock this far off may also run fast or jump` : within);
  }

  const evicting = up.filter((h) => typeof h.eviction === "string" && h.eviction !== "noeviction");
  const silent = up.filter((h) => h.eviction === null);
  if (evicting.length > 0) {
    add("eviction", "warn", `${evicting.map((h) => `${h.label}: ${h.eviction}`).join(", ")}: under memory pressure a lock key can be evicted (turn eviction off)`);
  } else if (silent.length > 0) add("eviction", "ok", `not reported by ${list(silent)}: make sure eviction is off in the database's settings`);
  else if (up.length > 0) add("eviction", "ok", "noeviction on every node");

  if (trial) add("lock", trial.acquired ? "ok" : "fail", trial.message);

  const failed = checks.filter((c) => c.status === "fail");
  const warned = checks.filter((c) => c.status === "warn");
  const verdict =
    failed.length > 0
      ? `FAIL: ${failed.map((c) => c.name).join(", ")}`
      : `OK${warned.length > 0 ? ` with ${warned.length} warning${warned.length === 1 ? "" : "s"} (${warned.map((c) => c.name).join(", ")})` : ""}: ` +
        `${up.length} independent nodes, quorum ${quorum}, a lock takes about ${fmt(expected ?? 0)} ms`;
  return { ok: failed.length === 0, verdict, quorum, nodes: health, checks, expectedLockLatencyMs: expected, clockSpreadMs: spread, driftAllowanceMs: drift };
}

function ordinal(n: number): string {
  return `${n}${n % 10 === 1 && n % 100 !== 11 ? "st" : n % 10 === 2 && n % 100 !== 12 ? "nd" : n % 10 === 3 && n % 100 !== 13 ? "rd" : "th"}`;
}

function fmt(ms: number): string {
  return ms >= 100 ? String(Math.round(ms)) : ms.toFixed(1);
}
