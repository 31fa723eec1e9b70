// What each node says about round trips, clocks, scripts, eviction and the other nodes' probe keys.
import { parseInteger } from "../scripts/replies.ts";
import { KEY_LOCKING, scriptSha, withoutKeyLocking } from "../scripts/script.ts";
import { systemClock } from "../support/clock.ts";
import type { Call } from "./rest.ts";
import { judgeTrials, trialCommands, trialKeys, trialScripts } from "./script-trials.ts";
import type { NodeHealth } from "./types.ts";

export { caller, type Call, type Reply } from "./rest.ts";

/** Keys the doctor writes start with this; they expire after {@link PROBE_TTL_MS} if a cleanup fails. */
export const PROBE_PREFIX = "edge-redlock-doctor:";
const PROBE_TTL_MS = 60_000;
/** A read-only script: scripting works at all. */
export const EXISTS_SCRIPT = 'return redis.call("EXISTS", KEYS[1])';
/** Every script the library may send (the trials' list): each must load under the SHA the library computes. */
const LOCK_SCRIPTS = trialScripts();

/**
 * `samples` + 1 TIME requests, one after another: the first (it opens the connection) apart, p50 and p99
 * of the rest, and the clock offset from the fastest. Any failed request makes the node unreachable:
 * a node that fails one request in a handful is not one to lock on.
 */
export async function measure(call: Call, samples: number): Promise<Partial<NodeHealth>> {
  const taken: { ms: number; offset: number }[] = [];
  for (let s = 0; s <= samples; s++) {
    const sentAt = systemClock.epoch();
    const reply = await call(["TIME"]);
    const offset = reply.ok ? clockOffset(reply.result, sentAt, systemClock.epoch()) : undefined;
    if (!reply.ok || offset === undefined) {
      const why = reply.ok ? "TIME answered something unexpected" : reply.error;
      return {
        reachable: false,
        error: s === 0 ? why : `request ${s + 1} of ${samples + 1}: ${why}`,
        ...(!reply.ok && reply.status !== undefined ? { httpStatus: reply.status } : {}),
      };
    }
    taken.push({ ms: reply.ms, offset });
  }
  const times = taken
    .slice(1)
    .map((s) => s.ms)
    .sort((a, b) => a - b);
  const fastest = taken.reduce((a, b) => (b.ms < a.ms ? b : a));
  return {
    reachable: true,
    firstMs: taken[0].ms,
    p50Ms: percentile(times, 0.5),
    p99Ms: percentile(times, 0.99),
    // The node's clock is somewhere within that round trip: its midpoint, ± half of it.
    clockOffsetMs: fastest.offset,
    clockUncertaintyMs: fastest.ms / 2,
  };
}

/**
 * One pipeline: SCRIPT LOAD of the lock's scripts without the key-locking flag, as any Redis takes them
 * (each must answer the SHA the library computes), a plain EVAL, the same EVAL with Upstash's
 * key-locking flag (accepted, or the library falls back to the loaded scripts), INFO memory (eviction),
 * and SET of this node's probe key. `probed` says whether the probe was written.
 */
