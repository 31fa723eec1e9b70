// The doctor's requests: one Upstash REST call at a time, measured, with secret-free answers.
import { followSignals, systemClock } from "../support/clock.ts";
import { clip, redact } from "../support/redact.ts";
import type { NodeConfig } from "../node/node.ts";

/** One request's outcome; `error` never holds a URL or token. */
export type Reply =
  | { ok: true; result: unknown; ms: number }
  | { ok: false; error: string; status?: number; ms: number };

/** Sends a command (`POST /`) or a list of them (`path` `/pipeline`) to one node. */
export type Call = (command: unknown[], path?: string) => Promise<Reply>;

/**
 * A {@link Call} to `node`, each request bounded by `timeout` ms and cut when `signal` aborts.
 */
export function caller(node: NodeConfig, timeout: number, signal?: AbortSignal): Call {
  return (command, path = "") => rest(node, command, path, timeout, signal);
}

/** One Upstash REST request: a command on `POST /`, or a list of them on `POST /pipeline`. */
async function rest(
  node: NodeConfig,
  body: unknown[],
  path: string,
  timeout: number,
  signal: AbortSignal | undefined,
): Promise<Reply> {
  const deadline = systemClock.timeout(timeout);
  // Where the runtime has no AbortSignal.any, disposed once the request is over: that drops the listener on `signal`.
  const followed = followSignals([deadline.signal, signal]);
  const started = systemClock.now();
  const ms = () => systemClock.now() - started;
  const secrets = [node.token, node.url];
  try {
    const response = await fetch(node.url.replace(/\/+$/, "") + (path || "/"), {
      method: "POST",
      headers: { authorization: `Bearer ${node.token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: followed.signal,
    });
    const text = await response.text();
    const elapsed = ms();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return {
        ok: false,
        error: `HTTP ${response.status}: the reply is not JSON`,
        status: response.ok ? undefined : response.status,
        ms: elapsed,
      };
    }
    const error = (json as { error?: unknown } | null)?.error;
    if (!response.ok) {
      const said = typeof error === "string" ? `: ${clip(redact(error, secrets))}` : "";
      return {
        ok: false,
        error: `HTTP ${response.status}${said}${response.status === 401 ? " (the token was refused)" : ""}`,
        status: response.status,
        ms: elapsed,
      };
    }
    if (typeof error === "string") return { ok: false, error: clip(redact(error, secrets)), ms: elapsed };
    if (Array.isArray(json)) return { ok: true, result: json, ms: elapsed };
    if (json === null || typeof json !== "object" || !("result" in json))
      return { ok: false, error: "the reply has no result", ms: elapsed };
    return { ok: true, result: (json as { result: unknown }).result, ms: elapsed };
  } catch (error) {
    if (deadline.signal.aborted) return { ok: false, error: `no answer within ${timeout} ms`, ms: ms() };
    if (signal?.aborted) throw signal.reason;
    const err = error as { name?: string; message?: string; cause?: { code?: string; message?: string } };
    const detail = err?.cause?.code ?? err?.cause?.message;
    return {
      ok: false,
      error: clip(redact(`network: ${err?.message ?? String(error)}${detail ? ` (${detail})` : ""}`, secrets)),
      ms: ms(),
    };
  } finally {
    deadline.clear();
    followed.dispose();
  }
}
