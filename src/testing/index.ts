/**
 * `edge-redlock/testing`: local nodes for your tests and your dev server, on Node, Bun and Deno.
 * `startLocalNodes()` starts real redis-server processes behind an Upstash-compatible REST bridge;
 * `memoryNodes()` (also at `edge-redlock/testing/memory`, which runs in any runtime, workerd included) gives
 * in-process nodes for fast unit tests.
 *
 * @example
 * ```ts
 * import { Redlock } from "edge-redlock";
 * import { startLocalNodes } from "edge-redlock/testing";
 *
 * await using local = await startLocalNodes(); // five nodes; local.env holds their variables
 * const redlock = Redlock.fromEnv(local.env);
 * await local.faults[4].cut(); // node 5 drops every request: 4 of 5 still grant
 * await redlock.using(["report"], 5_000, async () => {});
 * ```
 * @module
 */
export {
  requireLocalNodes,
  startLocalNodes,
  type LocalNode,
  type LocalNodes,
  type RequireLocalNodesOptions,
  type StartLocalNodesOptions,
} from "./local-nodes.ts";
export { nodeFaults, type NodeFaults } from "./faults.ts";
export { checkLocalNodes, LocalNodesNotRunningError, type CheckLocalNodesOptions } from "../doctor/running.ts";
export {
  MemoryNode,
  memoryNodes,
  type MemoryClock,
  type MemoryMode,
  type MemoryNodesOptions,
  type MemoryRequest,
} from "./memory.ts";
