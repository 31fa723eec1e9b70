// A client's view of simulator nodes that notes, after each REQUEUE it ran, how many live waiters a queue then had.
import type { RedlockNode } from "../../src/index.ts";
import type { SimNode } from "./sim-node.ts";

/**
 * `nodes` as one client's nodes, and per node the number of live waiters in `queue` right after each of that
 * client's REQUEUE runs there (empty where none ran); `isRequeue` tells which runs re-queue (a reader's is a
 * read release with an entry life).
 * @example
 * const { own, afterRequeue } = watchRequeues(nodes, "edge-redlock:line:k");
 */
export function watchRequeues(
  nodes: SimNode[],
  queue: string,
  isRequeue: (script: string, args: readonly string[]) => boolean = (script) => script === "requeue",
): { own: RedlockNode[]; afterRequeue: number[][] } {
  const afterRequeue: number[][] = nodes.map(() => []);
  const own: RedlockNode[] = nodes.map((sim, i) => ({
    label: sim.label,
    run: (script, keys, args, signal) =>
      sim.run(script, keys, args, signal).then((reply) => {
        if (isRequeue(script.name, args)) afterRequeue[i].push(sim.liveWaiters(queue).length);
        return reply;
      }),
  }));
  return { own, afterRequeue };
}
