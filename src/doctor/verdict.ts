// The doctor's verdict: from what each node said, one function per check, then a sentence.
import { driftAllowance } from "../quorum/rules.ts";
import type { Trial } from "./trial.ts";
import type { CheckStatus, DoctorCheck, DoctorReport, NodeHealth } from "./types.ts";
import { DELIVERED, DELIVERED_WITHOUT_FLAG, PUBLISH_REFUSED } from "./wakeups.ts";

/** The settings the checks judge against. */
export interface Judged {
  nodeTimeout: number;
  ttl: number;
  driftFactor: number;
}

/** What every check reads: the findings, and the settings they are judged against. */
interface Findings {
  health: NodeHealth[];
  /** The nodes that answered. */
  up: NodeHealth[];
  quorum: number;
  o: Judged;
  /** The nodes whose probe key was written. */
  written: Set<number>;
  trial: Trial | undefined;
}

type Check = (f: Findings) => DoctorCheck | undefined;

const result = (name: DoctorCheck["name"], status: CheckStatus, message: string): DoctorCheck => ({
  name,
  status,
  message,
});
const list = (hs: NodeHealth[]) => hs.map((h) => h.label).join(", ");
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

/** The nodes a per-node check could not run on, and why (`not checked on … (node down)`); undefined: none. */
function unchecked(health: NodeHealth[]): string | undefined {
  const down = health.filter((h) => !h.reachable && h.configError === undefined);
  const misconfigured = health.filter((h) => h.configError !== undefined);
  const parts = [
    ...(down.length > 0 ? [`${shortList(down)} (node down)`] : []),
    ...(misconfigured.length > 0 ? [`${shortList(misconfigured)} (configuration error)`] : []),
  ];
  return parts.length > 0 ? `not checked on ${parts.join("; ")}` : undefined;
}

/** Labels that differ only in a numbered suffix, after the first by the suffix alone: `X_3, _4, _5`. */
export function shortList(hs: NodeHealth[]): string {
  const suffixed = hs.map((h) => /^(.*_)(\d+)$/.exec(h.label));
  const stem = suffixed[0]?.[1];
  if (hs.length < 2 || suffixed.some((m) => m === null || m[1] !== stem)) return list(hs);
  return [hs[0].label, ...suffixed.slice(1).map((m) => `_${m![2]}`)].join(", ");
}

/** `message`, followed by the nodes it does not speak for: a check claims only what it checked. */
const partly = (message: string, health: NodeHealth[]): string => {
  const rest = unchecked(health);
  return rest === undefined ? message : `${message}; ${rest}`;
};

/** "every node", or "every node that answers (2 of 5)" when some could not be asked. */
const everyNode = (up: NodeHealth[], health: NodeHealth[]): string =>
  up.length === health.length ? "every node" : `every node that answers (${up.length} of ${health.length})`;

/** A check that could not run at all: listed, never left out, so the report says what it did not check. */
const skipped = (name: DoctorCheck["name"], health: NodeHealth[], why?: string): DoctorCheck =>
  result(name, "skip", why ?? unchecked(health) ?? "not checked");

const config: Check = ({ health, quorum }) => {
  const n = health.length;
  const misconfigured = health.filter((h) => h.configError !== undefined);
  const tolerance = n - quorum;
  if (misconfigured.length > 0)
    return result("config", "fail", misconfigured.map((h) => `${h.label}: ${h.configError}`).join("; "));
  if (tolerance === 0)
    return result(
      "config",
      "warn",
      `${plural(n, "node")}, quorum ${quorum}: a single node failure stops every lock (use 5)`,
    );
  return result("config", "ok", `${n} nodes, quorum ${quorum}: locks survive ${plural(tolerance, "node failure")}`);
};

const reachable: Check = ({ health }) => {
  const contacted = health.filter((h) => h.configError === undefined);
  const down = contacted.filter((h) => !h.reachable);
  if (down.length > 0) return result("reachable", "fail", down.map((h) => `${h.label}: ${h.error}`).join("; "));
  return result("reachable", "ok", `${contacted.length} of ${health.length} nodes answer`);
};

const scripts: Check = ({ health, up }) => {
  const noScripts = up.filter((h) => h.scripts !== "ok");
  if (noScripts.length > 0)
    return result("scripts", "fail", noScripts.map((h) => `${h.label}: ${h.scriptError}`).join("; "));
  if (up.length === 0) return skipped("scripts", health);
  return result(
    "scripts",
    "ok",
    partly(`every script the library sends loads and runs on ${plural(up.length, "node")}`, health),
  );
};

const keyLocking: Check = ({ health, up }) => {
  const rejected = up.filter((h) => h.keyLocking === "rejected");
  const accepted = up.filter((h) => h.keyLocking === "accepted");
  if (accepted.length + rejected.length === 0) return up.length === 0 ? skipped("key-locking", health) : undefined;
  return result(
    "key-locking",
    "ok",
    partly(
      rejected.length === 0
        ? `the allow-key-locking flag is accepted on ${everyNode(up, health)} (scripts lock only their keys)`
        : `accepted on ${accepted.length}; rejected on ${list(rejected)}: ` +
            "the library falls back to scripts without the flag there",
      health,
    ),
  );
};

