// What the simulator's unit tests start from: five simulated nodes on a virtual clock and a Redlock over them, and
// two looks at the nodes a fair test needs (who waits in a line, a key another client holds).
import { Redlock, type RedlockOptions } from "../../src/index.ts";
import { simCluster, type SimNode } from "./sim-node.ts";
import { VirtualClock } from "./virtual-clock.ts";

/** The line of the resource `k`, the one most fair tests wait on. */
export const LINE_OF_K = "edge-redlock:line:k";

/**
 * A virtual clock, five simulated nodes and a Redlock over them (nodeTimeout 100 ms unless `options` says otherwise).
 * @example
 * const { clock, nodes, redlock } = simSetup({ retryCount: 0 });
 */
export function simSetup(options: RedlockOptions = {}) {
  const clock = new VirtualClock();
  const nodes = simCluster(clock);
  const redlock = new Redlock(nodes, { clock, nodeTimeout: 100, ...options });
  return { clock, nodes, redlock };
}

/** Per node, how many live waiters `line` holds. */
export const lineWaiters = (nodes: SimNode[], line = LINE_OF_K) => nodes.map((n) => n.liveWaiters(line).length);

/** Sets `key` on every node to another client's value for `ttl` ms. */
export const holdEverywhere = (nodes: SimNode[], key: string, ttl: number) => {
  for (const n of nodes) n.set(key, "someone-else", ttl);
};
