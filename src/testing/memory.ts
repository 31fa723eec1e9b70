/**
 * `edge-redlock/testing/memory`: in-process nodes for fast unit tests in any runtime (workerd, edge
 * runtimes, Deno, Bun, Node), with no Redis and no network. They run the library's scripts with Redis'
 * semantics, checked against real Redis by the project's conformance test.
 *
 * @example
 * ```ts
 * import { Redlock } from "edge-redlock";
 * import { memoryNodes } from "edge-redlock/testing/memory";
 *
 * const nodes = memoryNodes(5);
 * const redlock = new Redlock(nodes);
 * nodes[4].mode = "down"; // 4 of 5 still answer: locks are still granted
 * await redlock.using(["order:42"], 5_000, async () => {});
 * ```
 * @module
 */
import { MemoryNode } from "../memory/memory-node.ts";

export {
  MemoryNode,
  type MemoryClock,
  type MemoryMode,
  type MemoryRequest,
  type MemorySubscription,
} from "../memory/memory-node.ts";

/**
 * Options of {@link memoryNodes}.
 * @example
 * ```ts
 * const nodes = memoryNodes(5, { latencyMs: 2 });
 * ```
 */
export interface MemoryNodesOptions {
  /** Latency of every request in ms (default 0). Each node's `latency` can be changed later. */
  latencyMs?: number;
}

/**
 * `count` independent in-memory nodes (default 5), labelled `memory-1` … `memory-N`, for
 * `new Redlock(nodes)`. Each is a {@link MemoryNode}: set its `mode` (`down`, `hang`, `garbage`) or
 * `latency` to test how your code behaves when nodes fail.
 * @param count how many nodes (default 5)
 * @param options see {@link MemoryNodesOptions}
 * @returns the nodes, in order
 * @example
 * ```ts
 * import { LockAcquisitionError, Redlock } from "edge-redlock";
 * import { memoryNodes } from "edge-redlock/testing/memory";
 *
 * const nodes = memoryNodes(5);
 * const redlock = new Redlock(nodes, { retryCount: 0 });
 * const lock = await redlock.acquire(["k"], 5_000);
 * await redlock.acquire(["k"], 5_000).catch((e) => e instanceof LockAcquisitionError); // held
 * await lock.release();
 * ```
 */
export function memoryNodes(count = 5, options: MemoryNodesOptions = {}): MemoryNode[] {
  if (!Number.isInteger(count) || count < 1) throw new RangeError("memoryNodes: count must be a positive integer");
  return Array.from({ length: count }, (_, i) => {
    const node = new MemoryNode(`memory-${i + 1}`);
    node.latency = options.latencyMs ?? 0;
    return node;
  });
}