const independence: Check = ({ health, up, written }) => {
  const pairs = health.flatMap((h) =>
    h.sameAs.filter((j) => j > h.index).map((j) => `${h.label} and ${health[j].label}`),
  );
  const unprobed = up.filter((h) => !written.has(h.index));
  if (pairs.length > 0)
    return result(
      "independence",
      "fail",
      `the same database is configured twice: ${pairs.join("; ")} (a probe written on one appeared on the other)`,
    );
  if (unprobed.length > 0)
    return result("independence", "warn", `not checked on ${list(unprobed)} (the probe could not be written)`);
  if (up.length > 1)
    return result(
      "independence",
      "ok",
      partly(`no probe key appeared on another node: ${up.length} independent databases`, health),
    );
  if (health.length === 1) return undefined;
  return skipped("independence", health, `not checked: it needs two nodes that answer; ${unchecked(health)}`);
};

/** The quorum-th fastest p50: about what one lock round takes; null when fewer than a quorum answer. */
function expectedLatency(health: NodeHealth[], quorum: number): number | null {
  const p50s = health.map((h) => (h.reachable && h.p50Ms !== undefined ? h.p50Ms : Infinity)).sort((a, b) => a - b);
  return Number.isFinite(p50s[quorum - 1]) ? p50s[quorum - 1] : null;
}

const latency: Check = ({ health, up, quorum, o }) => {
  const expected = expectedLatency(health, quorum);
  const slow = up.filter((h) => (h.p99Ms ?? 0) >= o.nodeTimeout);
  const coldSlow = up.filter((h) => (h.firstMs ?? 0) >= o.nodeTimeout && !slow.includes(h));
  const quorumTh = ordinal(quorum);
  if (expected === null) return result("latency", "fail", `fewer than ${quorum} nodes answer: no lock can be taken`);
  if (expected >= o.nodeTimeout)
    return result(
      "latency",
      "fail",
      `a lock round needs the ${quorumTh}-fastest node: p50 ${fmt(expected)} ms ≥ nodeTimeout ${o.nodeTimeout} ms`,
    );
  if (slow.length > 0) {
    const each = slow.map((h) =>
      h.p50Ms! >= o.nodeTimeout
        ? `${h.label}: p50 ${fmt(h.p50Ms!)} ms, it times out in every round`
        : `${h.label}: p99 ${fmt(h.p99Ms!)} ms, it often times out`,
    );
    return result(
      "latency",
      "warn",
      `expected lock latency ${fmt(expected)} ms; slower than nodeTimeout ${o.nodeTimeout} ms: ${each.join("; ")}`,
    );
  }
  if (coldSlow.length > 0) {
    return result(
      "latency",
      "warn",
      `expected lock latency ${fmt(expected)} ms; the first request to ${list(coldSlow)} (new connection) ` +
        `took ≥ nodeTimeout ${o.nodeTimeout} ms: a cold start's first round may miss it`,
    );
  }
  return result(
    "latency",
    "ok",
    `expected lock latency ${fmt(expected)} ms (the ${quorumTh}-fastest p50), below nodeTimeout ${o.nodeTimeout} ms`,
  );
};

/** How far apart the node clocks are at least: the offsets minus their uncertainty; null with fewer than two. */
function clockSpread(up: NodeHealth[]): number | null {
  const clocks = up.filter((h) => h.clockOffsetMs !== undefined && h.clockUncertaintyMs !== undefined);
  if (clocks.length < 2) return null;
  return Math.max(
    0,
    Math.max(...clocks.map((h) => h.clockOffsetMs! - h.clockUncertaintyMs!)) -
      Math.min(...clocks.map((h) => h.clockOffsetMs! + h.clockUncertaintyMs!)),
  );
}

const clocks: Check = ({ health, up, o }) => {
  const spread = clockSpread(up);
  if (spread === null && health.length > 1 && up.length < 2)
    return skipped("clocks", health, `not checked: it needs two nodes that answer; ${unchecked(health)}`);
  if (spread === null) return undefined;
  const drift = driftAllowance(o.ttl, o.driftFactor);
  const apart =
    spread === 0 ? "node clocks agree within the measurement" : `node clocks at least ${fmt(spread)} ms apart`;
  const allowance = `drift allowance ${fmt(drift)} ms (ttl ${o.ttl} × ${o.driftFactor} + 2)`;
  const within = `${apart} (TIME, ± half a round trip); ${allowance}`;
  return result(
    "clocks",
    spread > drift ? "warn" : "ok",
    partly(spread > drift ? `${within}: a clock this far off may also run fast or jump` : within, health),
  );
};