export async function inspect(
  call: Call,
  probeKey: string,
  run: string,
): Promise<{ health: Partial<NodeHealth>; probed: boolean }> {
  const sources = LOCK_SCRIPTS.map((s) => withoutKeyLocking(s.lua));
  const shas = await Promise.all(sources.map(scriptSha));
  const reply = await call(
    [
      ...sources.map((lua) => ["SCRIPT", "LOAD", lua]),
      ["EVAL", EXISTS_SCRIPT, "1", probeKey],
      ["EVAL", KEY_LOCKING + EXISTS_SCRIPT, "1", probeKey],
      ["INFO", "memory"],
      ["SET", probeKey, run, "PX", String(PROBE_TTL_MS)],
    ],
    "/pipeline",
  );
  const parts = reply.ok ? pipelineParts(reply.result, LOCK_SCRIPTS.length + 4) : undefined;
  if (!parts)
    return {
      health: { scripts: "failed", scriptError: reply.ok ? "the pipeline answered something unexpected" : reply.error },
      probed: false,
    };
  const loads = parts.slice(0, LOCK_SCRIPTS.length);
  const [plain, flagged, info, set] = parts.slice(LOCK_SCRIPTS.length);
  const health: Partial<NodeHealth> = { eviction: info.error === undefined ? evictionPolicy(info.result) : null };
  const badLoad = loads.findIndex((p, k) => p.error !== undefined || p.result !== shas[k]);
  if (badLoad >= 0) {
    const why = loads[badLoad].error ?? "answered another SHA than the library computes (EVALSHA would miss)";
    Object.assign(health, { scripts: "failed", scriptError: `SCRIPT LOAD of ${LOCK_SCRIPTS[badLoad].name}: ${why}` });
  } else if (plain.error !== undefined || parseInteger(plain.result) === undefined) {
    Object.assign(health, {
      scripts: "failed",
      scriptError: `EVAL: ${plain.error ?? "answered something unexpected"}`,
    });
  } else {
    Object.assign(health, {
      scripts: "ok",
      keyLocking: flagged.error === undefined && parseInteger(flagged.result) !== undefined ? "accepted" : "rejected",
    });
  }
  return { health, probed: set.error === undefined };
}

/**
 * Reads every probe key on one node and deletes them there, then runs every script the library sends to a lock
 * node (the flagged form where `flagged`, as the library would), all in one pipeline. Resolves with the
 * indexes of the probes found, its own excepted (each is a node that is this same database), and what
 * went wrong with the scripts, if anything.
 */
export async function probesAndScripts(
  call: Call,
  keys: string[],
  run: string,
  self: number,
  flagged: boolean,
): Promise<{ twins: number[]; scriptError?: string }> {
  const trials = trialCommands(trialKeys(keys[self]), run, String(PROBE_TTL_MS), flagged);
  const reply = await call([["MGET", ...keys], ["DEL", ...keys], ...trials], "/pipeline");
  const parts = reply.ok ? pipelineParts(reply.result, 2 + trials.length) : undefined;
  if (!parts)
    return { twins: [], scriptError: `the scripts' pipeline: ${reply.ok ? "an unexpected reply" : reply.error}` };
  const values = parts[0].result;
  const twins = Array.isArray(values) ? values.flatMap((value, i) => (i !== self && value === run ? [i] : [])) : [];
  const scriptError = judgeTrials(parts.slice(2));
  return scriptError === undefined ? { twins } : { twins, scriptError };
}

/** The replies of a pipeline, each `{ result }` or `{ error }`, or undefined when the shape is wrong. */
function pipelineParts(result: unknown, count: number): { result?: unknown; error?: string }[] | undefined {
  if (!Array.isArray(result) || result.length !== count) return undefined;
  const parts = result.map((p) =>
    typeof p === "object" && p !== null ? (p as { result?: unknown; error?: unknown }) : undefined,
  );
  if (parts.some((p) => p === undefined)) return undefined;
  return parts.map((p) => (typeof p!.error === "string" ? { error: p!.error } : { result: p!.result }));
}

function clockOffset(result: unknown, sentAt: number, receivedAt: number): number | undefined {
  if (!Array.isArray(result) || result.length !== 2) return undefined;
  const [seconds, micros] = result.map(Number);
  if (!Number.isFinite(seconds) || !Number.isFinite(micros)) return undefined;
  return seconds * 1000 + micros / 1000 - (sentAt + receivedAt) / 2;
}

function evictionPolicy(info: unknown): string | null {
  if (typeof info !== "string") return null;
  return /^maxmemory_policy:(\S+)/m.exec(info)?.[1] ?? null;
}

/** Nearest-rank percentile of sorted values. */
function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))];
}
