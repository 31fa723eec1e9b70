// The chaos log: one JSON record per line, written by the orchestrator, read by the checker.
import { monitorEventLoopDelay } from "node:perf_hooks";

/** The shared clock of every process and thread of a run: epoch ms with sub-ms precision. */
export const sharedNow = (): number => performance.timeOrigin + performance.now();

/**
 * A protected resource and how many holders it may have at once: 1 for a mutex (Redlock), more for
 * a semaphore. The checker judges every resource against its own limit.
 */
export interface ResourceSpec {
  name: string;
  limit: number;
  /** A read-write lock: any number of readers, or one writer alone (`limit` is 1: one writer). */
  readWrite?: boolean;
}

/** The resource of logs written before resources were named (one mutex). */
export const DEFAULT_RESOURCE: ResourceSpec = { name: "chaos:resource", limit: 1 };

export interface StartRecord {
  type: "start";
  seed: number;
  unsafeRestart: boolean;
  clients: number;
  ttl: number;
  at: number;
  /** Lock nodes (default 5). */
  nodes?: number;
  /** Default: one mutex, {@link DEFAULT_RESOURCE}. */
  resources?: ResourceSpec[];
  /** How long after a crashed holder's section began its lock must be taken again: ttl + this (default 1000). */
  freeSlackMs?: number;
  /** The semaphore resource was guarded by the naive per-node counting semaphore (its negative control). */
  naiveSemaphore?: boolean;
  /** The read-write resource was guarded by the naive reader-counting read-write lock (its negative control). */
  naiveRw?: boolean;
}

/**
 * Some lock nodes that could grant nothing to some clients from `from` to `to` (a solid partition, or a
 * node failing every request): their requests were dropped or refused, never run. `clients: "all"`:
 * for everybody.
 */
export interface Cut {
  clients: number[] | "all";
  nodes: number[];
  from: number;
  to: number;
}

export interface FaultRecord {
  type: "fault";
  kind: FaultKind;
  target: string;
  at: number;
  until: number;
  /** Partitions and the targeted nemesis: who lost which nodes, when. */
  cuts?: Cut[];
  /** The targeted nemesis: whether it found a holder on exactly a quorum and crashed one of its nodes. */
  struck?: boolean;
  /**
   * semaphore-windows: the most permits the nodes held at one look (over TCP), each as the nodes that
   * held it, e.g. [[0,1,2],[1,2,3]]. What the scenario saw, for the reader; the checker judges the sections.
   */
  heldOn?: number[][];
  /** Human-readable: what happened (never a lock value). */
  detail?: string;
}

export type FaultKind =
  | "kill-restart"
  | "pause"
  | "latency"
  | "hang"
  | "http-500"
  | "http-503"
  | "garbage"
  | "drop-wakeups"
  | "client-stall"
  | "partition-split"
  | "partition-minority"
  | "partition-flap"
  | "quorum-crash"
  | "semaphore-windows";

/**
 * A client has just acquired a lock or a permit: written as it enters its critical section (so a crash
 * cannot hide it).
 */
export interface EnterRecord {
  type: "enter";
  /** Unique per section: client.incarnation.sequence. */
  id: string;
  client: number;
  resource?: string;
  /** The lock's fencing token; absent for a semaphore's permit (permits have none). */
  fence?: string;
  /** A permit of the sound semaphore: the slot it holds. */
  slot?: number;
  /** A read-write lock's section: a reader's or the writer's. */
  mode?: "read" | "write";
  /** When the client called acquire (every attempt of this acquisition began after it). */
  acquireCalled: number;
  /** When acquire returned. */
  start: number;
  /** start + the lock's validity at that moment. */
  validityEnd: number;
  /** The targeted nemesis asked for a long section: it works at least this long (still within validity). */
  holdMs?: number;
}

/**
 * One critical section: acquired, read the counter through the fence, worked (or stalled), wrote, released.
 * A permit's section only works (or stalls): no fence, no counter (`readAccepted` false, `readDone` 0, `read` null).
 */
export interface CriticalSectionRecord {
  type: "cs";
  /** As in the section's {@link EnterRecord}. */
  id?: string;
  client: number;
  resource?: string;
  /** Absent for a permit. */
  fence?: string;
  /** A permit of the sound semaphore: the slot it held. */
  slot?: number;
  /** A read-write lock's section: a reader's or the writer's. */
  mode?: "read" | "write";
  acquireCalled?: number;
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

/** A client (worker thread) was terminated; a section it had entered and not finished ends here. */
export interface CrashRecord {
  type: "crash";
  client: number;
  /** Just before the termination began. */
  at: number;
  reason: "nemesis" | "random" | "wind-down";
}

export interface MissRecord {
  type: "miss";
  client: number;
  /** The resource it contended for (logs before this field: unknown). */
  resource?: string;
  at: number;
  /** The error's name. */
  reason: string;
  /**
   * For a `LockAcquisitionError`: its reason, its attempt count and its last attempts' votes, one letter per node
   * (`g` granted, `d<position>/<pttl>` denied, `e(<cause>)` error, `u` unanswered), to read why a resource stayed idle.
   */
  detail?: string;
}

/**
 * A client became free to contend (`running`: started, started again, let go) or was held back by a targeted scenario
 * (`paused`); a crash record marks it down. The liveness report leaves out the time no client of a resource could run.
 */
export interface ClientStateRecord {
  type: "client-state";
  client: number;
  at: number;
  state: "running" | "paused";
}

/**
 * A thread of the bed could not run its event loop for `maxMs` (the most delay in the second before `at`, when over
 * {@link STALL_REPORTED_MS}): `client` for a client's thread, none for the main thread, which runs the five bridges.
 * The liveness report sets the stretches with no section against them: a bed that stalls times out on every node.
 */
export interface StallRecord {
  type: "stall";
  client?: number;
  at: number;
  maxMs: number;
}

/** A thread's event-loop delay over this is logged as a {@link StallRecord} (ms). */
export const STALL_REPORTED_MS = 250;

/**
 * Reports, once a second, the longest event-loop delay of this thread over the past second when it passed
 * {@link STALL_REPORTED_MS}. Returns a function that stops it.
 * @example
 * ```ts
 * const stop = watchStalls((record) => write(record));
 * ```
 */
export function watchStalls(report: (record: StallRecord) => void, client?: number): () => void {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const timer = setInterval(() => {
    const maxMs = delay.max / 1e6;
    delay.reset();
    if (maxMs > STALL_REPORTED_MS)
      report({ type: "stall", ...(client === undefined ? {} : { client }), at: sharedNow(), maxMs: Math.round(maxMs) });
  }, 1_000);
  timer.unref();
  return () => {
    clearInterval(timer);
    delay.disable();
  };
}

/** The clients were told to stop: the run winds down from here. */
export interface StopRecord {
  type: "stop";
  at: number;
}

export interface FinalRecord {
  type: "final";
  at: number;
  /** The first resource's protected counter in the store at the end. */
  counter: number;
  /** Every mutex resource's counter, by resource name. */
  counters?: Record<string, number>;
}

export type ChaosRecord =
  | StartRecord
  | FaultRecord
  | EnterRecord
  | CriticalSectionRecord
  | CrashRecord
  | MissRecord
  | ClientStateRecord
  | StallRecord
  | StopRecord
  | FinalRecord;
