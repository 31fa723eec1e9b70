// One chaos client (a worker thread): acquire its resource with fencing, read-modify-write the
// protected counter through fenced reads and writes, release; report every critical section as it
// enters (so a crash cannot hide it) and as it ends.
import { parentPort, workerData } from "node:worker_threads";
import { Redis } from "@upstash/redis";
import { Redlock, fencedRead, fencedWrite } from "../src/index.ts";
import { sharedNow, type CriticalSectionRecord, type EnterRecord, type MissRecord } from "./records.ts";

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
  counterKey: string;
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
const redlock = new Redlock(data.lockNodes, { nodeTimeout: data.nodeTimeout });
const store = new Redis({ url: data.store.url, token: data.store.token, retry: { retries: 0 }, enableAutoPipelining: false, automaticDeserialization: false, enableTelemetry: false });
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

for (let seq = 0; !stopping; seq++) {
  while (held && !stopping) await new Promise<void>((r) => (resume = r));
  if (stopping) break;
  let lock;
  const acquireCalled = sharedNow();
  const acquiring = (pending = new AbortController());
  try {
    lock = await redlock.acquire([data.resource], data.ttl, { fencing: true, retryCount: -1, maxWait: 5_000, signal: acquiring.signal });
  } catch (error) {
    if (acquiring.signal.aborted) continue; // held back by the orchestrator: not a miss
    const miss: MissRecord = { type: "miss", client: data.client, at: sharedNow(), reason: (error as Error).name };
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
    fence: lock.fence!,
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
    const read = await fencedRead(store, data.counterKey, lock.fence!);
    record.readDone = sharedNow();
    record.readAccepted = read.accepted;
    if (read.accepted) {
      record.read = Number(read.value ?? 0);
      record.stalledMs = stallNext;
      stallNext = 0;
      const work = workMin + Math.floor((record.read * 7919 + data.client * 104729) % (workMax - workMin + 1));
      // The work; a stalled client sleeps past its validity without knowing. A held one works long on purpose.
      await sleep(record.stalledMs || Math.max(work, start + hold - sharedNow()));
      record.writeSent = sharedNow();
      record.writeAccepted = await fencedWrite(store, data.counterKey, String(record.read + 1), lock.fence!);
    }
  } catch (error) {
    record.error = `${(error as Error).name}: ${(error as Error).message}`.slice(0, 200);
  }
  record.end = sharedNow();
  parentPort!.postMessage(record);
  await lock.release().catch(() => null);
}
process.exit(0);
