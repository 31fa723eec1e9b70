// The chaos test bed of one run: the lock nodes, the clients' links, and the faults that can be applied to them.
import type { Cluster } from "../dev/cluster.ts";
import type { CutGroup, PlannedFault } from "./faults.ts";
import type { ClientPool } from "./pool.ts";
import { sharedNow, type ChaosRecord, type Cut, type FaultKind } from "./records.ts";

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

/** A client's link name at every node. */
export const linkName = (client: number) => `client-${client}`;

/**
 * The bed: what the scheduler and the nemeses share. `down` and `busyUntil` keep node faults from
 * piling up (at most two nodes down, one fault per node at a time); `pending` lets a scenario wait
 * until every fault in flight has ended.
 */
export class Bed {
  readonly cluster: Cluster;
  readonly pool: ClientPool;
  readonly nodes: number;
  readonly ttl: number;
  readonly unsafeRestart: boolean;
  readonly write: (record: ChaosRecord) => void;
  readonly down = new Set<number>();
  readonly busyUntil: number[];
  partitioned = false;
  #pending = new Set<Promise<void>>();
  /** When the last logged fault's window ends (a client stall's window outlasts its message). */
  #quietAt = 0;

  constructor(options: {
    cluster: Cluster;
    pool: ClientPool;
    nodes: number;
    ttl: number;
    unsafeRestart: boolean;
    write: (record: ChaosRecord) => void;
  }) {
    this.cluster = options.cluster;
    this.pool = options.pool;
    this.nodes = options.nodes;
    this.ttl = options.ttl;
    this.unsafeRestart = options.unsafeRestart;
    this.write = (record) => {
      if (record.type === "fault") this.#quietAt = Math.max(this.#quietAt, record.until);
      options.write(record);
    };
    this.busyUntil = new Array(options.nodes).fill(0);
  }

  /** Runs `work` in the background; {@link Bed.drain} waits for it. */
  track(work: Promise<void>, what: string): void {
    const tracked = work.catch((e: Error) => void process.stderr.write(`${what} failed: ${e.message}\n`));
    this.#pending.add(tracked);
    void tracked.then(() => this.#pending.delete(tracked));
  }

  /** Waits until every fault in flight has ended. */
  async drain(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all([...this.#pending]);
  }

  /** Waits until every fault in flight has ended and every logged fault's window is over. */
  async quiet(): Promise<void> {
    await this.drain();
    await sleep(this.#quietAt - sharedNow() + 10);
  }

  /** Applies one node fault for `duration` ms (kill-restart: down that long, then back empty). */
  async nodeFault(kind: FaultKind, node: number, duration: number, random: () => number): Promise<void> {
    const bridge = this.cluster.bridges[node];
    const server = this.cluster.servers[node];
    switch (kind) {
      case "kill-restart":
        this.down.add(node);
        await server.kill();
        await sleep(duration);
        await server.start();
        await bridge.ready();
        this.down.delete(node);
        return;
      case "pause":
        this.down.add(node);
        server.pause();
        await sleep(duration);
        server.resume();
        this.down.delete(node);
        return;
      case "latency":
        bridge.setFaults({ latencyMs: 100 + Math.round(random() * 300) });
        await sleep(duration);
        bridge.setFaults({ latencyMs: 0 });
        return;
      case "hang":
        bridge.setFaults({ hang: true });
        await sleep(duration);
        bridge.setFaults({ hang: false });
        return;
      case "http-500":
      case "http-503":
        bridge.setFaults({ status: kind === "http-500" ? 500 : 503 });
        await sleep(duration);
        bridge.setFaults({ status: null });
        return;
      case "drop-wakeups":
        // The node's Pub/Sub messages are lost meanwhile: waiters must be served by their fallback.
        bridge.setFaults({ dropMessages: 1_000_000 });
        await sleep(duration);
        bridge.setFaults({ dropMessages: 0 });
        return;
      case "garbage": {
        const kinds = ["html", "text", "json-shape", "truncated", "empty"] as const;
        bridge.setFaults({ garbage: kinds[Math.floor(random() * kinds.length)] });
        await sleep(duration);
        bridge.setFaults({ garbage: null });
        return;
      }
      default:
        throw new Error(`not a node fault: ${kind}`);
    }
  }

  /**
   * Cuts some clients off some nodes (their links drop every request) for `fault.duration` ms; a flap
   * cuts and heals every `fault.period` ms. Logged when it ends, with the times the cuts really held.
   */
  async partition(fault: PlannedFault): Promise<void> {
    const groups = fault.cuts ?? [];
    this.partitioned = true;
    const began = sharedNow();
    const cuts: Cut[] = [];
    try {
      if (fault.period === undefined) {
        this.cut(groups, true);
        const from = sharedNow();
        await sleep(fault.duration);
        cuts.push(...groups.map((g) => ({ clients: g.clients, nodes: g.nodes, from, to: sharedNow() })));
        this.cut(groups, false);
      } else {
        // A flapping link: no spell is long enough to claim a solid cut, so none is logged as one.
        for (let on = true; sharedNow() - began < fault.duration; on = !on) {
          this.cut(groups, on);
          await sleep(fault.period);
        }
        this.cut(groups, false);
      }
    } finally {
      this.partitioned = false;
    }
    this.write({
      type: "fault",
      kind: fault.kind as FaultKind,
      target: describeCuts(groups),
      at: began,
      until: sharedNow(),
      cuts,
    });
  }

  /** Cuts (or heals) each group's clients' links to the group's nodes; a scenario logs the cuts itself. */
  cut(groups: CutGroup[], cut: boolean): void {
    for (const group of groups) {
      for (const client of group.clients)
        for (const node of group.nodes) this.cluster.bridges[node].setLinkFaults(linkName(client), { cut });
    }
  }
}

/** "clients 0,3 ↛ nodes 1+2; clients 1,2 ↛ nodes 4" */
export function describeCuts(groups: CutGroup[]): string {
  return groups.map((g) => `clients ${g.clients.join(",")} ↛ nodes ${g.nodes.join("+")}`).join("; ");
}
