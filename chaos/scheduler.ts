// The random fault scheduler: for one episode, a seeded fault every 0.3–0.9 s on nodes, links and clients.
import { sleep, type Bed } from "./bed.ts";
import { nextFault, planPartition, type PartitionKind, type PlanOptions } from "./faults.ts";
import { sharedNow } from "./records.ts";

/**
 * Injects random faults for `ms` (or until `running()` turns false), opening with the partition `opener`
 * so every episode has one. At most one fault per node at a time, at most two nodes down, one partition
 * at a time. Returns without waiting for the faults to end (see {@link Bed.drain}).
 */
export async function randomEpisode(
  bed: Bed,
  random: () => number,
  plan: PlanOptions,
  ms: number,
  opener: PartitionKind,
  running: () => boolean,
): Promise<void> {
  const end = Date.now() + ms;
  bed.track(bed.partition(planPartition(random, opener, plan)), opener);
  while (Date.now() < end && running()) {
    await sleep(300 + Math.round(random() * 600));
    const fault = nextFault(random, plan);
    if (!running()) return;
    const at = sharedNow();
    switch (fault.kind) {
      case "client-stall":
        bed.pool.send(fault.target, { stall: fault.duration });
        bed.write({
          type: "fault",
          kind: fault.kind,
          target: `client ${fault.target}`,
          at,
          until: at + fault.duration,
        });
        continue;
      case "client-crash":
        bed.track(crashAndRestart(bed, fault.target, fault.duration), "client crash");
        continue;
      case "partition-split":
      case "partition-minority":
      case "partition-flap":
        if (bed.partitioned) continue;
        bed.track(bed.partition(fault), fault.kind);
        continue;
    }
    const targets = fault.also === undefined ? [fault.target] : [fault.target, fault.also];
    const takesDown = fault.kind === "kill-restart" || fault.kind === "pause";
    const free = targets.every((node) => Date.now() >= bed.busyUntil[node] && !bed.down.has(node));
    if (!free || (takesDown && bed.down.size + targets.length > 2)) continue;
    for (const node of targets) bed.busyUntil[node] = Date.now() + fault.duration + 100;
    bed.write({ type: "fault", kind: fault.kind, target: `node ${targets.join("+")}`, at, until: at + fault.duration });
    for (const node of targets)
      bed.track(bed.nodeFault(fault.kind, node, fault.duration, random), `fault ${fault.kind}`);
  }
}

/** Terminates a client wherever it is (in a section or not) and starts it again `downMs` later. */
async function crashAndRestart(bed: Bed, client: number, downMs: number): Promise<void> {
  await bed.pool.crash(client, "random");
  await sleep(downMs);
  bed.pool.restart(client);
}
