// The chaos log: one JSON record per line, written by the orchestrator, read by the checker.

/** The shared clock of every process and thread of a run: epoch ms with sub-ms precision. */
export const sharedNow = (): number => performance.timeOrigin + performance.now();

export interface StartRecord {
  type: "start";
  seed: number;
  unsafeRestart: boolean;
  clients: number;
  ttl: number;
  at: number;
}

export interface FaultRecord {
  type: "fault";
  kind: FaultKind;
  target: string;
  at: number;
  until: number;
}

export type FaultKind = "kill-restart" | "pause" | "latency" | "hang" | "http-500" | "http-503" | "garbage" | "client-stall";

/** One critical section: acquired, read the counter through the fence, worked (or stalled), wrote, released. */
export interface CriticalSectionRecord {
  type: "cs";
  client: number;
  fence: string;
  /** When acquire returned. */
  start: number;
  /** start + the lock's validity at that moment. */
  validityEnd: number;
  readAccepted: boolean;
  /** When the fenced read returned (its token was recorded by the store before this). */
  readDone: number;
  read: number | null;
  /** When the fenced write was sent (absent when the read was refused). */
  writeSent?: number;
  writeAccepted?: boolean;
  /** When the write returned: the end of the critical section. */
  end: number;
  stalledMs: number;
  /** The store call failed: the write's outcome is unknown. */
  error?: string;
}

export interface MissRecord {
  type: "miss";
  client: number;
  at: number;
  reason: string;
}

export interface FinalRecord {
  type: "final";
  at: number;
  /** The protected counter's value in the store at the end. */
  counter: number;
}

export type ChaosRecord = StartRecord | FaultRecord | CriticalSectionRecord | MissRecord | FinalRecord;
