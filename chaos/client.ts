// One chaos client (a worker thread): acquire the shared resource with fencing, read-modify-write the
// protected counter through fenced reads and writes, release; report every critical section.
import { parentPort, workerData } from "node:worker_threads";
import { Redis } from "@upstash/redis";
import { Redlock, fencedRead, fencedWrite } from "../src/index.ts";
import { sharedNow, type CriticalSectionRecord, type MissRecord } from "./records.ts";
import type { ClusterNode } from "../dev/cluster.ts";

interface ClientData {
  client: number;
  lockNodes: ClusterNode[];
  store: ClusterNode;
  ttl: number;
  resource: string;
  counterKey: string;
}

const data = workerData as ClientData;
const redlock = new Redlock(data.lockNodes, { nodeTimeout: 150 });
const store = new Redis({ url: data.store.url, token: data.store.token, retry: { retries: 0 }, enableAutoPipelining: false, automaticDeserialization: false, enableTelemetry: false });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let stopping = false;
let stallNext = 0;
parentPort!.on("message", (message: { stop?: true; stall?: number }) => {
  if (message.stop) stopping = true;
  if (message.stall) stallNext = message.stall;
});

while (!stopping) {
  let lock;
  try {
    lock = await redlock.acquire([data.resource], data.ttl, { fencing: true, retryCount: -1, maxWait: 5_000 });
  } catch (error) {
    const miss: MissRecord = { type: "miss", client: data.client, at: sharedNow(), reason: (error as Error).name };
    parentPort!.postMessage(miss);
    continue;
  }
  const start = sharedNow();
  const record: CriticalSectionRecord = {
    type: "cs",
    client: data.client,
    fence: lock.fence!,
    start,
    validityEnd: start + lock.validityMs,
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
      // The work; a stalled client (GC pause, frozen isolate) sleeps past its validity without knowing.
      await sleep(record.stalledMs || 100 + Math.floor((record.read * 7919 + data.client * 104729) % 300));
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
