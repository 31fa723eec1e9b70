// The doctor's requests: one Upstash REST call at a time, measured, with secret-free answers; and what
// each node says about round trips, clocks, scripts, eviction and the other nodes' probe keys.
import { anySignal, systemClock } from "./clock.ts";
import { LockAcquisitionError } from "./errors.ts";
import type { NodeConfig } from "./node.ts";
import { Redlock } from "./redlock.ts";
import { ACQUIRE, EXTEND, FENCE, KEY_LOCKING, RELEASE, scriptSha, withoutKeyLocking } from "./scripts.ts";
import type { NodeHealth } from "./doctor.ts";

/** Keys the doctor writes start with this; they expire after {@link PROBE_TTL_MS} if a cleanup fails. */
export const PROBE_PREFIX = "edge-redlock-doctor:";
const PROBE_TTL_MS = 60_000;
/** A read-only script: scripting works at all. */
const EXISTS_SCRIPT = 'return redis.call("EXISTS", KEYS[1])';
/** Upstash locks only the script's KEYS with this flag; plain Redis 7 rejects it. */
/** The scripts a lock runs: each must load under the SHA the library computes (EVALSHA). */
const LOCK_SCRIPTS = [ACQUIRE, RELEASE, EXTEND, FENCE];

/** One request's outcome; `error` never holds a URL or token. */
export type Reply = { ok: true; result: unknown; ms: number } | { ok: false; error: string; status?: number; ms: number };

/** Sends a command (`POST /`) or a list of them (`path` `/pipeline`) to one node. */
export type Call = (command: unknown[], path?: string) => Promise<Reply>;

/**
 * A {@link Call} to `node`, each request bounded by `timeout` ms and cut when `signal` aborts.
 * @example
 * const reply = await caller(node, 3_000)(["TIME"]);
 */
export function caller(node: NodeConfig, timeout: number, signal?: AbortSignal): Call {
  return (command, path = "") => rest(node, command, path, timeout, signal);
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

/**
 * `samples` + 1 TIME requests, one after another: the first (it opens the connection) apart, p50 and p99
 * of the rest, and the clock offset from the fastest. Any failed request makes the node unreachable:
 * a node that fails one request in a handful is not one to lock on.
 * @example
 * Object.assign(health, await measure(call, 4));
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
  const times = taken.slice(1).map((s) => s.ms).sort((a, b) => a - b);
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
 * @example
 * const { health, probed } = await inspect(call, probeKey, run);
 */
export async function inspect(call: Call, probeKey: string, run: string): Promise<{ health: Partial<NodeHealth>; probed: boolean }> {
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
  if (!parts) return { health: { scripts: "failed", scriptError: reply.ok ? "the pipeline answered something unexpected" : reply.error }, probed: false };
  const loads = parts.slice(0, LOCK_SCRIPTS.length);
  const [plain, flagged, info, set] = parts.slice(LOCK_SCRIPTS.length);
  const health: Partial<NodeHealth> = { eviction: info.error === undefined ? evictionPolicy(info.result) : null };
  const badLoad = loads.findIndex((p, k) => p.error !== undefined || p.result !== shas[k]);
  if (badLoad >= 0) {
    const why = loads[badLoad].error ?? "answered another SHA than the library computes (EVALSHA would miss)";
    Object.assign(health, { scripts: "failed", scriptError: `SCRIPT LOAD of ${LOCK_SCRIPTS[badLoad].name}: ${why}` });
  } else if (plain.error !== undefined || !isInteger(plain.result)) {
    Object.assign(health, { scripts: "failed", scriptError: `EVAL: ${plain.error ?? "answered something unexpected"}` });
  } else {
    Object.assign(health, { scripts: "ok", keyLocking: flagged.error === undefined && isInteger(flagged.result) ? "accepted" : "rejected" });
  }
  return { health, probed: set.error === undefined };
}

/**
 * Reads every probe key on one node and deletes them there, in one pipeline. Resolves with the
 * indexes of the probes found, its own excepted: each is a node that is this same database.
 * @example
 * const twins = await probesSeen(call, keys, run, 0);
 */
export async function probesSeen(call: Call, keys: string[], run: string, self: number): Promise<number[]> {
  const reply = await call([["MGET", ...keys], ["DEL", ...keys]], "/pipeline");
  const values = (reply.ok ? pipelineParts(reply.result, 2) : undefined)?.[0].result;
  if (!Array.isArray(values)) return [];
  return values.flatMap((value, i) => (i !== self && value === run ? [i] : []));
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

/** How the trial lock went. */
export interface Trial {
  acquired: boolean;
  ms: number;
  message: string;
}

/**
 * Takes and releases one lock the way the library does, on every configured node.
 * @example
 * const trial = await trialLock(nodes, "edge-redlock-doctor:1a2b:lock", { ttl: 10_000, nodeTimeout: 500, driftFactor: 0.01 });
 */
export async function trialLock(nodes: readonly NodeConfig[], key: string, o: { ttl: number; nodeTimeout: number; driftFactor: number; signal?: AbortSignal }): Promise<Trial> {
  let redlock: Redlock;
  try {
    redlock = new Redlock(nodes, { retryCount: 0, nodeTimeout: o.nodeTimeout, driftFactor: o.driftFactor });
  } catch (error) {
    return { acquired: false, ms: 0, message: `not tried: ${(error as Error).message}` };
  }
  const started = systemClock.now();
  try {
    const lock = await redlock.acquire([key], Math.max(o.ttl, o.nodeTimeout + 1), { signal: o.signal });
    const ms = systemClock.now() - started;
    const granted = lock.attempts === 1 ? "" : ` after ${lock.attempts} attempts`;
    await (await lock.release()).pending;
    // release() resolves once a quorum answered: after its pending work, count what is really left.
    const seen = (await redlock.inspect([key])).nodes.filter((n) => n.error === undefined);
    const left = seen.filter((n) => n.held).length;
    const gone = left === 0 ? `released on every node that answers (${seen.length} of ${nodes.length})` : `released, but still set on ${left} of ${nodes.length} nodes (it expires with its ttl)`;
    return { acquired: true, ms, message: `a trial lock was acquired in ${ms >= 100 ? Math.round(ms) : ms.toFixed(1)} ms${granted} and ${gone}` };
  } catch (error) {
    if (error instanceof LockAcquisitionError) {
      const t = error.attempts[error.attempts.length - 1];
      return { acquired: false, ms: systemClock.now() - started, message: `a trial lock failed (${error.reason}: ${t.granted} granted, ${t.denied} denied, ${t.errors} errors)` };
    }
    throw error;
  }
}

