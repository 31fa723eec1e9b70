// The doctor's verdict: from what each node said, one line per check and a sentence.
import type { CheckStatus, DoctorCheck, DoctorReport, NodeHealth } from "./doctor.ts";
import type { Trial } from "./doctor-probes.ts";

/** The settings the checks judge against. */
export interface Judged {
  nodeTimeout: number;
  ttl: number;
  driftFactor: number;
}

/**
 * Turns the findings into checks and a verdict: `fail` for what breaks locks or the configuration
 * (a node unreachable or misconfigured, scripts that do not run, one database twice, no quorum within
 * nodeTimeout, a failed trial lock), `warn` for what weakens them (a slow node, clocks far apart,
 * eviction on), `ok` otherwise.
 * @example
 * const report = judge(health, 3, { nodeTimeout: 500, ttl: 10_000, driftFactor: 0.01 }, written, trial);
 */
export function judge(health: NodeHealth[], quorum: number, o: Judged, written: Set<number>, trial: Trial | undefined): DoctorReport {
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
