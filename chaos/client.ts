// One chaos client (a worker thread). A lock client acquires its resource with fencing, read-modify-writes
// the protected counter through fenced reads and writes, and releases. A semaphore client takes a permit
// (of the sound semaphore, or of the naive one: the negative control), works, and releases. Either reports
// every critical section as it enters (so a crash cannot hide it) and as it ends.
import { parentPort, workerData } from "node:worker_threads";
import { Redis } from "@upstash/redis";
import { LockAcquisitionError, Redlock, fencedRead, fencedWrite, type NodeVote } from "../src/index.ts";
import { NaiveReadWrite } from "./naive-rw.ts";
import { NaiveSemaphore } from "./naive-semaphore.ts";
import { sharedNow, watchStalls, type CriticalSectionRecord, type EnterRecord, type MissRecord } from "./records.ts";

/** What a client guards its sections with. */
export type Guard =
  /** A Redlock mutex with fencing, and the protected counter's key in the store. */
  | { kind: "lock"; counterKey: string }
  /** A permit of `redlock.semaphore(resource, limit)`, or of the naive per-node counting semaphore. */
  | { kind: "semaphore"; limit: number; naive: boolean }
  /** A read or write lock of `redlock.readWriteLock(resource)`, or of the naive reader-counting one. */
  | { kind: "rw"; mode: "read" | "write"; naive: boolean };

/** What the orchestrator hands each client. */
export interface ClientData {
  client: number;
  /** Counts the client's (re)starts: section ids stay unique across crashes. */
  incarnation: number;
  /** This client's own route to each lock node (its links), so a partition can hit it alone. */
  lockNodes: { url: string; token: string }[];
  store: { url: string; token: string };
  ttl: number;
  nodeTimeout: number;
  resource: string;
  guard: Guard;
  /** Work inside a section: between these many ms. */
  workMs: [number, number];
}

/** Messages the orchestrator sends a client. */
export interface ClientMessage {
  stop?: true;
  /** The next section sleeps this long past its validity without knowing (a GC pause, a frozen isolate). */
  stall?: number;
  /** The next section works this long (a long section, within validity); 0 takes it back. */
  holdNext?: number;
  /**
   * true: stop contending (a pending acquire is aborted through its signal; a section in progress
   * finishes normally) until false.
   */
  pause?: boolean;
}

