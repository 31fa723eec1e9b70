// One set of injected faults and the gate a request passes through before it is answered: a node's
// gate (every request to a bridge) or a link's gate (one client's own route to that bridge).
import { delays, parseSpread, type LatencySpread } from "./latency-spread.ts";

/** What the bridge answers instead of a correct reply. */
export type Garbage = "html" | "text" | "json-shape" | "truncated" | "empty";

/**
 * Faults applied to data requests, in this order: cut, hang, latency, status, garbage (a subscription's
 * request passes them before its stream opens); then those of the messages on open subscription streams:
 * cut, dropMessages, messageDelayMs.
 */
export interface Faults {
  /** Added before the command runs. */
  latencyMs: number;
  /** Jitter and retransmits on top of `latencyMs`, from a seeded PRNG (a WAN); null: the latency exactly. */
  spread: LatencySpread | null;
  /** Accept and never answer until cleared; then the held requests go on (a slow network). */
  hang: boolean;
  /**
   * A partition: requests vanish. They are held unanswered until the client gives up and never run,
   * also after the cut heals (the packets were lost, not delayed). Open subscription streams stay open but
   * receive nothing meanwhile: the messages published during the cut are lost.
   */
  cut: boolean;
  /** Answer this HTTP status with a JSON error body instead of running the command. */
  status: number | null;
  /** Answer 200 with a body that is not a valid reply. */
  garbage: Garbage | null;
  /**
   * (Node-wide only.) Pass scripts with Upstash's `allow-key-locking` shebang flag to Redis unchanged, so
   * Redis rejects them (a REST proxy in front of plain Redis). Default false: accepted, as Upstash does.
   */
  rejectKeyLocking: boolean;
  /**
   * (Node-wide only; the redis-server backend.) A script with the `allow-key-locking` flag may not PUBLISH: its
   * `redis.call("PUBLISH", …)` fails as a database-wide command does, `redis.pcall` returns that error. How the
   * bridge plays a database that takes PUBLISH on its own but not from a flagged script. Default false.
   */
  refuseScriptPublish: boolean;
  /**
   * (Node-wide only.) Pause this long between two members of a `/pipeline` request, so a test can land
   * another client's command between them (Upstash's pipelines are not atomic; the bridge runs their
   * members one by one either way). Default 0: no pause.
   */
  pipelineGapMs: number;
  /**
   * Drop the next this many messages bound for subscription streams: PUBLISH still counts those streams as
   * receivers, but the message never arrives (a lost wakeup). Counted per stream (one PUBLISH to two streams
   * uses two) and down to 0 as they are dropped; a link's count applies to its streams before the node's.
   * Default 0.
   */
  dropMessages: number;
  /**
   * Each message bound for a subscription stream arrives this many ms after it was published (a link's
   * delay and the node's add up). A message waits the delay in force when it was published, so one
   * published after the delay is lowered can overtake it. Default 0.
   */
  messageDelayMs: number;
}

export const NO_FAULTS: Readonly<Faults> = Object.freeze({
  latencyMs: 0,
  spread: null,
  hang: false,
  cut: false,
  status: null,
  garbage: null,
  rejectKeyLocking: false,
  refuseScriptPublish: false,
  pipelineGapMs: 0,
  dropMessages: 0,
  messageDelayMs: 0,
});

export const GARBAGE_BODIES: Record<Garbage, { type: string; body: string }> = {
  html: { type: "text/html", body: "<html><body><h1>502 Bad Gateway</h1></body></html>" },
  text: { type: "text/plain", body: "upstream said: {not json" },
  "json-shape": { type: "application/json", body: '{"value":"OK","granted":true}' },
  truncated: { type: "application/json", body: '{"result":"T0' },
  empty: { type: "application/json", body: "" },
};

/**
 * Holds the faults of one node or link and lets requests through them.
 * @example
 * const gate = new FaultGate();
 * gate.set({ cut: true });
 * if (!(await gate.pass(signal))) return; // dropped, or the client left
 */
export class FaultGate {
  faults: Faults = { ...NO_FAULTS };
  #held = new Set<() => void>();
  #delay = delays(null);

  /**
   * Merges fault settings; clearing `hang` lets the held requests go on (those also cut stay dropped); a
   * spread restarts its PRNG.
   */
  set(patch: Partial<Faults>): Faults {
    this.faults = { ...this.faults, ...patch };
    if (patch.spread !== undefined) this.#delay = delays(patch.spread);
    if (!this.faults.hang) this.releaseHeld();
    return this.faults;
  }

  /** True when a request would go straight through (no cut, hang, latency or spread). */
  get open(): boolean {
    return !this.faults.cut && !this.faults.hang && this.faults.latencyMs <= 0 && !this.faults.spread;
  }

  /**
   * Waits out hang and latency. False when the request must not run: it was cut (now, or when its
   * wait ended) — then it is held until `gone` aborts, as a lost packet leaves its sender waiting — or
   * the client left.
   */
  async pass(gone: AbortSignal): Promise<boolean> {
    if (!this.faults.cut && this.faults.hang) await this.#hold(gone);
    const delay = this.faults.cut ? 0 : this.#delay(this.faults.latencyMs);
    if (delay > 0 && !gone.aborted) await sleep(delay, gone);
    if (this.faults.cut && !gone.aborted) await untilAborted(gone);
    return !gone.aborted;
  }

  /** Whether the next message bound for a subscription stream is dropped (`dropMessages`, which this counts down). */
  dropsMessage(): boolean {
    if (this.faults.dropMessages <= 0) return false;
    this.faults = { ...this.faults, dropMessages: this.faults.dropMessages - 1 };
    return true;
  }

  releaseHeld(): void {
    const held = [...this.#held];
    this.#held.clear();
    for (const release of held) release();
  }

  #hold(gone: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const release = () => {
        this.#held.delete(release);
        resolve();
      };
      this.#held.add(release);
      gone.addEventListener("abort", release, { once: true });
    });
  }
}

/** Validates a fault patch from the admin API. */
export function parseFaults(body: string): Partial<Faults> {
  const raw = JSON.parse(body || "{}") as Record<string, unknown>;
  const patch: Partial<Faults> = {};
  if ("latencyMs" in raw) patch.latencyMs = Number(raw.latencyMs) || 0;
  if ("spread" in raw) patch.spread = parseSpread(raw.spread);
  if ("hang" in raw) patch.hang = Boolean(raw.hang);
  if ("cut" in raw) patch.cut = Boolean(raw.cut);
  if ("status" in raw) patch.status = raw.status === null ? null : Number(raw.status);
  if ("rejectKeyLocking" in raw) patch.rejectKeyLocking = Boolean(raw.rejectKeyLocking);
  if ("refuseScriptPublish" in raw) patch.refuseScriptPublish = Boolean(raw.refuseScriptPublish);
  if ("pipelineGapMs" in raw) patch.pipelineGapMs = Math.max(0, Number(raw.pipelineGapMs) || 0);
  if ("dropMessages" in raw) patch.dropMessages = Math.max(0, Math.floor(Number(raw.dropMessages)) || 0);
  if ("messageDelayMs" in raw) patch.messageDelayMs = Math.max(0, Number(raw.messageDelayMs) || 0);
  if ("garbage" in raw) {
    if (raw.garbage !== null && !(String(raw.garbage) in GARBAGE_BODIES))
      throw new Error(`unknown garbage kind ${String(raw.garbage)}`);
    patch.garbage = raw.garbage === null ? null : (String(raw.garbage) as Garbage);
  }
  return patch;
}

function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener("abort", () => resolve(), { once: true });
  });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}