const eviction: Check = ({ health, up }) => {
  const evicting = up.filter((h) => typeof h.eviction === "string" && h.eviction !== "noeviction");
  const silent = up.filter((h) => h.eviction === null);
  if (evicting.length > 0) {
    return result(
      "eviction",
      "warn",
      partly(
        `${evicting.map((h) => `${h.label}: ${h.eviction}`).join(", ")}: ` +
          "under memory pressure a lock key can be evicted (turn eviction off)",
        health,
      ),
    );
  }
  if (silent.length > 0)
    return result(
      "eviction",
      "ok",
      partly(`not reported by ${list(silent)}: make sure eviction is off in the database's settings`, health),
    );
  if (up.length > 0) return result("eviction", "ok", partly(`noeviction on ${everyNode(up, health)}`, health));
  return skipped("eviction", health);
};

const wakeups: Check = ({ health, up }) => {
  const plain = up.filter((h) => h.wakeups === DELIVERED_WITHOUT_FLAG);
  const silent = up.filter((h) => h.wakeups !== undefined && h.wakeups !== DELIVERED && !plain.includes(h));
  if (silent.length > 0)
    return result(
      "wakeups",
      "warn",
      partly(
        `${silent.map((h) => `${h.label}: ${h.wakeups}`).join("; ")}: waiters are not woken through ` +
          `${silent.length === 1 ? "it" : "them"} and ask again when the holder's time is up. ` +
          wakeupAdvice(silent.map((h) => h.wakeups as string)),
        health,
      ),
    );
  if (up.length > 0)
    return result(
      "wakeups",
      "ok",
      partly(
        `a subscription is accepted and a publish delivered on ${plural(up.length, "node")}` +
          (plain.length === 0
            ? ""
            : ` (${plain.map((h) => h.label).join(", ")}: only from a script without the key-locking flag, as ` +
              "the library then sends its scripts that publish)"),
        health,
      ),
    );
  return skipped("wakeups", health);
};

/** What to change for the causes found (`why`: each silent node's wakeups finding). */
function wakeupAdvice(why: readonly string[]): string {
  const advice: string[] = [];
  if (why.some((w) => w.startsWith(PUBLISH_REFUSED)))
    advice.push(
      "A database that refuses PUBLISH from a script cannot wake waiters: keep the ttl short (using() extends it) " +
        "so that their wait behind an early release stays short",
    );
  if (why.some((w) => !w.startsWith(PUBLISH_REFUSED)))
    advice.push(
      "Check that the token may subscribe and that nothing between this machine and the database (a proxy) " +
        "buffers server-sent events",
    );
  return `${advice.join(". ")}.`;
}

const lock: Check = ({ health, up, quorum, trial }) => {
  if (trial) return result("lock", trial.acquired ? "ok" : "fail", trial.message);
  if (health.some((h) => h.configError !== undefined))
    return skipped("lock", health, "not tried: the configuration has errors (see config)");
  return skipped(
    "lock",
    health,
    `not tried: ${up.length} of ${health.length} nodes answer, fewer than the quorum of ${quorum}; ` +
      `${unchecked(health)}`,
  );
};

/** Every check, in the order the report lists them. */
const CHECKS: Check[] = [
  config,
  reachable,
  scripts,
  keyLocking,
  independence,
  latency,
  clocks,
  eviction,
  wakeups,
  lock,
];

/**
 * Turns the findings into checks and a verdict: `fail` for what breaks locks or the configuration
 * (a node unreachable or misconfigured, scripts that do not run, one database twice, no quorum within
 * nodeTimeout, a failed trial lock), `warn` for what weakens them (a slow node, clocks far apart,
 * eviction on), `ok` otherwise.
 */
export function judge(
  health: NodeHealth[],
  quorum: number,
  o: Judged,
  written: Set<number>,
  trial: Trial | undefined,
): DoctorReport {
  const up = health.filter((h) => h.reachable);
  const findings: Findings = { health, up, quorum, o, written, trial };
  const checks = CHECKS.flatMap((check) => check(findings) ?? []);
  const expected = expectedLatency(health, quorum);
  const failed = checks.filter((c) => c.status === "fail");
  const warned = checks.filter((c) => c.status === "warn");
  const warnings =
    warned.length > 0 ? ` with ${plural(warned.length, "warning")} (${warned.map((c) => c.name).join(", ")})` : "";
  const summary = `${up.length} independent nodes, quorum ${quorum}, a lock takes about ${fmt(expected ?? 0)} ms`;
  const verdict = failed.length > 0 ? `FAIL: ${failed.map((c) => c.name).join(", ")}` : `OK${warnings}: ${summary}`;
  return {
    ok: failed.length === 0,
    verdict,
    quorum,
    nodes: health,
    checks,
    expectedLockLatencyMs: expected,
    clockSpreadMs: clockSpread(up),
    driftAllowanceMs: driftAllowance(o.ttl, o.driftFactor),
  };
}

function ordinal(n: number): string {
  const teen = n % 100 >= 11 && n % 100 <= 13;
  return `${n}${teen ? "th" : (["th", "st", "nd", "rd"][n % 10] ?? "th")}`;
}

function fmt(ms: number): string {
  return ms >= 100 ? String(Math.round(ms)) : ms.toFixed(1);
}