const data = workerData as ClientData;
watchStalls((record) => parentPort!.postMessage(record), data.client);
const redlock = new Redlock(data.lockNodes, { nodeTimeout: data.nodeTimeout });
const store = new Redis({
  url: data.store.url,
  token: data.store.token,
  retry: { retries: 0 },
  enableAutoPipelining: false,
  automaticDeserialization: false,
  enableTelemetry: false,
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const [workMin, workMax] = data.workMs;

let stopping = false;
let stallNext = 0;
let holdNext = 0;
let held = false;
let pending: AbortController | undefined;
let resume = () => {};
parentPort!.on("message", (message: ClientMessage) => {
  if (message.stop) stopping = true;
  if (message.stall) stallNext = message.stall;
  if (message.holdNext !== undefined) holdNext = message.holdNext;
  if (message.pause === true) {
    held = true;
    pending?.abort();
  }
  if (message.pause === false) held = false;
  if (!held || stopping) resume();
});

/** A held lock or permit, as the loop needs it. */
interface Held {
  validityMs: number;
  fence?: string;
  slot?: number;
  release(): Promise<unknown>;
}

const guard = data.guard;
const naive =
  guard.kind === "semaphore" && guard.naive
    ? new NaiveSemaphore(data.lockNodes, data.resource, guard.limit, { nodeTimeout: data.nodeTimeout })
    : undefined;
const semaphore =
  guard.kind === "semaphore" && !guard.naive ? redlock.semaphore(data.resource, guard.limit) : undefined;
const naiveRw =
  guard.kind === "rw" && guard.naive
    ? new NaiveReadWrite(data.lockNodes, data.resource, { nodeTimeout: data.nodeTimeout })
    : undefined;
const rw = guard.kind === "rw" && !guard.naive ? redlock.readWriteLock(data.resource) : undefined;
const mode = guard.kind === "rw" ? guard.mode : undefined;
const acquireOptions = (signal: AbortSignal) => ({ retryCount: -1, maxWait: 5_000, signal });
const take = async (signal: AbortSignal): Promise<Held> => {
  if (naive) return naive.acquire(data.ttl, acquireOptions(signal));
  if (semaphore) return semaphore.acquire(data.ttl, acquireOptions(signal));
  if (naiveRw) return naiveRw.acquire(mode!, data.ttl, acquireOptions(signal));
  if (rw)
    return mode === "read"
      ? rw.acquireRead(data.ttl, acquireOptions(signal))
      : rw.acquireWrite(data.ttl, acquireOptions(signal));
  return redlock.acquire([data.resource], data.ttl, { fencing: true, ...acquireOptions(signal) });
};
/** A failed acquisition in a line of the log: its reason, attempt count and last attempts' votes. */
const missDetail = (error: LockAcquisitionError): string => {
  const vote = (v: NodeVote) =>
    v.outcome === "granted"
      ? "g"
      : v.outcome === "denied"
        ? `d${v.position ?? ""}/${v.pttl ?? ""}`
        : v.outcome === "error"
          ? `e(${v.cause.replace(/\s+/g, " ").slice(0, 40)})`
          : "u";
  const last = error.attempts.slice(-4).map((a) => `${a.attempt}:${a.votes.map(vote).join(" ")}`);
  return `${error.reason}, ${error.attempts.length} attempts; ${last.join("; ")}`;
};
/** How long a section works: spread over [workMin, workMax], reproducible from what it read (or its sequence). */
const workFor = (n: number) => workMin + Math.floor((n * 7919 + data.client * 104729) % (workMax - workMin + 1));

for (let seq = 0; !stopping; seq++) {
  while (held && !stopping) await new Promise<void>((r) => (resume = r));
  if (stopping) break;
  let lock: Held;
  const acquireCalled = sharedNow();
  const acquiring = new AbortController();
  pending = acquiring;
  try {
    lock = await take(acquiring.signal);
  } catch (error) {
    if (acquiring.signal.aborted) continue; // held back by the orchestrator: not a miss
    const miss: MissRecord = {
      type: "miss",
      client: data.client,
      resource: data.resource,
      at: sharedNow(),
      reason: (error as Error).name,
      ...(error instanceof LockAcquisitionError ? { detail: missDetail(error) } : {}),
    };
    parentPort!.postMessage(miss);
    continue;
  } finally {
    pending = undefined;
  }
  const start = sharedNow();
  const hold = holdNext;
  holdNext = 0;
  const enter: EnterRecord = {
    type: "enter",
    id: `${data.client}.${data.incarnation}.${seq}`,
    client: data.client,
    resource: data.resource,
    ...(lock.fence !== undefined ? { fence: lock.fence } : {}),
    ...(lock.slot !== undefined ? { slot: lock.slot } : {}),
    ...(mode !== undefined ? { mode } : {}),
    acquireCalled,
    start,
    validityEnd: start + lock.validityMs,
    ...(hold > 0 ? { holdMs: hold } : {}),
  };
  parentPort!.postMessage(enter);
  const record: CriticalSectionRecord = {
    ...enter,
    type: "cs",
    readAccepted: false,
    readDone: 0,
    read: null,
    end: 0,
    stalledMs: 0,
  };
  try {
    if (guard.kind === "lock") {
      const read = await fencedRead(store, guard.counterKey, lock.fence!);
      record.readDone = sharedNow();
      record.readAccepted = read.accepted;
      if (read.accepted) {
        record.read = Number(read.value ?? 0);
        record.stalledMs = stallNext;
        stallNext = 0;
        // The work; a stalled client sleeps past its validity without knowing. A held one works long on purpose.
        await sleep(record.stalledMs || Math.max(workFor(record.read), start + hold - sharedNow()));
        record.writeSent = sharedNow();
        record.writeAccepted = await fencedWrite(store, guard.counterKey, String(record.read + 1), lock.fence!);
      }
    } else {
      // A permit (or a read or write lock) guards no counter here: the checker judges who was valid at once.
      record.stalledMs = stallNext;
      stallNext = 0;
      await sleep(record.stalledMs || Math.max(workFor(seq), start + hold - sharedNow()));
    }
  } catch (error) {
    record.error = `${(error as Error).name}: ${(error as Error).message}`.slice(0, 200);
  }
  record.end = sharedNow();
  parentPort!.postMessage(record);
  await lock.release().catch(() => null);
}
process.exit(0);
